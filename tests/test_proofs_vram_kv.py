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


@pytest.mark.parametrize(
    "kw, field",
    [
        ({"batch": 0}, "batch"),
        ({"seq_len": 0}, "seq_len"),
        ({"steps": 0}, "steps"),
        ({"steps": 1}, "steps"),
        ({"batch": True}, "batch"),
        ({"seq_len": 2.5}, "seq_len"),
    ],
)
def test_vram_rejects_bad_shapes_instead_of_replacing_them(kw, field, monkeypatch):
    from aiworkbook.errors import SpecError
    from aiworkbook.proofs import vram

    monkeypatch.setattr(vram, "_train", lambda *a, **k: pytest.fail("trained on a bad shape"))
    with pytest.raises(SpecError) as exc:
        prove_vram("tiny-llama", device="cpu", quick=True, **kw)
    assert exc.value.field == field


@pytest.mark.parametrize(
    "kw, field",
    [
        ({"batches": (0,)}, "batches"),
        ({"contexts": ()}, "contexts"),
        ({"contexts": (64, -1)}, "contexts"),
        ({"new_tokens": 0}, "new_tokens"),
        ({"budget_bytes": 0}, "budget_bytes"),
    ],
)
def test_kv_rejects_bad_grids(kw, field):
    from aiworkbook.errors import SpecError

    with pytest.raises(SpecError) as exc:
        prove_kv("tiny-llama", device="cpu", quick=True, **kw)
    assert exc.value.field == field


def test_kv_proxy_is_decided_against_the_callers_budget():
    """The proxy used to be sized against the default budget while capacity used the caller's."""
    from aiworkbook.proofs import kv

    spec = load_model("tiny-llama")
    budget = 22 * 2**20  # the whole model at the largest quick point needs more; a shallower proxy fits
    big = kv._workload(spec, 2, 256, 8, "fp32")
    assert kv._estimate(spec, big, "cpu").memory.total > budget
    r = prove_kv("tiny-llama", device="cpu", quick=True, budget_bytes=budget)
    assert "proxy-model" in r.flags and r.inputs["ran"] != spec.name
    ran = next(
        spec.scaled(num_layers=n) for n in range(1, 5) if spec.scaled(num_layers=n).name == r.inputs["ran"]
    )
    assert kv._estimate(ran, big, "cpu").memory.total <= budget == r.details["capacity"]["budget_bytes"]
