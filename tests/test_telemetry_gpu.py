"""Contract tests on a real NVIDIA GPU (skipped without CUDA; the fake-NVML tests cover the logic)."""

from __future__ import annotations

import json
import time

import pytest

from aiworkbook.telemetry.gpu_metrics import FIELDS
from aiworkbook.telemetry.gpu_reader import GPUReader
from aiworkbook.telemetry.na import NA, is_number

pytestmark = pytest.mark.gpu


def test_real_gpu_metrics_are_values_or_marked_na():
    reader = GPUReader()
    assert reader.count() >= 1, reader.status()
    for row in reader.read_all():
        for f in FIELDS:
            v = row[f]
            assert isinstance(v, NA) or is_number(v) or isinstance(v, bool | list), (f, v)
        assert is_number(row["mem_total_bytes"]) and row["mem_total_bytes"] > 0


def test_real_environment_and_sampler_window():
    from aiworkbook.telemetry import environment, gpu_available
    from aiworkbook.telemetry.sampler import Sampler

    assert gpu_available()
    env = environment()
    json.dumps(env)
    assert env["gpus"][0]["name"] and env["gpu_status"].startswith(f"{len(env['gpus'])} NVIDIA GPU(s)")
    s = Sampler(interval=0.1)
    t0 = time.monotonic()
    with s:
        with s.phase("idle"):
            time.sleep(0.5)  # real time: a real GPU's samples, taken by the real sampler thread
    summary = s.window(since=t0).summary()
    assert summary["n_samples"] >= 4 and "gpu0.power_w" in summary["metrics"]


def test_real_gpu_api_shapes_the_fake_assumes():
    """What tests/fake_nvml.py mirrors, checked on the real driver: samples, events, MIG, memory v2."""
    from aiworkbook.telemetry import nvml_backend
    from aiworkbook.telemetry.events import EventTimeline
    from aiworkbook.telemetry.gpu_metrics import BENIGN_THROTTLE, THROTTLE_REASONS, is_throttled
    from aiworkbook.telemetry.na import is_na

    reader = GPUReader()
    assert reader.count() >= 1, reader.status()
    for i in range(reader.count()):
        ident = reader.identity(i)
        assert isinstance(ident["name"], str) and ident["uuid"].startswith(("GPU-", "MIG-"))
        assert is_na(ident["mig_mode"]) or ident["mig_mode"] in ("enabled", "disabled")
        row = reader.read(i)
        reasons = row["throttle_reasons"]  # decoded names of the clocks-event mask, or why not readable
        if is_na(reasons):
            assert reasons.reason, "an NA says why"
        else:
            known = set(THROTTLE_REASONS.values())
            assert all(r in known or r.startswith("bit_0x") for r in reasons), reasons
            assert is_throttled(reasons) == any(r not in BENIGN_THROTTLE for r in reasons)
        for kind in ("gpu_util", "power"):
            rows = reader.history(i, kind)
            assert is_na(rows) or all(isinstance(t, int) and isinstance(v, float) for t, v in rows)
            if not is_na(rows) and rows:  # nothing newer than the last sample: [] (NVML NotFound)
                again = reader.history(i, kind, since_us=rows[-1][0])
                if not is_na(again):  # only rows newer than the last one seen
                    assert all(t > rows[-1][0] for t, _ in again), again
    tl = EventTimeline(reader.handles())
    assert tl.status.startswith(("watching", "no device", "unavailable")), tl.status
    assert tl.poll() == [] or all("gpu" in e for e in tl.events)
    tl.close()
    assert nvml_backend.ensure() is None
