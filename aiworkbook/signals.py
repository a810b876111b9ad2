"""SIGINT and SIGTERM for long commands (proofs, monitor): one stop path, no signal lost, and
finalisation that a second signal cannot cut short.

Within `handled()` (the command line's `main`) both signals are recorded and raised in the main thread
as KeyboardInterrupt (SIGTERM as `Terminated`, a KeyboardInterrupt), so every `except KeyboardInterrupt`
that releases memory or writes what was gathered also runs on `kill` and systemd stops. Python runs a
signal handler wherever the main thread is, and an exception raised inside a `gc.callbacks` entry or a
`__del__` is printed ("Exception ignored in ...") and dropped: a Ctrl-C that lands there would be lost
and the run would go on to exit 0. So the handler raises only where the exception can propagate
(and a KeyboardInterrupt that still reaches `sys.unraisablehook`, from a plain weakref callback, is
taken back); elsewhere it keeps the signal pending and the run stops at its next safe point: a proof's
`control.check()` between units of work, or a re-sent signal to the main thread a moment later (which
also wakes a blocking sleep). `received()` tells the command line which signal stopped the run
(exit 128 + signal number). A SIGINT that the parent ignores (`cmd &` in a script) stays ignored.
"""

from __future__ import annotations

import gc
import signal
import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import CodeType, FrameType
from typing import Any

#: how soon a pending signal is re-sent to the main thread (it is re-sent until it is raised)
RETRY_S = 0.02

_received: list[int] = []
_pending: list[int] = []  # recorded where raising would lose it; raised at the next safe point
_retry: list[threading.Timer] = []
_resent: list[int] = []  # re-sends on their way (a safe point may have raised the signal meanwhile)


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: stop like Ctrl-C, keep what was gathered."""


def received() -> int | None:
    """The last SIGINT/SIGTERM this process was stopped by (None: none seen)."""
    return _received[-1] if _received else None


def note(signum: int) -> None:
    """Record a stop by `signum` (a KeyboardInterrupt raised by Python's own SIGINT handler)."""
    _received.append(signum)


def pending() -> int | None:
    """A signal recorded but not yet raised (it landed where Python swallows exceptions), or None."""
    return _pending[-1] if _pending else None


def _exception(signum: int) -> KeyboardInterrupt:
    return Terminated("terminated (SIGTERM)") if signum == signal.SIGTERM else KeyboardInterrupt()


def raise_pending() -> None:
    """A safe point: raise the pending signal as KeyboardInterrupt/Terminated (main thread only; a
    proof run in a worker thread by a notebook is cancelled through its own event instead)."""
    if _pending and _in_main_thread():
        signum = _pending[-1]
        _stop_retries()
        raise _exception(signum)


def _stop_retries() -> None:
    """The pending signal is being raised: no more re-sends (one already on its way is dropped by
    `_on_signal`, which finds nothing pending)."""
    _pending.clear()
    for timer in _retry:
        timer.cancel()
    _retry.clear()


_FINALIZE_CALL: CodeType = weakref.finalize.__call__.__code__


def _swallowing(frame: FrameType | None) -> bool:
    """Whether `frame` or a caller is code whose exceptions Python prints and drops: a `gc.callbacks`
    entry, a `__del__`, a `weakref.finalize` callback."""
    codes = {getattr(getattr(cb, "__func__", cb), "__code__", None) for cb in gc.callbacks}
    while frame is not None:
        code = frame.f_code
        if code in codes or code.co_name == "__del__" or code is _FINALIZE_CALL:
            return True
        frame = frame.f_back
    return False


def _resend() -> None:
    """From a timer thread: deliver the pending signal to the main thread again (a real signal, so a
    blocking sleep there wakes and the handler runs at once)."""
    if not _pending:
        return
    _resent.append(_pending[-1])
    try:
        signal.pthread_kill(threading.main_thread().ident or 0, _pending[-1])
    except (AttributeError, OSError, ValueError):  # no pthread_kill (Windows), or the thread is gone
        import _thread

        _thread.interrupt_main(signal.Signals(_pending[-1]))


def _on_signal(signum: int, frame: FrameType | None) -> None:
    if _resent:  # our own re-send (no lock: this runs in the main thread between any two bytecodes)
        _resent.pop()
        if not _pending:  # a safe point raised it meanwhile
            return
    else:
        _received.append(signum)
    if _swallowing(frame):
        _defer(signum)
        return
    _stop_retries()
    raise _exception(signum)


def _defer(signum: int) -> None:
    """Keep `signum` pending and re-send it to the main thread shortly (until a safe point raises it)."""
    _pending[:] = [signum]
    timer = threading.Timer(RETRY_S, _resend)
    timer.daemon = True
    _retry[:] = [t for t in _retry if t.is_alive()] + [timer]
    timer.start()


def _catching(hook: Callable[[Any], object]) -> Callable[[Any], object]:
    """A `sys.unraisablehook` for what `_swallowing` cannot see (a plain weakref callback, a C-level
    finaliser): a KeyboardInterrupt that Python is about to print and drop goes back to pending."""

    def unraisable(info: Any) -> object:
        if isinstance(info.exc_value, KeyboardInterrupt) and _received and _in_main_thread():
            _defer(_received[-1])
            return None
        return hook(info)

    return unraisable


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def handled() -> Iterator[None]:
    """Within the block SIGINT and SIGTERM are recorded and raised in the main thread at a safe point
    (see the module's docstring); a SIGINT ignored by the parent stays ignored. Elsewhere than the
    main thread: nothing changes."""
    if not _in_main_thread():
        yield
        return
    _received.clear()
    _pending.clear()
    _resent.clear()
    sigs = [signal.SIGTERM]
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        sigs.append(signal.SIGINT)
    old = {s: signal.signal(s, _on_signal) for s in sigs}
    old_hook = sys.unraisablehook
    sys.unraisablehook = _catching(old_hook)
    try:
        yield
    finally:
        sys.unraisablehook = old_hook
        for s, h in old.items():
            signal.signal(s, h)
        _stop_retries()


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
