"""Proofs a widget can drive: plan without running, progress from the proof's thread, cancel from
another thread (verdict interrupted, memory and the lock released), ProofBusy for a second caller."""

from __future__ import annotations

import gc
import threading

import pytest

torch = pytest.importorskip("torch")

from aiworkbook.proofs import control, kv, registry, roofline, vram  # noqa: E402
from aiworkbook.proofs.model import DecoderModel  # noqa: E402


@pytest.mark.parametrize("name", ["roofline", "vram", "kv"])
def test_plan_predicts_without_running(name, monkeypatch):
    def no_timing(*a, **k):
        raise AssertionError("plan must not time anything")

    for mod in (kv, roofline):  # the names the proofs time with (imported at their import)
        monkeypatch.setattr(mod, "time_trials", no_timing)
    monkeypatch.setattr(vram, "_train", no_timing)
    monkeypatch.setattr(DecoderModel, "__init__", no_timing)
    p = registry.plan(name, model="tiny-llama", device="cpu", quick=True)
    assert p.proof == name and p.device == "cpu" and p.fits is True
    assert p.rough_s == registry.get(name).rough_s["cpu"]
    assert p.sizes and p.to_dict()["sizes"] == p.sizes
    if name == "roofline":
        assert (
            p.predicted is None
            and p.sizes["shapes"] == [512]
            and p.sizes["workload_point"]["dtype"] == "bf16"
        )
    else:
        assert p.predicted and p.predicted > 0 and p.unit == "B"


def test_plan_says_when_nothing_fits():
    p = registry.plan("vram", model="llama-3-8b", device="cpu", quick=True, budget_bytes=2**20)
    assert p.fits is False and p.predicted is None and "does not fit" in p.notes[0]


def _run_in_thread(name, **kw):
    out: dict = {}

    def target():
        try:
            out["result"] = registry.run(name, **kw)
        except BaseException as exc:  # surfaced to the test thread
            out["error"] = exc

    th = threading.Thread(target=target)
    th.start()
    return th, out


def test_progress_comes_from_the_proof_thread_and_reaches_the_end():
    seen = []
    th, out = _run_in_thread(
        "vram",
        model="tiny-llama",
        device="cpu",
        quick=True,
        progress=lambda d, t, m: seen.append((d, t, m, threading.get_ident())),
    )
    th.join(300)
    assert "error" not in out, out.get("error")
    r = out["result"]
    assert r.verdict == "pass", r.headline()
    from aiworkbook.proofs.details import ComponentRow, VramDetails
    from aiworkbook.proofs.result import ProofResult

    assert isinstance(r.details, VramDetails) and isinstance(r.details.components[0], ComponentRow)
    assert r.details.components[0].component == "weights" and ComponentRow.unit("measured") == "B"
    assert r.details["components"][0]["ratio"] == r.details.components[0].ratio  # dict-shaped reads too
    again = ProofResult.from_dict(r.to_dict())
    assert isinstance(again.details, VramDetails) and again.to_dict() == r.to_dict()
    assert isinstance(r.to_dict()["details"]["components"][0], dict)  # the JSON is unchanged
    assert {ident for *_, ident in seen} == {th.ident}  # called from the proof's thread
    done = [d for d, *_ in seen]
    assert done == sorted(done) and seen[-1][0] == seen[-1][1] == 2  # two steps, reported to the end
    assert control.running() is None


def test_cancel_from_another_thread_interrupts_frees_memory_and_releases_the_lock():
    threads_before = torch.get_num_threads()
    gc.collect()
    # models another test in this worker process may still hold (a failed test's traceback keeps its
    # frames): this proof's own model must be gone, whatever else is alive
    models_before = {id(o) for o in gc.get_objects() if isinstance(o, DecoderModel)}
    cancel = threading.Event()
    first_step = threading.Event()

    def progress(done, total, message):
        if done >= 1:
            first_step.set()

    th, out = _run_in_thread(
        "vram", model="tiny-llama", device="cpu", quick=True, steps=50, progress=progress, cancel=cancel
    )
    assert first_step.wait(300)
    cancel.set()  # from the test thread, while the proof trains
    th.join(60)
    assert not th.is_alive()
    r = out["result"]
    assert r.verdict == "interrupted" and r.measured is None
    assert r.predicted and r.unit == "B"  # the plan's prediction is kept beside the interruption
    assert "memory released" in r.notes[0] and "/50" in r.notes[0] or "of 50" in r.notes[0]
    gc.collect()
    left = [o for o in gc.get_objects() if isinstance(o, DecoderModel) and id(o) not in models_before]
    assert not left  # the model was freed
    assert control.running() is None and torch.get_num_threads() == threads_before


def test_roofline_cancel_lands_between_trials():
    cancel = threading.Event()
    cancel.set()  # cancelled before the first trial: nothing is measured
    r = registry.run("roofline", device="cpu", quick=True, cancel=cancel)
    assert r.verdict == "interrupted" and r.proof == "roofline" and r.measured is None


def test_a_second_caller_gets_proof_busy_at_once():
    release = threading.Event()
    holding = threading.Event()

    def progress(done, total, message):
        holding.set()
        release.wait(60)  # hold the lock inside the run until the test has tried a second one

    th, out = _run_in_thread("kv", model="tiny-llama", device="cpu", quick=True, progress=progress)
    while not holding.wait(0.1):
        assert th.is_alive(), out.get("error")
    with pytest.raises(control.ProofBusy, match="a proof is running: kv"):
        registry.run("roofline", device="cpu", quick=True)
    release.set()
    th.join(300)
    assert out["result"].proof == "kv" and control.running() is None


def test_prove_vram_accepts_every_attention_the_cli_lists(capsys):
    from aiworkbook.cli import main
    from aiworkbook.sizing.workload import ATTENTIONS

    assert "flash" in ATTENTIONS
    rc = main(["prove", "vram", "tiny-llama", "--device", "cpu", "--quick", "--attention", "flash"])
    assert rc == 0, capsys.readouterr().err
    assert "vram" in capsys.readouterr().out


def test_details_of_unknown_shape_or_proof_stay_a_dict():
    from aiworkbook.proofs.details import RooflineDetails, typed

    assert typed("serving", {"sweep": [], "knee": 4}) == {"sweep": [], "knee": 4}  # another proof's own
    assert typed("vram", {"components": [], "something_new": 1}) == {"components": [], "something_new": 1}
    assert typed("roofline", {}) == {}  # an interrupted run keeps its empty details
    rd = typed("roofline", {"ceilings": {"bandwidth": {}}, "chart": []})
    assert (
        isinstance(rd, RooflineDetails) and rd.datasheet_spec is None and rd["ceilings"] == {"bandwidth": {}}
    )
