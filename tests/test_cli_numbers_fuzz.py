"""Every numeric option of every command, found by walking the typer app, fed 0, -1, 2^31, 2^63, 10^20,
NaN, inf and text: each answers with exit 2 naming the option (or a normal answer) within 5 s and with
less than 500 MB more than the test process held, and never with a traceback or an internal error.

Values refused while the command line is parsed (NaN, inf, text, integers beyond 64 bits) run in this
process (fast). The others run the real command in a forked child (this process's modules already
imported, so a fork costs milliseconds) under a deadline (SIGTERM to its process group) and an address-space limit, and its own peak
resident size is read back with os.wait4: the memory and time bounds are measured, not assumed.
A command still working at the deadline (a proof at a valid size, a server) is stopped with SIGTERM, as
a user would, so it cleans up; it counts as a normal answer when it showed it was working (a banner, a
progress bar, the "stopped by" line) and its memory stayed within the bound: what the bound is about is
that no typed number makes it allocate in proportion before a check. Proofs run with --quick.
"""

from __future__ import annotations

import io
import os
import resource
import select
import signal
import sys
import time

import pytest
import typer.main

from aiworkbook.cli import app, main
from aiworkbook.cli.numbers import numeric

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the bounded runs fork (POSIX only)")

DEADLINE_S = 5
GRACE_S = 20  # a stopped proof removes its scratch folder and ends its workers in this time
MEMORY_MB = 500
PARSE_REFUSED = {
    "int": ["2" + "0" * 20, str(2**63), "nan", "inf", "text", "1.5"],
    "float": ["nan", "inf", "-inf", "text"],
}
RUN_VALUES = {"int": ["0", str(2**31)], "float": ["0", "-1", "1e20"]}  # the extremes that reach a run
#: The positional arguments and required options a command needs to reach its numeric options.
POSITIONAL = {"model": "llama-3-8b", "profile": "no-such-profile.json", "dir": "{tmp}/d"}
#: Extra options that keep a command that runs until stopped short, and off the torch model load.
SHORT = {
    "monitor": ["--duration", "1"],
    "serve": ["--duration", "1", "--backend", "synthetic"],
    "prove": ["--quick"],
}
#: What a command that is still working at the deadline has printed: a server's banner, a proof's bar.
BANNERS = ("serving ", "dashboard: http", "it/s", "s/it", "it [")


def _options() -> list[tuple[list[str], str, str, list[str]]]:
    out = []

    def walk(cmd, path):
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, [*path, name])
            return
        for p in cmd.params:
            kind = numeric(p)
            if kind and p.opts[0].startswith("--"):
                needs = []
                for q in cmd.params:
                    if q.required and not q.opts[0].startswith("-"):
                        needs.append(POSITIONAL.get(q.name, "{tmp}/x"))
                    elif q.required and q is not p:  # a folder inside the test's own, else a plain 1
                        needs += [q.opts[0], "{tmp}/d" if q.name == "dir" else "1"]
                out.append((path, p.opts[0], kind, needs))

    walk(typer.main.get_command(app), [])
    return out


OPTIONS = _options()
try:  # imported here once, so that each forked run starts with it (a proof's child need not load it)
    import torch  # noqa: F401
except ImportError:  # pragma: no cover
    pass
IDS = [f"{' '.join(path)} {opt}" for path, opt, _, _ in OPTIONS]


def test_the_walk_finds_the_numeric_options():
    found = set(IDS)
    assert {"preflight vllm --tensor-parallel-size", "size --batch", "monitor --interval"} <= found
    assert len(found) > 80


def _argv(path, opt, needs, value, tmp) -> list[str]:
    short = list(SHORT.get(path[0], []))
    if opt in short:  # the option under test replaces the short setting
        i = short.index(opt)
        del short[i : i + 2]
    return [*path, *(n.format(tmp=tmp) for n in needs), *short, opt, value]


@pytest.mark.parametrize(("path", "opt", "kind", "needs"), OPTIONS, ids=IDS)
def test_unparseable_and_non_finite_numbers_are_exit_2_naming_the_option(
    path, opt, kind, needs, tmp_path, capsys
):
    for value in PARSE_REFUSED[kind]:
        rc = main(_argv(path, opt, needs, value, tmp_path))
        err = capsys.readouterr().err
        assert rc == 2, (value, err)
        field = opt.lstrip("-").replace("-", "_")
        assert (
            (f"field '{field}'" in err or opt in err)
            and "Traceback" not in err
            and "internal error" not in err
        ), (value, err)


def _bounded_run(argv: list[str], deadline_s: float = DEADLINE_S) -> tuple[int | None, float, str]:
    """Run main(argv) in a forked child, its own process group: (exit code, or None if it was still
    working at the deadline and was stopped with SIGTERM, as a user's Ctrl-C-like stop; its peak resident
    MB, its children's included; what it printed). A group that ignores SIGTERM for GRACE_S is killed."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            os.setpgid(0, 0)
            os.close(r)
            os.dup2(w, 1)
            os.dup2(w, 2)
            limit = 4 << 30
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            sys.stdout = sys.stderr = io.TextIOWrapper(os.fdopen(1, "wb", 0), write_through=True)
            rc = main(argv)
        except BaseException as exc:  # noqa: BLE001 (report anything that escaped main)
            os.write(1, f"Traceback: escaped main: {exc!r}".encode())
            rc = 99
        os._exit(rc if isinstance(rc, int) else 98)
    os.close(w)
    try:
        os.setpgid(pid, pid)  # the child does the same: whichever runs first, the group exists
    except OSError:
        pass
    try:
        return _collect(pid, r, [], time.monotonic() + deadline_s)
    except BaseException:  # pytest-timeout or Ctrl-C in here: the child must not outlive the test
        _signal_group(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(r)
        raise


def _collect(pid: int, r: int, chunks: list[bytes], t_end: float) -> tuple[int | None, float, str]:
    """Read the child's output until every writer is gone, stopping its group at the deadline."""
    stopped = False
    while True:
        wait = t_end - time.monotonic()
        if wait <= 0:
            if stopped:  # SIGTERM was not enough within the grace: the group is killed
                _signal_group(pid, signal.SIGKILL)
                t_end = time.monotonic() + 3600
            else:
                stopped = True
                _signal_group(pid, signal.SIGTERM)
                t_end = time.monotonic() + GRACE_S
            continue
        ready, _, _ = select.select([r], [], [], wait)
        if not ready:
            continue
        chunk = os.read(r, 65536)
        if not chunk:  # every writer gone: the child and what it started have ended
            break
        if sum(map(len, chunks)) < 200_000:
            chunks.append(chunk)
    os.close(r)
    _, status, usage = os.wait4(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return (None if stopped else code), usage.ru_maxrss / 1024, b"".join(chunks).decode(errors="replace")


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("path", "opt", "kind", "needs"), OPTIONS, ids=IDS)
def test_extreme_numbers_answer_within_bounds(path, opt, kind, needs, tmp_path):
    own_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    for value in RUN_VALUES[kind]:
        argv = _argv(path, opt, needs, value, tmp_path)
        t0 = time.monotonic()
        rc, peak_mb, out = _bounded_run(argv)
        what = f"{' '.join(argv)} -> {rc}, {time.monotonic() - t0:.1f} s, {peak_mb:.0f} MB: {out[-400:]}"
        assert "Traceback" not in out and "internal error" not in out, what
        assert peak_mb < own_mb + MEMORY_MB, what
        if rc is None:  # still working at the deadline: stopped like a user would, with the usual line
            assert any(b in out for b in BANNERS) or "stopped by SIGTERM" in out, what
        else:
            assert rc in (0, 1, 2), what
            if rc == 2:
                assert "error" in out.lower(), what


@pytest.mark.parametrize("value", ["100000000", "99999999999999999999", "0", "70000"])
def test_preflight_ranks_are_bounded_before_any_list_of_them(value, capsys):
    rc, peak_mb, out = _bounded_run(["preflight", "vllm", "llama-3-8b", "--tensor-parallel-size", value])
    assert rc == 2, out
    assert "field 'tensor_parallel_size'" in out and "allowed:" in out and "Traceback" not in out, out
    assert peak_mb < resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 + MEMORY_MB
