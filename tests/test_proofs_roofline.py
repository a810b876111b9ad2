"""Roofline proof on the CPU: cache size, bandwidth conventions, calibrated spec and chart data."""

from __future__ import annotations

import pytest

from aiworkbook.hostfacts import llc_bytes
from aiworkbook.proofs.roofline import prove_roofline, roofline_chart_data, workload_point
from aiworkbook.specs import GPUSpec, get_gpu, load_model


def test_llc_is_read_from_the_machine_when_not_injected(monkeypatch):
    monkeypatch.delenv("AIWORKBOOK_HOST", raising=False)
    size, source = llc_bytes()
    assert size >= 2**20 and source and "AIWORKBOOK_HOST" not in source


@pytest.mark.parametrize("llc", [8 * 2**20, 512 * 2**20])
def test_the_buffer_follows_the_cache_it_is_given(monkeypatch, llc):
    monkeypatch.setenv("AIWORKBOOK_HOST", f"llc={llc // 2**20}MiB")
    from aiworkbook.proofs.inputs import RooflineInputs
    from aiworkbook.proofs.roofline import plan

    p = plan(RooflineInputs(model="tiny-llama", device="cpu", quick=True))
    assert p.sizes["buffer_bytes"] == max(4 * llc, 256 * 2**20) and p.sizes["cache_bytes"] == llc


def test_roofline_quick_cpu_small_buffer_is_flagged(monkeypatch):
    monkeypatch.setenv("AIWORKBOOK_HOST", "llc=32MiB")  # 4 × 32 MiB is above the 32 MiB buffer
    r = prove_roofline("tiny-llama", device="cpu", quick=True, buffer_bytes=32 * 2**20)
    bw = r.details["ceilings"]["bandwidth"]
    assert bw["buffer_bytes"] == 32 * 2**20
    assert "llc-resident" in r.flags
    assert r.verdict == "info" and r.measured == pytest.approx(bw["read_bps"])
    assert bw["copy_bps"] > 1e8 and bw["read_bps"] > 1e8
    assert len(r.samples) == r.stats.n == 5
    cal = GPUSpec.model_validate(r.details["calibrated_spec"])
    assert cal.name == "CPU (measured)" and cal.measured
    assert cal.memory_bandwidth_bps == pytest.approx(bw["read_bps"])
    assert cal.peak_flops("fp32") == pytest.approx(r.details["ceilings"]["matmul"]["fp32"]["ceiling_flops"])
    assert r.details["chart"][-1]["kind"] == "workload"


def test_chart_rows_follow_the_roof():
    spec = get_gpu("H100-SXM")
    rows = roofline_chart_data(spec, {"intensity": 10.0}, dtypes=["bf16"])
    for row in rows[:-1]:
        assert row["attainable_flops"] == pytest.approx(
            min(spec.peak_flops("bf16"), spec.memory_bandwidth_bps * row["intensity"])
        )
    assert rows[-1]["bound"] == "memory"  # 10 FLOP/B is far left of H100's ridge (~295)


def test_workload_point_decode_intensity():
    s = load_model("llama-3-8b")
    p = workload_point(s, batch=1, context=1, weights_dtype="bf16", kv_dtype="bf16")
    # batch 1 decode reads every bf16 weight once for ~2 FLOPs each: intensity ~1 FLOP/B
    assert p["intensity"] == pytest.approx(1.0, rel=0.02)


def test_bad_model_or_shape_fails_before_anything_is_measured(monkeypatch):
    from aiworkbook.errors import SpecError
    from aiworkbook.proofs import roofline as RL

    monkeypatch.setattr(RL, "bandwidth", lambda *a, **k: pytest.fail("measured before loading the model"))
    with pytest.raises(SpecError):
        prove_roofline("no-such-model", device="cpu", quick=True)
    with pytest.raises(SpecError, match="batch"):
        prove_roofline("tiny-llama", device="cpu", quick=True, batch=0)


def test_workload_point_is_sizings_decode_arithmetic_also_for_moe():
    """Mixtral at batch 1 touches 2 of its 8 experts: the step reads ~the active weights for ~2 FLOPs
    each (~1 FLOP/B). The chart point used to divide by every expert's bytes (0.29 FLOP/B)."""
    from aiworkbook.sizing import Workload
    from aiworkbook.sizing.roofline import decode

    s = load_model("mixtral-8x7b")
    p = workload_point(s, batch=1, context=1)
    assert p["intensity"] == pytest.approx(1.0, rel=0.05)
    w = Workload(mode="infer", seq_len=1, block_size=1)
    d = decode(s, w, get_gpu("H100-SXM"), batch=1, context=1)
    assert p["flops"] == pytest.approx(float(d["flops"]))
    assert p["bytes"] == pytest.approx(float(d["weight_bytes_read"] + d["kv_bytes_read"]))
