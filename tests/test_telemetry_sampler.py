"""The shared sampler, ring buffer, phases and window summaries (fake NVML, no GPU needed)."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest
from fake_nvml import CONSUMER, DATACENTER, FakeNVML

from aiworkbook.telemetry import get_sampler
from aiworkbook.telemetry.gpu_reader import GPUReader
from aiworkbook.telemetry.na import NA
from aiworkbook.telemetry.ring import Ring
from aiworkbook.telemetry.sample import Sample
from aiworkbook.telemetry.sampler import Sampler, reset_shared_sampler
from aiworkbook.telemetry.summary import Window


@pytest.fixture
def fake():
    with FakeNVML([DATACENTER, CONSUMER]) as f:
        yield f


def _manual(fake, **kw) -> Sampler:
    return Sampler(gpu_reader=GPUReader(clock=fake.clock), host=False, events=False, clock=fake.clock, **kw)


class _Counted:
    """A reader that counts the sampler thread's reads: tests wait for ticks, not for fixed times."""

    def __init__(self, inner) -> None:
        self.inner, self.reads, self._cond = inner, 0, threading.Condition()

    def __getattr__(self, name):  # source, handles, ... of the wrapped reader
        return getattr(self.inner, name)

    def read_all(self):
        with self._cond:
            self.reads += 1
            self._cond.notify_all()
        return self.inner.read_all()

    def wait_reads(self, n: int, timeout: float = 10.0) -> bool:
        """True once `n` reads have started (bounded: False after `timeout` s)."""
        with self._cond:
            return self._cond.wait_for(lambda: self.reads >= n, timeout)


def test_ring_is_bounded_and_counts_drops():
    r: Ring[int] = Ring(3)
    for i in range(5):
        r.append(i)
    assert r.items() == [2, 3, 4] and r.dropped == 2 and r.last() == 4
    assert r.items(lambda x: x % 2 == 0) == [2, 4]
    with pytest.raises(ValueError, match="capacity"):
        Ring(0)


def test_interval_is_validated():
    with pytest.raises(ValueError, match="interval"):
        Sampler(interval=0.05, gpu_reader=object(), host=False)
    with pytest.raises(ValueError, match="interval"):
        Sampler(interval="fast", gpu_reader=object(), host=False)


def test_phases_tag_samples_and_windows_filter(fake):
    s = _manual(fake)
    s.sample_now()
    fake.advance(1)
    with s.phase("prefill"):
        s.sample_now()
        fake.advance(1)
        with s.phase("decode"):
            s.sample_now()
            fake.advance(1)
        s.sample_now()
    fake.advance(1)
    s.sample_now()
    assert [x.phase for x in s.samples()] == [None, "prefill", "decode", "prefill", None]
    assert s.window(phase="prefill").summary()["n_samples"] == 2
    assert s.window(since=102.0).summary()["phases"] == ["decode", "prefill"]
    with pytest.raises(ValueError, match="phase"):
        with s.phase(""):
            pass


def test_summary_stats_energy_and_throttle_share(fake):
    s = _manual(fake)
    powers = [300_000, 500_000, 400_000, 600_000]
    masks = [0x4, 0x0, 0x4 | 0x40, 0x0]
    t0 = fake.now
    for p, m in zip(powers, masks, strict=True):
        fake.profiles[0]["power_mw"] = p
        fake.profiles[0]["throttle"] = m
        s.sample_now()
        fake.advance(0.5)  # energy grows at the power read in this sample
    summary = s.window(since=t0).summary()
    json.dumps(summary)
    watts = np.array(powers) / 1000
    st = summary["metrics"]["gpu0.power_w"]
    assert st["mean"] == pytest.approx(watts.mean()) and st["max"] == 600.0 and st["min"] == 300.0
    assert st["p95"] == pytest.approx(np.percentile(watts, 95)) and st["n"] == 4
    # counter: energy added between the first and last sample = (300 + 500 + 400) W x 0.5 s
    assert summary["energy_j"]["gpu0"] == pytest.approx(600.0)
    assert summary["energy_method"]["gpu0"] == "energy counter"
    assert summary["throttle_share"]["gpu0"] == {"hw_thermal_slowdown": 0.25, "sw_power_cap": 0.5}
    assert summary["throttle_share"]["gpu1"] == {"gpu_idle": 1.0}
    assert "gpu0.energy_mj" not in summary["metrics"]


def test_energy_falls_back_to_power_integral():
    rows = [
        Sample(
            t=float(t), wall=float(t), gpus=({"index": 0, "power_w": p, "energy_mj": NA("not supported")},)
        )
        for t, p in [(0, 100.0), (1, 300.0), (3, 300.0)]
    ]
    w = Window(rows)
    assert w.energy_j()["gpu0"] == (pytest.approx(200.0 + 600.0), "power integral")
    assert w.summary()["unavailable"] == {}
    one = Window(rows[:1]).summary()
    assert one["energy_j"]["gpu0"] == {"na": "fewer than 2 samples"}


def test_unavailable_metrics_are_reported_with_reason(fake):
    s = _manual(fake)
    s.sample_now()
    un = s.window().summary()["unavailable"]
    assert un["gpu1.ecc_volatile_corrected"] == "not supported"
    assert "gpu0.ecc_volatile_corrected" not in un


def test_background_thread_start_stop_idempotent_and_phase_boundaries():
    with FakeNVML([DATACENTER]):
        reader = _Counted(GPUReader())
        s = Sampler(interval=0.1, gpu_reader=reader, host=True, events=True)
        s.start()
        s.start()
        assert s.running
        assert reader.wait_reads(2)  # two ticks of the thread
        with s.phase("load"):
            pass  # too short for a tick: the entry/exit samples still tag it
        s.stop()
        s.stop()
        assert not s.running
        n = len(s.samples())
        assert n >= 3 and "load" in s.window().phases()
        # really stopped: stop() joined the only worker, so nothing can add a sample any more
        assert [t.name for t in threading.enumerate()].count("aiworkbook-telemetry") == 0
        reads = reader.reads
        s.sample_now()  # the caller's own sample still works after stop
        assert len(s.samples()) == n + 1 and reader.reads == reads + 1


def test_sampling_survives_a_lost_gpu_and_a_failing_reader(fake):
    reader = _Counted(GPUReader())
    s = Sampler(interval=0.1, gpu_reader=reader, host=False, events=False)
    s.start()
    assert reader.wait_reads(1)
    fake.lose(0)
    assert reader.wait_reads(reader.reads + 2)  # at least one whole read began after the loss
    s.stop()
    last = s.latest()
    assert last.gpus[0]["power_w"] == NA("GPU is lost") and last.gpus[1]["power_w"] == 412.0

    class Broken:
        source = "broken"

        def read_all(self):
            raise RuntimeError("reader bug")

    broken = _Counted(Broken())
    b = Sampler(interval=0.1, gpu_reader=broken, host=False, events=False)
    b.start()
    assert broken.wait_reads(2)
    b.stop()  # joins the thread: both failed reads are counted by now
    assert b.errors >= 2 and "reader bug" in b.last_error


def test_events_reach_the_window(fake):
    s = Sampler(gpu_reader=GPUReader(), host=False, events=True)
    s.sample_now()
    fake.inject_xid(1, 79)
    s.sample_now()
    ev = s.window().summary()["events"]
    assert [(e["gpu"], e["xid"]) for e in ev] == [(1, 79)]


def test_subsecond_history_is_collected(fake):
    s = Sampler(gpu_reader=GPUReader(clock=fake.clock), host=False, events=False, hires=True)
    s.sample_now()
    fake.advance(0.5)
    s.sample_now()
    rows = s.hires[(0, "power")].items()
    stamps = [t for t, _ in rows]
    assert stamps == sorted(set(stamps)) and len(rows) == 15  # 10 + 5 new, no duplicates


def test_get_sampler_is_shared():
    reset_shared_sampler()
    try:
        a = get_sampler()
        b = get_sampler(interval=0.5)
        assert a is b and a.interval == 0.5 and not a.running
    finally:
        reset_shared_sampler()


def test_leaving_a_phase_removes_the_innermost_entry_of_that_name(fake):
    s = _manual(fake)
    with s.phase("step"):
        with s.phase("decode"):
            with s.phase("step"):
                assert s.current_phase == "step"
            assert s.current_phase == "decode"  # was "step": the outer entry had been removed
        assert s.current_phase == "step"
    assert s.current_phase is None


def test_events_use_the_samplers_clock_and_hires_rings_are_built_once(fake):
    s = Sampler(gpu_reader=GPUReader(clock=fake.clock), host=False, clock=fake.clock, hires=True)
    s.sample_now()
    rings = dict(s.hires)
    assert rings
    fake.inject_xid(0, 79)
    fake.advance(1)
    s.sample_now()
    assert all(s.hires[k] is rings[k] for k in rings)
    (event,) = [e for e in s.events if e.get("xid") == 79]
    assert event["t"] == fake.clock()  # stamped on the sampler's time base, so windows see it
    assert s.window(since=fake.clock() - 0.5).summary()["events"]
