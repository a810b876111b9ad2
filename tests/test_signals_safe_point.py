"""A Ctrl-C or SIGTERM that lands where Python swallows exceptions (a `gc.callbacks` entry, a `__del__`)
is not lost: the handler records it and the run stops at its next safe point, exit 130/143 with one
line, never exit 0 (issue 21 item 8: the vram proof's GC-pause callback swallowed 2 Ctrl-C of 2)."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import threading
import time
import weakref

import pytest

from aiworkbook import signals

CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}
WHAT = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM"}


def _default_sigint() -> None:
    """In the child before exec: Ctrl-C back to its default, so the test holds when the parent ignores
    SIGINT (a background `make test &`; ignored signals survive exec)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


# The proof's own GC callback, with one addition: while the proof is between its first and last
# training step, the next collection says so on stderr and then runs Python code (where a signal
# handler runs) until a signal was seen, bounded at 20 s. The signal the parent sends therefore lands
# inside the callback. A low threshold makes collections frequent, so one falls in that window.
IN_GC = """
import gc, sys, time
gc.set_threshold(50)
from aiworkbook import signals
from aiworkbook.proofs import control, gcpause
real = gcpause.GcPauses.callback
fired = []
def callback(self, phase, info):
    real(self, phase, info)
    c = control.current()
    if phase != "start" or fired or c is None or not 0 < c.done < c.total:
        return
    fired.append(1)
    print("inside the gc callback", file=sys.stderr, flush=True)
    end = time.monotonic() + 20
    while time.monotonic() < end and signals.received() is None:
        pass
gcpause.GcPauses.callback = callback
from aiworkbook.cli import entry
sys.argv = ["aiworkbook", "prove", "vram", "tiny-llama", "--device", "cpu", "--quick", "--json", "r.json"]
entry()
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_inside_the_gc_callback_stops_the_proof(tmp_path, sig):
    p = subprocess.Popen(
        [sys.executable, "-c", IN_GC],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )
    err: list[str] = []
    inside = threading.Event()

    def read() -> None:
        assert p.stderr is not None
        for line in p.stderr:
            err.append(line)
            if "inside the gc callback" in line:
                inside.set()
        inside.set()  # the child ended without getting there: fail below instead of waiting

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert inside.wait(120) and p.poll() is None, f"never reached the callback: {''.join(err)[-2000:]}"
        p.send_signal(sig)
        rc = p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)
    reader.join(timeout=10)
    text = "".join(err)
    assert rc == CODES[sig], text[-2000:]
    last = text.strip().splitlines()[-1]
    assert last.startswith(f"stopped by {WHAT[sig]} (vram proof of tiny-llama interrupted"), last
    assert text.count("stopped by") == 1
    assert "Exception ignored" not in text and "Traceback" not in text
    assert not (tmp_path / "r.json").exists()


@pytest.fixture
def handled():
    """This process's SIGINT/SIGTERM handled by aiworkbook.signals for the test, whatever the parent
    set (pytest run as a background job inherits SIGINT ignored); the old handlers come back after."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with signals.handled():
            yield
    finally:
        signal.signal(signal.SIGINT, old)


def _spin_until_seen(bound_s: float = 10.0) -> None:
    end = time.monotonic() + bound_s
    while time.monotonic() < end and signals.received() is None:
        pass


def _run_until_interrupted(bound_s: float = 10.0) -> float:
    """Python code at safe points until KeyboardInterrupt; returns how long that took (fails at the bound).

    Real time: a real signal arrives asynchronously; the bound only turns a lost signal into a failure."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < bound_s:
        sum(range(100))
    pytest.fail(f"no KeyboardInterrupt within {bound_s} s: the signal was lost")


def test_in_process_signal_in_a_gc_callback_is_raised_after_it(handled):
    def callback(phase, info):
        if phase == "start":
            os.kill(os.getpid(), signal.SIGINT)
            _spin_until_seen()

    gc.callbacks.append(callback)
    try:
        with pytest.raises(KeyboardInterrupt):
            gc.collect()
            gc.callbacks.remove(callback)  # one signal is enough
            _run_until_interrupted()
    finally:
        if callback in gc.callbacks:
            gc.callbacks.remove(callback)
    assert signals.received() == signal.SIGINT and signals.pending() is None


class _Dies:
    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        _spin_until_seen()


def test_in_process_signal_in_a_finaliser_is_raised_after_it(handled):
    with pytest.raises(signals.Terminated):
        _Dies()  # dropped at once: __del__ runs here, where Python would print and drop the exception
        _run_until_interrupted()
    assert signals.received() == signal.SIGTERM


class _Target:
    pass


def test_in_process_signal_in_a_plain_weakref_callback_is_raised_after_it(handled):
    """A callback no frame check knows: Python drops the KeyboardInterrupt through sys.unraisablehook,
    which hands it back as pending."""

    def gone(ref) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        _spin_until_seen()
        sum(range(1000))  # Python code after the signal: where the handler raises

    target = _Target()
    ref = weakref.ref(target, gone)
    with pytest.raises(KeyboardInterrupt):
        del target  # the callback runs here, inside the object's deallocation
        _run_until_interrupted()
    assert ref() is None and signals.received() == signal.SIGINT


def test_a_deferred_signal_stops_a_blocking_sleep(handled):
    """The re-raise reaches the main thread even while it sleeps in C (a real signal: EINTR)."""

    def callback(phase, info):
        if phase == "start":
            os.kill(os.getpid(), signal.SIGINT)
            _spin_until_seen()

    gc.callbacks.append(callback)
    slept_from: list[float] = []
    try:
        with pytest.raises(KeyboardInterrupt):
            gc.collect()
            gc.callbacks.remove(callback)
            slept_from.append(time.monotonic())
            time.sleep(10)  # real time on purpose: the real signal must end this C-level sleep (EINTR)
    finally:
        if callback in gc.callbacks:
            gc.callbacks.remove(callback)
    # the sleep was cut short, not slept out (the time spent in the callback before it does not count:
    # on a loaded machine the spin there can take seconds)
    assert not slept_from or time.monotonic() - slept_from[0] < 9


def test_the_proof_safe_point_raises_a_pending_signal(handled, monkeypatch):
    """A proof's `control.check()` (called between units of work) raises a deferred signal at once."""
    from aiworkbook.proofs.control import Control

    monkeypatch.setattr(signals, "RETRY_S", 60.0)  # no re-send during the test: only the safe point

    def callback(phase, info):
        if phase == "start":
            os.kill(os.getpid(), signal.SIGTERM)
            _spin_until_seen()

    c = Control()
    gc.callbacks.append(callback)
    try:
        gc.collect()
    finally:
        gc.callbacks.remove(callback)
    assert signals.pending() == signal.SIGTERM
    with pytest.raises(signals.Terminated), c.active():
        c.check("a step")
    assert signals.pending() is None


def test_a_signal_ignored_by_the_parent_stays_ignored():
    """`aiworkbook ... &` in a script: SIGINT was ignored on purpose; handled() leaves it so."""
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with signals.handled():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    finally:
        signal.signal(signal.SIGINT, old)
