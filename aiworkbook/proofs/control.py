"""Steering a running proof from another thread: progress out, cancel in, one proof at a time.

A widget or the CLI hands `run(..., progress=callback, cancel=event)`; the proof calls
`control.step(done, total, message)` between units of work, which reports progress and raises
`Cancelled` once the event is set, so a cancel stops the proof within one unit of work (each proof
keeps its units well under a second). Proofs change process-wide torch state (threads, matmul
precision): `exclusive()` serialises them and restores that state afterwards; a second caller gets
`ProofBusy` at once instead of a silent wait.

No torch import here: the registry and the widgets import this module before any proof runs.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from aiworkbook import signals

#: progress(done, total, message), called from the proof's thread.
ProgressFn = Callable[[int, int, str], None]

#: what a report counts
BYTES = "B"  # bytes (written, read)
UNITS = ""  # units of work (shards, steps, batches, trees)


def counts(done: int, total: int, unit: str = UNITS, lang: str = "en") -> str:
    """done/total for a person: "3/8" units, "1.00 GiB/4.00 GiB" bytes (numbers in `lang`)."""
    if unit != BYTES:
        return f"{done}/{total}"
    from aiworkbook.units import fmt_bytes

    return f"{fmt_bytes(done, lang=lang)}/{fmt_bytes(total, lang=lang)}"


class Viewer:
    """A progress callback that is also told what the counts are: `unit` "" (units of work: shards,
    steps, batches) or "B" (bytes), so it draws bytes as bytes (proofs.progress.TqdmProgress, the
    ProofRunner widget's bar). A plain progress(done, total, message) function gets the counts alone."""

    def __call__(self, done: int, total: int, message: str, unit: str = "") -> None:
        raise NotImplementedError


class Cancelled(Exception):
    """Raised inside a proof when its cancel event is set; the registry turns it into verdict 'interrupted'."""

    def __init__(self, at: str = "") -> None:
        self.at = at
        super().__init__(f"cancelled{' at ' + at if at else ''}")


class ProofBusy(RuntimeError):
    """Another proof holds the lock: names it and how long it has run."""


@dataclass
class Control:
    """What a running proof reports to and checks against. Safe to call from the proof's thread only;
    `progress` may be any callable (its exceptions are swallowed: a broken viewer must not kill a proof)."""

    progress: ProgressFn | None = None
    cancel: threading.Event | None = None
    done: int = 0
    total: int = 0
    message: str = ""
    unit: str = ""  # what done and total count: "" units of work, "B" bytes
    started: float = field(default_factory=time.monotonic)

    @property
    def cancelled(self) -> bool:
        return self.cancel is not None and self.cancel.is_set()

    def check(self, at: str = "") -> None:
        """Raise Cancelled when the cancel event is set. Also a safe point for a Ctrl-C/SIGTERM that
        landed where Python would have swallowed it (aiworkbook.signals): raised here."""
        signals.raise_pending()
        if self.cancelled:
            raise Cancelled(at or self.message)

    def step(self, done: int, total: int, message: str = "", unit: str = "") -> None:
        """Report progress (done of total units of work, or bytes with unit "B"; what is running now),
        then honour a cancel. Proofs report through proofs.progress, the one runner, not here."""
        # a message (aiworkbook.message.Msg, a str) is kept as it is: the viewer says it in its language
        self.done, self.total, self.unit = int(done), int(total), unit
        self.message = message if isinstance(message, str) else str(message)
        self._show(self.message)
        self.check(message)

    def tell(self, message: str) -> None:
        """The current step again with a finer message (requests done inside a load point): no cancel
        check here, so a callback on another thread (the load's event loop) may call it."""
        self._show(message if isinstance(message, str) else str(message))

    def _show(self, message: str) -> None:
        """The viewer's callback, told the unit when it is a Viewer; its exceptions are swallowed (a
        viewer's callback failing is the viewer's problem, not the proof's)."""
        if self.progress is None:
            return
        with contextlib.suppress(Exception):
            if isinstance(self.progress, Viewer):
                self.progress(self.done, self.total, message, self.unit)
            else:
                self.progress(self.done, self.total, message)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @contextmanager
    def active(self) -> Iterator[Control]:
        """Make this the control that `checkpoint()` and `report()` reach on this thread, so inner loops
        (timing trials, model layers, decode steps) honour a cancel without a parameter at every level."""
        prev = getattr(_local, "control", None)
        _local.control = self
        try:
            yield self
        finally:
            _local.control = prev


NULL = Control()
_local = threading.local()


def current() -> Control | None:
    """The control made active on this thread (None outside a proof run through the registry)."""
    return getattr(_local, "control", None)


def checkpoint(at: str = "") -> None:
    """Raise Cancelled when the active control's cancel is set; no-op outside a registry run. Cheap:
    inner loops call it once per unit of work well under a second."""
    c = current()
    if c is not None:
        c.check(at)


def report(done: int, total: int, message: str = "", unit: str = "") -> None:
    """Progress to the active control (then honour a cancel); no-op outside a registry run."""
    c = current()
    if c is not None:
        c.step(done, total, message, unit)


_lock = threading.Lock()
_holder: dict[str, Any] = {}


def running() -> str | None:
    """The name of the proof that holds the lock, or None."""
    return _holder.get("name")


def _torch_state() -> dict[str, Any] | None:
    """Process-wide torch settings a proof may change; None when torch was never imported."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    state: dict[str, Any] = {"threads": torch.get_num_threads()}
    try:
        state["matmul_precision"] = torch.get_float32_matmul_precision()
    except Exception:
        pass
    return state


def _restore(state: dict[str, Any] | None) -> None:
    torch = sys.modules.get("torch")
    if state is None or torch is None:
        return
    if torch.get_num_threads() != state["threads"]:
        torch.set_num_threads(state["threads"])
    if "matmul_precision" in state:
        try:
            if torch.get_float32_matmul_precision() != state["matmul_precision"]:
                torch.set_float32_matmul_precision(state["matmul_precision"])
        except Exception:
            pass


@contextmanager
def exclusive(name: str) -> Iterator[None]:
    """Hold the one proof lock for `name`; raise ProofBusy at once when another proof holds it.
    torch's thread count and fp32 matmul precision are restored on the way out, whatever happened."""
    if not _lock.acquire(blocking=False):
        other = _holder.get("name", "another proof")
        since = time.monotonic() - _holder.get("since", time.monotonic())
        raise ProofBusy(f"a proof is running: {other} (for {since:.0f} s); try again when it has finished")
    _holder.update(name=name, since=time.monotonic())
    state = _torch_state()
    try:
        yield
    finally:
        _restore(state if state is not None else _torch_state())
        _holder.clear()
        _lock.release()
