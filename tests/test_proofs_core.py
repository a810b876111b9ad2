"""Measurement core: statistics, ProofResult round-trip, timing, device choice, refusal and OOM survival."""

from __future__ import annotations

import json

import numpy as np
import pytest

from aiworkbook.errors import SpecError
from aiworkbook.proofs.device import (
    DoesNotFit,
    WouldNotFit,
    check_fits,
    cuda_available,
    oom_guard,
    resolve_device,
)
from aiworkbook.proofs.flags import CPU_FALLBACK, FLAGS
from aiworkbook.proofs.result import KIND, SCHEMA_VERSION, ProofResult, verdict_for
from aiworkbook.proofs.stats import summarize
from aiworkbook.proofs.timing import cpu_threads, time_trials


def test_summarize_matches_numpy_and_ci_brackets_median():
    rng = np.random.default_rng(1)
    x = rng.lognormal(0, 0.3, size=200)
    st = summarize(x)
    assert st.n == 200
    assert st.median == pytest.approx(np.median(x))
    q25, q75 = np.quantile(x, [0.25, 0.75])
    assert st.iqr == pytest.approx(q75 - q25)
    assert st.p5 == pytest.approx(np.quantile(x, 0.05)) and st.p95 == pytest.approx(np.quantile(x, 0.95))
    assert st.ci_low <= st.median <= st.ci_high
    assert st.ci_high - st.ci_low < st.iqr  # the median is known more tightly than the spread of samples


def test_summarize_rejects_bad_input():
    with pytest.raises(SpecError, match="samples"):
        summarize([])
    with pytest.raises(SpecError, match="finite"):
        summarize([1.0, float("nan")])


def test_verdict_and_ratio():
    assert verdict_for(105, 100, 0.10) == "pass"
    assert verdict_for(111, 100, 0.10) == "fail"
    assert verdict_for(5, None, 0.10) == "info"
    r = ProofResult(proof="x", device="cpu", inputs={}, measured=90.0, unit="B", predicted=100.0)
    assert r.ratio == pytest.approx(0.9) and r.verdict == "pass"


def test_result_json_round_trip(tmp_path):
    st = summarize([1.0, 2.0, 3.0, 4.0])
    r = ProofResult(
        proof="vram",
        device="cpu",
        inputs={"model": "tiny-llama", "batch": 2},
        measured=123.0,
        unit="B",
        predicted=120.0,
        predicted_label="total",
        samples=[1.0, 2.0, 3.0, 4.0],
        stats=st,
        flags=[CPU_FALLBACK],
        environment={"host": {"cores": 2}},
        details={"rows": [{"a": 1}]},
        notes=["n"],
    )
    path = tmp_path / "r.json"
    r.save(path)
    doc = json.loads(path.read_text())
    assert doc["kind"] == KIND and doc["schema_version"] == SCHEMA_VERSION
    back = ProofResult.load(path)
    assert back.to_dict() == r.to_dict()
    assert back.stats == st


def test_result_rejects_unknown_flag_verdict_and_wrong_kind(tmp_path):
    with pytest.raises(SpecError, match="flags"):
        ProofResult(proof="x", device="cpu", inputs={}, measured=1.0, unit="B", flags=["made-up"])
    with pytest.raises(SpecError, match="verdict"):
        ProofResult(proof="x", device="cpu", inputs={}, measured=1.0, unit="B", verdict="great")
    p = tmp_path / "other.json"
    p.write_text(json.dumps({"kind": "something-else", "schema_version": 1}))
    with pytest.raises(SpecError, match="kind"):
        ProofResult.load(p)
    p.write_text(
        json.dumps({"kind": KIND, "schema_version": SCHEMA_VERSION + 1, "proof": "x", "device": "cpu"})
    )
    with pytest.raises(SpecError, match="schema_version"):
        ProofResult.load(p)
    assert "cpu-fallback" in FLAGS


def test_timing_warns_on_wide_spread_and_sets_threads():
    now = [0.0]  # an injected clock: each call of fn "takes" the next delay, no sleeping
    delays = iter([0.0, 0.0] + [0.001, 0.006] * 5)  # 2 warm-ups, then alternating 1 ms / 6 ms trials

    def fn():
        now[0] += next(delays)

    t = time_trials(fn, warmup=2, trials=10, threads=1, clock=lambda: now[0])
    assert t.threads == 1 and t.method == "perf_counter" and t.stats.n == 10
    assert sorted(t.samples) == pytest.approx([0.001] * 5 + [0.006] * 5)  # warm-ups not timed
    assert t.warnings and "IQR/median" in t.warnings[0]

    def steady_fn():
        now[0] += 0.002

    steady = time_trials(steady_fn, warmup=1, trials=5, threads=1, clock=lambda: now[0])
    assert steady.median == pytest.approx(0.002) and not steady.warnings


def test_cpu_threads_restores():
    import torch

    before = torch.get_num_threads()
    with cpu_threads(1) as n:
        assert n == 1 == torch.get_num_threads()
    assert torch.get_num_threads() == before
    with pytest.raises(SpecError):
        with cpu_threads(0):
            pass


def test_device_auto_and_bad_names():
    c = resolve_device("auto")
    if cuda_available():
        assert c.device == "cuda" and not c.flags
    else:
        assert c.device == "cpu" and CPU_FALLBACK in c.flags and "no CUDA" in c.reason
        with pytest.raises(SpecError, match="device"):
            resolve_device("cuda")
    assert resolve_device("cpu").flags == ()
    with pytest.raises(SpecError, match="device"):
        resolve_device("tpu")


def test_refusal_before_allocating():
    with pytest.raises(WouldNotFit, match="does not fit"):
        check_fits(10 * 2**30, "cpu", what="test", budget_bytes=2**30)
    assert check_fits(2**20, "cpu", what="test", budget_bytes=2**30) == 2**30


def test_real_cpu_oom_is_caught_and_process_survives():
    import torch

    with pytest.raises(DoesNotFit, match="does not fit at huge buffer"):
        with oom_guard("huge buffer", "cpu"):
            torch.empty(2**50, dtype=torch.uint8)  # 1 PiB: the allocator refuses
    assert torch.ones(4).sum().item() == 4  # still alive and allocating
    with pytest.raises(KeyError):  # anything else passes through untouched
        with oom_guard("x", "cpu"):
            raise KeyError("not an OOM")
