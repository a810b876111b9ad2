"""A stop (Ctrl-C, SIGTERM) that a library wraps before it reaches the CLI still reads as a stop.

Found by the numbers fuzz: SIGTERM landed inside torch.distributed.checkpoint's loader, which caught the
handler's exception and raised a CheckpointException (a BaseException) holding it and the traceback's
text; the CLI printed that text, "Traceback" and all, and exited as an internal error."""

from __future__ import annotations

import signal

from aiworkbook import cli, signals


class _Wrapper(BaseException):
    """Like DCP's CheckpointException: each rank's (exception, traceback text) in `failures`."""

    def __init__(self, failures: dict) -> None:
        super().__init__(f"CheckpointException ranks:{failures}")
        self.failures = failures


def _raises(exc_for):
    def dispatch(argv):
        raise exc_for()

    return dispatch


def test_sigterm_wrapped_by_a_library_is_a_stop(monkeypatch, capsys):
    def wrapped():
        signals.note(signal.SIGTERM)
        return _Wrapper({0: (signals.Terminated(), "Traceback (most recent call last):\n  File ...")})

    monkeypatch.setattr(cli, "_dispatch", _raises(wrapped))
    rc = cli.main(["prove", "checkpoint"])
    err = capsys.readouterr().err
    assert rc == 143, err
    assert "stopped by SIGTERM" in err and "Traceback" not in err and "internal error" not in err


def test_ctrl_c_as_a_cause_is_a_stop(monkeypatch, capsys):
    def wrapped():
        outer = _Wrapper({})
        outer.__cause__ = KeyboardInterrupt()
        return outer

    monkeypatch.setattr(cli, "_dispatch", _raises(wrapped))
    rc = cli.main(["prove", "checkpoint"])
    assert rc == 130 and "stopped by Ctrl-C" in capsys.readouterr().err


def test_a_wrapper_without_a_stop_is_still_an_internal_error(monkeypatch, capsys):
    monkeypatch.setattr(cli, "_dispatch", _raises(lambda: RuntimeError("boom")))
    assert cli.main(["prove", "checkpoint"]) not in (0, 130, 143)
    assert "internal error" in capsys.readouterr().err
