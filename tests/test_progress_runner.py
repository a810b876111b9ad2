"""One progress runner (aiworkbook/proofs/progress.py): a proof's units of work report to the viewer's
callback through `steps`, a cancel lands between units, the tqdm bar a direct call asks for is closed
however the loop ends, the `prove` commands draw every proof on the one `TqdmProgress`, and no other
module draws a bar of its own."""

from __future__ import annotations

import ast
import threading
from pathlib import Path

import pytest

from aiworkbook.proofs.control import Cancelled, Control, Viewer
from aiworkbook.proofs.progress import TqdmProgress, byte_counter, counted_bytes, counts, steps, units
from aiworkbook.units import GiB, MiB

ROOT = Path(__file__).resolve().parents[1]


def _control() -> tuple[Control, list[tuple[int, int, str]]]:
    seen: list[tuple[int, int, str]] = []
    return Control(progress=lambda d, t, m: seen.append((d, t, m))), seen


def test_steps_report_each_unit_before_it_runs_to_the_given_or_active_control():
    control, seen = _control()
    ran = []
    for x in steps(["a", "b"], lambda i, x: f"{x} {i + 1}/2", start=1, total=4, control=control):
        ran.append((x, seen[-1]))
    assert ran == [("a", (1, 4, "a 1/2")), ("b", (2, 4, "b 2/2"))]
    active, seen2 = _control()
    with active.active():  # the registry's way: the proof's thread finds its control
        assert list(steps(range(3), lambda i, _: f"step {i}")) == [0, 1, 2]
    assert seen2 == [(0, 3, "step 0"), (1, 3, "step 1"), (2, 3, "step 2")]
    assert list(steps(range(2), lambda i, _: "outside a run")) == [0, 1]  # no control: nothing reported


def test_a_cancel_lands_between_units_and_the_bar_is_closed(capsys):
    cancel = threading.Event()
    control = Control(cancel=cancel)
    done = []
    gen = steps(range(5), lambda i, _: f"unit {i}", desc="cancel-me", show=True, control=control)
    with pytest.raises(Cancelled, match="unit 2"):
        for i in gen:
            done.append(i)
            if i == 1:
                cancel.set()
    assert done == [0, 1]
    err = capsys.readouterr().err
    assert "cancel-me" in err  # drawn on stderr while it ran (a terminal's bar; leave=False clears it)
    assert gen.gi_frame is None  # the generator finished: its finally closed the bar


def test_tqdm_progress_follows_the_proof_and_drops_repeats(monkeypatch):
    shown = TqdmProgress("demo")
    updates: list[int] = []
    real = shown.bar.update
    monkeypatch.setattr(shown.bar, "update", lambda n=1: updates.append(n) or real(n))
    try:
        shown(0, 10, "start")
        shown(4, 10, "polling")
        shown(4, 10, "polling")  # a proof polling a subprocess reports the same step many times
        shown(2, 5, "second phase")  # a new total, and back down
        assert updates == [0, 4, -2] and shown.bar.total == 5 and shown.bar.n == 2
        assert "second phase" in shown.bar.postfix
    finally:
        shown.close()


def test_no_module_draws_a_progress_bar_of_its_own():
    """tqdm is imported in one place: every proof's bar and the CLI's come from proofs/progress.py."""
    users = []
    for folder in ("aiworkbook", "widgets", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if "tqdm" not in text:
                continue
            for node in ast.walk(ast.parse(text)):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                    if isinstance(node, ast.ImportFrom)
                    else []
                )
                if any(n == "tqdm" or n.startswith("tqdm.") for n in names):
                    users.append(str(path.relative_to(ROOT)))
    assert sorted(set(users)) == ["aiworkbook/proofs/progress.py"]


def test_tell_repeats_the_step_with_a_finer_message_and_never_raises():
    """A load point's request count, told from the load's own thread: the current step again, no cancel
    raised there (the proof's thread checks), a failing viewer callback swallowed."""
    control, seen = _control()
    control.step(2, 5, "load point 3")
    control.cancel = threading.Event()
    control.cancel.set()
    control.tell("load point 3: 7/16 requests")
    assert seen[-1] == (2, 5, "load point 3: 7/16 requests")

    def broken(done: int, total: int, message: str) -> None:
        raise RuntimeError("a viewer that broke")

    Control(progress=broken).tell("still fine")


def test_no_proof_reports_past_the_one_runner():
    """Every count a proof keeps itself (bytes written, batches read) goes through proofs/progress.py,
    which says what it counts: no module but control.py and progress.py calls `control.step`."""
    callers = []
    for path in sorted((ROOT / "aiworkbook").rglob("*.py")):
        if path.name in ("control.py", "progress.py") and path.parent.name == "proofs":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            f = node.func if isinstance(node, ast.Call) else None
            if isinstance(f, ast.Attribute) and f.attr == "step" and getattr(f.value, "id", "") == "control":
                callers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert callers == []


class _Seen(Viewer):
    def __init__(self) -> None:
        self.seen: list[tuple[int, int, str, str]] = []

    def __call__(self, done: int, total: int, message: str, unit: str = "") -> None:
        self.seen.append((done, total, message, unit))


def test_bytes_reach_a_viewer_as_bytes_and_a_plain_callback_as_counts():
    viewer = _Seen()
    control = Control(progress=viewer)
    count = byte_counter(control, 4 * MiB, "write", before=MiB)
    count(MiB)  # a writer's own count, inside one shard
    units(control, 3, 8, "batch")
    control.tell("batch, finer")
    assert viewer.seen == [(2 * MiB, 4 * MiB, "write", "B"), (3, 8, "batch", ""), (3, 8, "batch, finer", "")]
    plain, seen = _control()
    counted_bytes(plain, MiB, 2 * MiB, "read")
    assert seen == [(MiB, 2 * MiB, "read")] and plain.unit == "B"
    assert counts(3, 8) == "3/8" and counts(MiB, 4 * MiB, "B") == "1.00 MiB/4.00 MiB"
    assert counts(MiB, 4 * MiB, "B", "nl") == "1,00 MiB/4,00 MiB"


def test_the_tqdm_bar_draws_bytes_as_binary_multiples_and_units_as_counts():
    shown = TqdmProgress("demo")
    try:
        shown(GiB, 4 * GiB, "writing", "B")
        assert "1.00G/4.00G" in str(shown.bar) and "B/s" in str(shown.bar)
        shown(3, 8, "reading")
        assert shown.bar.unit == "it" and not shown.bar.unit_scale and "3/8" in str(shown.bar)
    finally:
        shown.close()


@pytest.mark.timeout(120)
def test_the_checkpoint_proof_reports_its_writes_in_bytes_and_its_steps_in_units(tmp_path):
    from aiworkbook.proofs import registry

    viewer = _Seen()
    r = registry.run(
        "checkpoint", size_mb=1, formats="safetensors", trials=1, dir=str(tmp_path), progress=viewer
    )
    written = [s for s in viewer.seen if s[3] == "B" and s[2].startswith("safetensors")]
    assert written and {s[1] for s in written} == {r.details["estimate"]["saved_bytes"]}
    assert all(0 <= done <= total for done, total, _, _ in written)
    baseline = [s for s in viewer.seen if s[2].startswith("baseline")]
    assert baseline and all(s[3] == "B" for s in baseline)


@pytest.mark.timeout(120)
def test_a_run_cancelled_while_writing_says_how_many_bytes_it_had_written(tmp_path):
    import threading

    from aiworkbook.proofs import registry

    cancel = threading.Event()

    class CancelOnBytes(Viewer):
        def __call__(self, done: int, total: int, message: str, unit: str = "") -> None:
            if unit == "B" and done:  # a cancel lands at the next report: while the bytes are counted
                cancel.set()

    r = registry.run(
        "checkpoint",
        size_mb=1,
        formats="torch",
        trials=1,
        dir=str(tmp_path),
        progress=CancelOnBytes(),
        cancel=cancel,
    )
    assert r.verdict == "interrupted"
    (note,) = r.notes
    assert " MiB done); memory released" in note and "steps" not in note
