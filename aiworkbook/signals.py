"""SIGINT and SIGTERM for long commands (proofs, monitor): one stop path, and finalisation that a
second signal cannot cut short.

SIGTERM is turned into `Terminated`, a KeyboardInterrupt, so every `except KeyboardInterrupt` that
releases memory or writes what was gathered also runs on `kill` and systemd stops. `received()`
tells the command line which signal stopped the run (exit 128 + signal number).
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

_received: list[int] = []


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: stop like Ctrl-C, keep what was gathered."""


def received() -> int | None:
    """The last SIGINT/SIGTERM this process was stopped by (None: none seen)."""
    return _received[-1] if _received else None


def note(signum: int) -> None:
    """Record a stop by `signum` (a KeyboardInterrupt raised by Python's own SIGINT handler)."""
    _received.append(signum)


def _on_term(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    raise Terminated("terminated (SIGTERM)")


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Within the block SIGTERM raises `Terminated` in the main thread (elsewhere: nothing changes)."""
    if not _in_main_thread():
        yield
        return
    _received.clear()
    old = signal.signal(signal.SIGTERM, _on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


@contextmanager
def deferred(what: str = "finishing") -> Iterator[None]:
    """Finalisation (writing a CSV, a trace, the summary) that SIGINT/SIGTERM cannot interrupt: a
    signal in the block is noted and answered with one line on stderr; the block runs to its end."""
    if not _in_main_thread():
        yield
        return
    told: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        _received.append(signum)
        if not told:
            told.append(signum)
            print(f"{what}; please wait, the files are being written", file=sys.stderr, flush=True)

    old = {s: signal.signal(s, hold) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
