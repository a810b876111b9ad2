"""proofs.gcpause: the heap that existed before a proof is frozen out of the collector for the proof,
a measured window runs without automatic collection, and the pauses left are counted and reported.

This module doubles as a tiny registered proof (plan/run below) that makes garbage cycles, so the
registry's wrapping is tested without torch."""

from __future__ import annotations

import gc

import pytest

from aiworkbook.proofs import registry
from aiworkbook.proofs.gcpause import GcPauses, measuring, quiet_gc
from aiworkbook.proofs.registry import Plan, ProofInfo
from aiworkbook.proofs.result import ProofResult

NAME = "gc-test"
SEEN: dict[str, object] = {}


def plan(_inputs: object) -> Plan:
    return Plan(NAME, "cpu", None, "", "B", {}, True, 0.1)


def run(_inputs: object, *, control) -> ProofResult:
    SEEN["frozen_inside"] = gc.get_freeze_count()
    for _ in range(20_000):  # reference cycles: enough allocations for the collector to run on its own
        a: list = []
        a.append(a)
    with measuring():
        SEEN["enabled_in_window"] = gc.isenabled()
    return ProofResult(NAME, "cpu", {}, None, "B")


@pytest.fixture
def gc_proof():
    registry.register(ProofInfo(NAME, "GC test proof", "the registry's collector handling", __name__, ()))
    yield
    registry._REGISTRY.pop(NAME, None)


def test_the_registry_freezes_the_heap_for_a_proof_and_reports_the_pauses(gc_proof):
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    callbacks = list(gc.callbacks)
    r = registry.run(NAME)
    assert SEEN["frozen_inside"] > 1000  # the test session's heap, out of the proof's collections
    assert SEEN["enabled_in_window"] is False
    g = r.environment["gc"]
    assert g["frozen_objects"] >= SEEN["frozen_inside"]  # frozen objects freed by refcount leave the count
    assert g["collections"]["gen0"] > 0 and g["pause_s"] > 0 and g["windows_without_gc"] == 1
    # everything as it was: nothing left frozen, the collector on, no callback left behind
    assert gc.get_freeze_count() == 0 and gc.isenabled() and gc.callbacks == callbacks


def test_a_window_collects_first_without_counting_it_and_restores_the_collector():
    with quiet_gc() as (pauses, _frozen):
        with measuring():
            assert not gc.isenabled()
        assert gc.isenabled() and sum(pauses.counts) == 0  # its own collection is not a pause
        assert pauses.windows == 1
    gc.disable()
    try:
        with measuring():
            pass
        assert not gc.isenabled()  # off before, off after
    finally:
        gc.enable()


def test_the_note_names_long_pauses_unless_the_proof_measured_in_windows():
    now = [100.0]
    p = GcPauses(clock=lambda: now[0])
    p.callback("start", {})
    now[0] += 0.02  # a 20 ms full collection, on the injected clock
    p.callback("stop", {"generation": 2})
    assert p.counts == [0, 0, 1] and p.longest_s == pytest.approx(0.02)
    note = p.note()
    assert note is not None and "1 times" in note and "1 full" in note
    p.windows = 1
    assert p.note() is None  # its pauses fell between the windows
    short = GcPauses()
    short.callback("start", {})
    short.callback("stop", {"generation": 0})
    assert short.note() is None


def test_a_serving_load_point_runs_without_automatic_collection(monkeypatch):
    from aiworkbook.proofs.control import Control
    from aiworkbook.serving import proof
    from aiworkbook.serving.client import Load, Target

    seen = []

    def fake_load(target, load, **kw):
        seen.append(gc.isenabled())
        return []

    monkeypatch.setattr(proof, "run_load_sync", fake_load)
    s = proof.ServingSettings.from_inputs({"quick": True})
    proof._measure(Target("http://127.0.0.1:9", "m"), Load(concurrency=1), Control(), s, "load 1")
    assert seen == [False] and gc.isenabled()
