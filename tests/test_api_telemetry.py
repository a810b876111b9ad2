"""The sampler for many viewers: column storage answering exactly as the row-based reference, NA that
formats and converts, phases per consumer."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from fake_nvml import CONSUMER, DATACENTER, FakeNVML

from aiworkbook.telemetry.columns import ColumnWindow, SampleRing
from aiworkbook.telemetry.gpu_reader import GPUReader
from aiworkbook.telemetry.na import NA
from aiworkbook.telemetry.sample import Sample
from aiworkbook.telemetry.sampler import Sampler
from aiworkbook.telemetry.summary import Window
from aiworkbook.telemetry.synthetic import synthetic_trace


@pytest.fixture
def fake():
    with FakeNVML([DATACENTER, CONSUMER]) as f:
        yield f


def _manual(fake) -> Sampler:
    return Sampler(
        interval=1.0, gpu_reader=GPUReader(clock=fake.clock), host=True, events=False, clock=fake.clock
    )


def _both(ring: SampleRing, since=None, until=None, phase=None):
    idx = ring.columns.rows(since, until, phase)
    rows = [
        s
        for s in ring.items()
        if (since is None or s.t >= since)
        and (until is None or s.t <= until)
        and (phase is None or s.phase == phase)
    ]
    return ColumnWindow(ring.columns, idx, [], lambda: rows), Window(rows)


def _odd_samples() -> list[Sample]:
    """Two GPUs that come and go, NA values, a metric NA in one window and numeric in another, bools,
    strings, process lists, throttle reasons readable or not, a counter that resets."""
    out = []
    for k in range(40):
        g0 = {
            "index": 0,
            "power_w": 100.0 + k,
            "energy_mj": 1000 * k if k != 20 else 5,  # a reset: falls back to the power integral
            "util_gpu_pct": NA("not supported") if k < 10 else float(k % 7),
            "throttle_reasons": ["sw_power_cap"] if k % 3 == 0 else ([] if k % 3 == 1 else NA("denied")),
            "processes": [{"pid": 1}] * (k % 4),
            "mig_mode": k % 2 == 0,
            "pstate": f"P{k % 3}",
        }
        gpus = [g0] if k % 5 else [g0, {"index": 1, "power_w": NA("gone"), "temp_c": 40 + k}]
        host = {"cpu_pct": float(k), "cpu_per_core_pct": [1.0, 2.0], "ram_used_bytes": 10**9 + k}
        phase = ("load", "prefill", None, "decode")[k // 10]
        out.append(Sample(t=100.0 + k, wall=1e9 + k, phase=phase, gpus=tuple(gpus), host=host))
    return out


@pytest.mark.parametrize("source", ["odd", "synthetic"])
def test_columns_answer_exactly_as_the_row_reference(source):
    samples = _odd_samples() if source == "odd" else synthetic_trace(seconds=300, interval=1.0)[1]
    ring = SampleRing(capacity=len(samples) - 7)  # the oldest fall off, in both
    for s in samples:
        ring.append(s)
    t0 = samples[0].t
    for since, until, phase in [(None, None, None), (t0 + 15, None, None), (t0 + 12, t0 + 33, None)] + [
        (None, None, p) for p in ("load", "prefill", "decode", "idle", "nosuch")
    ]:
        col, row = _both(ring, since, until, phase)
        assert col.summary() == row.summary(), (since, until, phase)
        assert len(col) == len(row) and col.phases() == row.phases()
        a, b = col.to_dataframe(), row.to_dataframe()
        assert list(a.columns) == list(b.columns)
        pd.testing.assert_frame_equal(a, b, check_dtype=False)


def test_the_sampler_window_is_columnar_and_matches_its_rows(fake):
    s = _manual(fake)
    with s.phase("warm"):
        for _ in range(5):
            s.sample_now()
            fake.advance(0.5)
    for _ in range(5):
        s.sample_now()
        fake.advance(0.5)
    w = s.window()
    assert isinstance(w, ColumnWindow)
    assert w.summary() == s.row_window().summary()
    assert s.window(phase="warm").summary() == s.row_window(phase="warm").summary()
    assert len(w.samples) == 10 and w.samples[0].phase == "warm"  # Sample objects still there on demand
    s.ring.clear()
    assert len(s.window()) == 0 and s.window().summary()["n_samples"] == 0


def test_na_formats_as_na_and_converts_to_nan():
    v = NA("not supported on MIG")
    assert f"{v:.1f}" == "n/a" and f"{v:>7.2f}" == "    n/a" and f"{v:<5}" == "n/a  "
    assert f"{v}" == "n/a (not supported on MIG)"
    assert math.isnan(float(v))
    assert np.isnan(np.asarray([1.0, v], dtype=float)[1])


def test_phases_are_per_consumer(fake):
    s = _manual(fake)
    a_got, b_got = [], []
    a = s.subscribe(a_got.extend, interval=0.5, start=False)
    b = s.subscribe(b_got.extend, interval=0.5, start=False)
    with a.phase("prefill"):
        s.sample_now()
        fake.advance(0.5)
        s.sample_now()
        fake.advance(0.5)
    s.sample_now()
    assert [x.phase for x in a_got] == ["prefill", "prefill", None]
    assert [x.phase for x in b_got] == [None, None, None]  # the other viewer's phase is not ours
    assert s.current_phase is None and s.latest().phase is None  # nor the sampler's
    assert a.window("prefill").summary()["n_samples"] == 2
    with pytest.raises(ValueError, match="phase"):
        b.window("prefill")
    a.close()
    b.close()


def test_columns_stay_exact_when_read_between_appends():
    samples = _odd_samples()
    ring = SampleRing(capacity=25)
    for k, s in enumerate(samples):
        ring.append(s)
        if k % 7 == 0:  # a dashboard reading now and then: each read moves only the new samples
            col, row = _both(ring)
            assert col.summary() == row.summary()
    col, row = _both(ring)
    assert col.summary() == row.summary() and len(col) == 25
    pd.testing.assert_frame_equal(col.to_dataframe(), row.to_dataframe(), check_dtype=False)
