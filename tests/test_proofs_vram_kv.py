"""VRAM and KV-cache proofs on the CPU at --quick size, against independent counts."""

from __future__ import annotations

import pytest

from aiworkbook.proofs.device import WouldNotFit
from aiworkbook.proofs.kv import prove_kv
from aiworkbook.proofs.result import ProofResult
from aiworkbook.proofs.vram import prove_vram
from aiworkbook.specs import load_model


def _rows(r):
    return {row["component"]: row for row in r.details["components"]}


@pytest.mark.parametrize("name", ["tiny-llama", "tiny-gpt2"])
def test_vram_quick_cpu_within_tolerance(name, tmp_path):
    spec = load_model(name)
    r = prove_vram(name, device="cpu", quick=True, batch=2, seq_len=64)
    assert r.device == "cpu" and "accounted" in r.flags
    rows = _rows(r)
    assert rows["weights"]["measured"] == 4 * spec.params
    assert rows["gradients"]["measured"] == 4 * spec.params
    n_tensors = r.details["optimizer_state"]["param_tensors"]
    assert rows["optimizer (+ master weights)"]["measured"] == 8 * spec.params + 4 * n_tensors
    act = rows["activations + logits"]
    assert act["ratio"] == pytest.approx(1.0, abs=0.10)  # the accuracy bar for activations
    assert r.verdict == "pass" and abs(r.ratio - 1) <= 0.10
    assert r.details["rule_18_bytes_per_param"]["bytes"] == 18 * spec.params
    path = tmp_path / "vram.json"
    r.save(path)
    assert ProofResult.load(path).to_dict() == r.to_dict()


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
@pytest.mark.parametrize("precision", ["fp32", "bf16", "bf16-mixed"])
@pytest.mark.parametrize("name", ["tiny-llama", "tiny-gpt2"])
def test_saved_bytes_match_the_estimate_in_every_precision(name, precision, attention):
    """Pure 16-bit, fp32 and AMP (fp32 weights under autocast), eager and SDPA: the kit's measured
    activations + logits against the sizing engine's, far tighter than the proof's ±10 %."""
    r = prove_vram(
        name, device="cpu", quick=True, batch=2, seq_len=64, precision=precision, attention=attention
    )
    assert _rows(r)["activations + logits"]["ratio"] == pytest.approx(1.0, abs=0.02)


def test_vram_full_checkpointing_counts_inputs_and_one_layer():
    r = prove_vram("tiny-llama", device="cpu", quick=True, checkpointing="full", seq_len=64)
    plain = prove_vram("tiny-llama", device="cpu", quick=True, seq_len=64)
    assert _rows(r)["activations"]["measured"] < _rows(plain)["activations"]["measured"]
    assert r.verdict == "pass"


def test_vram_refuses_before_allocating():
    with pytest.raises(WouldNotFit, match="does not fit"):
        prove_vram("tiny-llama", device="cpu", quick=True, budget_bytes=1_000_000)


def test_vram_uses_a_proxy_when_the_model_would_not_fit():
    spec = load_model("tiny-llama")
    r = prove_vram("tiny-llama", device="cpu", quick=True, seq_len=32, budget_bytes=60_000_000)
    assert "proxy-model" in r.flags and r.inputs["ran"] != spec.name
    assert r.inputs["params"] < spec.params and r.verdict == "pass"


def test_vram_oom_is_caught_and_reported():
    huge = load_model("tiny-llama").scaled(vocab_size=2**40, name="absurd-vocab")
    r = prove_vram(huge, device="cpu", quick=True, seq_len=8, check_fit=False)
    assert r.verdict == "does-not-fit" and r.measured is None
    assert any("does not fit at building absurd-vocab" in n for n in r.notes)


def test_kv_quick_cpu_matches_independent_count(tmp_path):
    spec = load_model("tiny-llama")
    r = prove_kv("tiny-llama", device="cpu", quick=True, budget_bytes=64 * 2**20)
    per_token = 2 * spec.num_layers * spec.num_kv_heads * spec.head_dim * 4  # fp32 K and V, every layer
    new = r.inputs["new_tokens"]
    assert len(r.details["grid"]) == 4
    for g in r.details["grid"]:
        assert g["tokens_cached"] == g["context"] + new
        assert g["kv_measured"] == per_token * g["batch"] * (g["context"] + new)
        assert g["kv_ratio"] == pytest.approx(1.0, abs=0.01)
    cap = r.details["capacity"]
    assert cap["measured"] >= 1 and cap["ratio"] == pytest.approx(1.0, abs=0.10)
    assert set(r.details["latency_climb"]) == {"1", "2"}
    assert r.verdict == "pass"
    r.save(tmp_path / "kv.json")
    assert ProofResult.load(tmp_path / "kv.json").details["capacity"] == cap
