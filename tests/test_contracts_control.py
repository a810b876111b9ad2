"""The contracts the widgets stand on: sampler subscriptions, the proof lock, progress and cancel."""

from __future__ import annotations

import threading

import pytest
from fake_nvml import DATACENTER, FakeNVML

from aiworkbook.proofs import control, registry
from aiworkbook.telemetry.gpu_reader import GPUReader
from aiworkbook.telemetry.sampler import Sampler


@pytest.fixture
def fake():
    with FakeNVML([DATACENTER]) as f:
        yield f


def _manual(fake) -> Sampler:
    return Sampler(
        interval=1.0, gpu_reader=GPUReader(clock=fake.clock), host=False, events=False, clock=fake.clock
    )


def test_subscribers_get_batches_at_their_own_interval(fake):
    s = _manual(fake)
    fast, slow = [], []
    a = s.subscribe(lambda b: fast.append(len(b)), interval=0.5, start=False)
    b = s.subscribe(lambda b: slow.append(len(b)), interval=2.0, start=False)
    assert s.read_interval == 0.5 and s.interval == 1.0  # the reader follows the fastest consumer
    for _ in range(8):
        s.sample_now()
        fake.advance(0.5)
    assert sum(fast) == 8 and all(n == 1 for n in fast)  # every sample, one at a time
    assert sum(slow) <= 8 and len(slow) == 2 and slow[1] == 4  # batched every 2 s
    a.close()
    assert s.read_interval == 1.0 and s.subscribers() == [b]
    b.close()
    b.close()  # idempotent
    assert s.subscribers() == []


def test_a_failing_subscriber_is_counted_and_others_still_served(fake):
    s = _manual(fake)
    got = []
    bad = s.subscribe(lambda b: 1 / 0, start=False)
    s.subscribe(lambda b: got.extend(b), start=False)
    s.sample_now()
    assert bad.errors == 1 and "ZeroDivisionError" in bad.last_error and len(got) == 1


def test_subscribing_starts_the_sampler_and_the_last_one_out_stops_it(fake):
    s = _manual(fake)
    sub = s.subscribe(lambda b: None)
    assert s.running
    sub.close()
    assert not s.running


def test_bad_subscription_values_name_the_field(fake):
    s = _manual(fake)
    with pytest.raises(ValueError, match="callback"):
        s.subscribe("not callable", start=False)
    with pytest.raises(ValueError, match="interval"):
        s.subscribe(lambda b: None, interval=0.0, start=False)


def test_one_proof_at_a_time_and_torch_state_restored():
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    with control.exclusive("first"):
        assert control.running() == "first"
        torch.set_num_threads(1)
        with pytest.raises(control.ProofBusy, match="a proof is running: first"):
            with control.exclusive("second"):
                pass
    assert control.running() is None and torch.get_num_threads() == before


def test_control_reports_progress_and_cancels():
    seen = []
    ev = threading.Event()
    c = control.Control(progress=lambda d, t, m: seen.append((d, t, m)), cancel=ev)
    c.step(1, 3, "one")
    ev.set()
    with pytest.raises(control.Cancelled, match="two"):
        c.step(2, 3, "two")
    assert seen == [(1, 3, "one"), (2, 3, "two")]
    broken = control.Control(progress=lambda d, t, m: 1 / 0)
    broken.step(1, 1, "a viewer's broken callback does not stop the proof")


def test_registry_lists_proofs_with_inputs_and_refuses_unknown_names():
    names = registry.names()
    assert {"roofline", "vram", "kv"} <= set(names)
    info = registry.get("vram")
    assert info.to_dict()["inputs"][0]["name"] == "model"
    with pytest.raises(ValueError, match="proof.*allowed: roofline"):
        registry.get("nope")
