"""SIGINT and SIGTERM to the real command (a subprocess): proofs exit 130/143 with one line and write
nothing half-done; monitor writes its --jsonl, --record and --csv, says what it kept, and exits 130/143."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}


def _default_sigint() -> None:
    """In the child before exec: Ctrl-C back to its default, so these tests hold when pytest runs as a
    background job (`make test &`: SIGINT ignored, and an ignored signal stays ignored across exec)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Proc:
    """The command in a subprocess, stderr collected by a thread so we can wait for a marker."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        self.p = subprocess.Popen(
            [sys.executable, "-m", "aiworkbook", *argv],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
            preexec_fn=_default_sigint,
        )
        self.err: list[str] = []
        self.out: list[str] = []
        self._threads = [
            threading.Thread(target=self._read, args=(self.p.stderr, self.err), daemon=True),
            threading.Thread(target=self._read, args=(self.p.stdout, self.out), daemon=True),
        ]
        for t in self._threads:
            t.start()

    @staticmethod
    def _read(stream, into: list[str]) -> None:
        for chunk in iter(lambda: stream.read(1), ""):  # tqdm writes \r, not lines
            into.append(chunk)

    def wait_for(self, test, timeout: float = 60) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if test():
                return
            if self.p.poll() is not None:
                pytest.fail(f"exited {self.p.returncode} before the signal: {''.join(self.err)[-2000:]}")
            time.sleep(0.05)  # real time: a real child process writes the marker when it gets there
        self.p.kill()
        pytest.fail("the marker never came")

    def finish(self, sig: int) -> tuple[int, str, str]:
        self.p.send_signal(sig)
        rc = self.p.wait(timeout=60)
        for t in self._threads:  # both pipes read to their end
            t.join(timeout=10)
        return rc, "".join(self.out), "".join(self.err)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_during_a_proof(tmp_path, sig):
    out = tmp_path / "r.json"
    proc = Proc(["prove", "vram", "tiny-llama", "--device", "cpu", "--quick", "--json", str(out)], tmp_path)
    proc.wait_for(lambda: "vram" in "".join(proc.err) and "%" in "".join(proc.err))  # the progress bar is up
    rc, stdout, err = proc.finish(sig)
    assert rc == CODES[sig], err[-2000:]
    last = err.strip().splitlines()[-1]  # after a progress bar's last frame, when one was drawn
    what = "Ctrl-C" if sig == signal.SIGINT else "SIGTERM"
    assert (
        f"stopped by {what} (vram proof of tiny-llama interrupted" in last and "no result was saved" in last
    )
    assert "Traceback" not in err and not out.exists() and not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_to_monitor_keeps_every_file(tmp_path, sig):
    log, rec, csv = tmp_path / "log.jsonl", tmp_path / "rec.jsonl", tmp_path / "c.csv"
    argv = ["monitor", "--replay", "synthetic", "--interval", "0.1", "--no-host", "--quiet",
            "--jsonl", str(log), "--record", str(rec), "--csv", str(csv)]  # fmt: skip
    proc = Proc(argv, tmp_path)
    proc.wait_for(lambda: log.exists() and log.read_text().count("\n") >= 4)
    rc, stdout, err = proc.finish(sig)
    assert rc == CODES[sig], err
    what = "Ctrl-C" if sig == signal.SIGINT else "SIGTERM"
    assert f"stopped by {what}; kept: " in err and "Traceback" not in err
    assert "samples over" in stdout  # the summary
    n_rec = len(rec.read_text().splitlines()) - 1
    assert n_rec >= 3 and len(csv.read_text().splitlines()) - 1 == n_rec
    for line in log.read_text().splitlines():
        json.loads(line)


SLOW_START = """
import sys, time
import aiworkbook.telemetry.sampler as sampler
def slow_init(self, *a, **k):  # NVML initialising on a busy node
    print("initialising", file=sys.stderr, flush=True)
    time.sleep(60)  # real time: the child must be blocked in start-up when the signal arrives
sampler.Sampler.__init__ = slow_init
from aiworkbook.cli import entry
sys.argv = ["aiworkbook", "monitor", "--interval", "0.1"]
entry()
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_during_monitor_start_up_is_not_exit_0(tmp_path, sig):
    """Before the loop (NVML still initialising): 130/143 and one line, never a silent 0."""
    p = subprocess.Popen(
        [sys.executable, "-c", SLOW_START],
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        preexec_fn=_default_sigint,
    )
    assert p.stderr is not None and p.stderr.readline().strip() == "initialising"
    p.send_signal(sig)
    err = p.stderr.read()
    assert p.wait(timeout=30) == CODES[sig]
    assert "Traceback" not in err and err.startswith("stopped by") and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_to_serve_is_130_or_143_with_one_line(tmp_path, sig):
    proc = Proc(["serve", "tiny-llama", "--backend", "synthetic", "--port", "0"], tmp_path)
    proc.wait_for(lambda: "Ctrl-C stops" in "".join(proc.out))  # the banner: serving
    rc, stdout, err = proc.finish(sig)
    assert rc == CODES[sig], err
    what = "Ctrl-C" if sig == signal.SIGINT else "SIGTERM"
    (line,) = err.strip().splitlines()  # one line, no traceback
    assert line.startswith(f"stopped by {what}") and line.endswith("no result was saved"), err


@pytest.mark.timeout(180)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_to_app_is_143_or_130_with_one_line_and_voila_stopped(tmp_path, sig):
    import psutil

    proc = Proc(["app", "sizing", "--no-browser"], tmp_path)  # a free port
    try:
        proc.wait_for(lambda: "Ctrl-C stops it" in "".join(proc.out), timeout=150)  # Voilà listens
        children = psutil.Process(proc.p.pid).children(recursive=True)
        assert children  # Voilà, and its kernels
        rc, _stdout, err = proc.finish(sig)
    finally:
        if proc.p.poll() is None:
            proc.p.kill()
    assert rc == CODES[sig], err
    what = "Ctrl-C" if sig == signal.SIGINT else "SIGTERM"
    (line,) = err.strip().splitlines()  # one line, no traceback
    assert line.startswith(f"stopped by {what}"), err
    _gone, alive = psutil.wait_procs(children, timeout=15)
    assert not alive, alive  # serving() stopped Voilà on the way out
