"""Each way issue 14 broke the error contract, pinned: the catch-all, Ctrl-C codes, FIFOs, pseudo file
systems, ENOSPC, stale temporaries, umask, non-finite JSON, strict booleans, finite ceilings, bounded
threads, --jsonl append, trace headers, the OpenMetrics server."""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
import typer

import aiworkbook.cli as cli
from aiworkbook import signals
from aiworkbook.errors import SpecError
from aiworkbook.paths import data_dir
from aiworkbook.persist import (
    atomic_write_text,
    check_writable,
    clean_stale_temporaries,
    dumps_json,
    read_json,
    write_json,
)

TINY = data_dir() / "models" / "tiny-llama" / "config.json"
SYNTHETIC = next((data_dir() / "traces").glob("*synthetic*.jsonl"))


def _with_command(monkeypatch, exc: BaseException) -> None:
    """A throwaway `boom` command raising `exc`, on a copy of the app."""
    app = typer.Typer(add_completion=False)

    @app.command("boom")
    def boom() -> None:
        raise exc

    @app.command("other")
    def other() -> None:  # two commands, so `boom` stays a subcommand
        pass

    monkeypatch.setattr(cli, "app", app)


@pytest.mark.parametrize(
    "exc, code, text",
    [
        (ZeroDivisionError("float division by zero"), 1, "internal error: ZeroDivisionError"),
        (RecursionError("maximum recursion depth exceeded"), 2, "nested too deeply"),
        (MemoryError(), 1, "out of memory"),
        (KeyError("gpus"), 1, "internal error: KeyError"),
        (KeyboardInterrupt("kv proof of x interrupted; memory released"), 130, "stopped by Ctrl-C"),
        (signals.Terminated("terminated"), 143, "stopped by SIGTERM"),
        (OSError(errno.ENOSPC, "No space left on device", "/data/r.json"), 1, "no space left on "),
    ],
)
def test_every_exception_is_one_line_and_a_code(monkeypatch, capsys, exc, code, text):
    _with_command(monkeypatch, exc)
    assert cli.main(["boom"]) == code
    err = capsys.readouterr().err
    assert text in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_ctrl_c_after_a_file_was_written_names_it(monkeypatch, tmp_path, capsys):
    app = typer.Typer(add_completion=False)

    @app.command("write")
    def write() -> None:
        write_json(tmp_path / "node.json", {"x": 1}, kind="t", schema_version=1)
        raise KeyboardInterrupt

    @app.command("other")
    def other() -> None:
        pass

    monkeypatch.setattr(cli, "app", app)
    assert cli.main(["write"]) == 130
    assert capsys.readouterr().err.strip() == f"stopped by Ctrl-C; kept: {tmp_path / 'node.json'}"
    assert cli.main(["other"]) == 0


def test_typer_exit_codes_pass_through(monkeypatch):
    _with_command(monkeypatch, typer.Exit(3))
    assert cli.main(["boom"]) == 3


def test_version_exits_0(capsys):
    assert cli.main(["--version"]) == 0 and capsys.readouterr().out.startswith("aiworkbook ")


def test_debug_variable_shows_the_traceback(monkeypatch):
    _with_command(monkeypatch, ZeroDivisionError("x"))
    monkeypatch.setenv("AIWORKBOOK_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        cli.main(["boom"])


def test_deeply_nested_json_names_the_file(tmp_path, capsys):
    p = tmp_path / "deep.json"
    p.write_text("[" * 200_000 + "]" * 200_000)
    assert cli.main(["params", str(p)]) == 2
    err = capsys.readouterr().err
    assert str(p) in err and "nested" in err and "Traceback" not in err


def test_flags_show_no_value_in_help(capsys):
    assert cli.main(["size", "--help"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "--json" in x)
    assert "<bool>" not in line


# ---- persist ---------------------------------------------------------------------------------------
def test_fifo_and_devices_are_refused_as_inputs(tmp_path, capsys):
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    for argv in (["params", str(fifo)], ["params", "/dev/zero"], ["monitor", "--replay", str(fifo)]):
        assert cli.main(argv) == 2  # before the fix: blocked forever on the FIFO, or read /dev/zero
        err = capsys.readouterr().err
        assert "not a FIFO" in err or "not a character device" in err


def test_outputs_are_probed_before_work_and_never_replace_devices(tmp_path):
    with pytest.raises(SpecError, match="where files can be created|writable folder"):  # root | user
        check_writable("/proc/aiworkbook-test.json", "json")
    with pytest.raises(SpecError, match="not a character device"):
        check_writable("/dev/null", "json")
    os.mkfifo(tmp_path / "f")
    with pytest.raises(SpecError, match="FIFO"):
        atomic_write_text(tmp_path / "f", "x")
    assert not [p for p in tmp_path.iterdir() if p.name != "f"]


def test_a_full_disk_names_the_users_path(tmp_path, monkeypatch):
    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    target = tmp_path / "result.json"
    with pytest.raises(OSError) as info:
        write_json(target, {"x": 1}, kind="t", schema_version=1)
    assert info.value.filename == str(target) and info.value.errno == errno.ENOSPC
    assert os.listdir(tmp_path) == []


def test_stale_temporaries_of_dead_writers_are_cleaned_and_live_ones_kept(tmp_path):
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead_pid = int(dead.stdout)
    stale = tmp_path / f".r.json.aiwb-{dead_pid}-abc123.tmp"
    live = tmp_path / f".r.json.aiwb-{os.getpid()}-zzz.tmp"
    other = tmp_path / ".r.json.someone-else.tmp"
    for p in (stale, live, other):
        p.write_text("half")
    atomic_write_text(tmp_path / "r.json", "{}")
    assert not stale.exists() and live.exists() and other.exists()
    assert clean_stale_temporaries(tmp_path, "r.json") == []


def test_sigkilled_writer_leaves_a_temporary_that_the_next_write_removes(tmp_path):
    code = (
        "import os, aiworkbook.persist as p\n"
        "os.fsync = lambda fd: os.kill(os.getpid(), 9)\n"
        f"p.atomic_write_text({str(tmp_path / 'r.json')!r}, 'x' * 100)\n"
    )
    r = subprocess.run([sys.executable, "-c", code])
    assert r.returncode == -signal.SIGKILL
    assert [p.name for p in tmp_path.glob(".r.json.aiwb-*.tmp")]
    atomic_write_text(tmp_path / "r.json", "{}")
    assert os.listdir(tmp_path) == ["r.json"]


def test_written_files_follow_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        p = atomic_write_text(tmp_path / "a.json", "{}")
        assert stat.S_IMODE(p.stat().st_mode) == 0o644
        os.umask(0o077)
        q = atomic_write_text(tmp_path / "b.json", "{}")
        assert stat.S_IMODE(q.stat().st_mode) == 0o600
        p.chmod(0o640)
        atomic_write_text(p, "[]")  # an existing file keeps its mode
        assert stat.S_IMODE(p.stat().st_mode) == 0o640
    finally:
        os.umask(old)


def test_json_output_is_always_valid(tmp_path):
    text = dumps_json({"a": float("inf"), "b": [1.0, float("nan")], "c": 2})
    doc = json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c}"))
    assert doc["a"] is None and doc["b"] == [1.0, None] and doc["c"] == 2
    assert doc["non_finite"] == ["a: inf", "b[1]: nan"]
    p = write_json(tmp_path / "r.json", {"x": float("-inf")}, kind="t", schema_version=1)
    assert read_json(p)["x"] is None


def test_size_json_with_extreme_rates_is_valid_json(capsys):
    assert cli.main(["size", "llama-3-8b", "--write-gbps", "1e-300", "--json"]) == 0
    out = capsys.readouterr().out
    doc = json.loads(out, parse_constant=lambda c: pytest.fail(f"bare {c}"))
    assert any("inf" in x for x in doc["non_finite"])


# ---- specs -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["false", "true", 0, 1, "no"])
def test_config_booleans_are_strict(tmp_path, value):
    from aiworkbook.specs import load_model

    cfg = json.loads(TINY.read_text())
    cfg["tie_word_embeddings"] = value
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(SpecError, match="tie_word_embeddings"):
        load_model(str(tmp_path / "config.json"))


def test_config_boolean_false_is_read_as_false(tmp_path):
    from aiworkbook.specs import load_model

    cfg = json.loads(TINY.read_text())
    for v in (False, True):
        cfg["tie_word_embeddings"] = v
        (tmp_path / "config.json").write_text(json.dumps(cfg))
        assert load_model(str(tmp_path / "config.json")).tie_word_embeddings is v


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1.0, 0.0])
@pytest.mark.parametrize("field", ["memory_bandwidth_bps", "flops"])
def test_measured_ceilings_must_be_finite_and_positive(tmp_path, capsys, bad, field):
    node = json.loads((data_dir() / "nodes" / "cpu-highmem.json").read_text())
    gpu = json.loads((data_dir() / "gpus" / "gpus.json").read_text())["gpus"][0]
    if field == "flops":
        gpu["peak_flops_dense"] = {**gpu["peak_flops_dense"], "bf16": bad}
    else:
        gpu[field] = bad
    node["gpu_calibrated"] = gpu
    p = tmp_path / "node.json"
    p.write_text(json.dumps(node))
    for argv in (
        ["size", "tiny-llama", "--node", str(p)],
        ["size", "tiny-llama", "--gpu", _gpu_file(tmp_path, gpu)],
    ):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error:") and "Traceback" not in err and "nan/s" not in err


def _gpu_file(tmp_path: Path, gpu: dict) -> str:
    p = tmp_path / "gpu.json"
    p.write_text(json.dumps(gpu))
    return str(p)


def test_node_rates_must_be_finite(tmp_path):
    from aiworkbook.specs.node import load_node_file

    node = json.loads((data_dir() / "nodes" / "cpu-highmem.json").read_text())
    node["storage_write_bps"] = float("inf")
    p = tmp_path / "n.json"
    p.write_text(json.dumps(node))
    with pytest.raises(SpecError, match="storage_write_bps"):
        load_node_file(p)


def test_threads_are_bounded_by_the_machine(capsys):
    from aiworkbook.proofs.timing import bounded_threads, cpu_threads, machine_threads

    n = machine_threads()
    assert bounded_threads(n) == n and capsys.readouterr().err == ""
    assert bounded_threads(100_000) == n
    assert f"above the {n} logical CPUs" in capsys.readouterr().err
    with cpu_threads(100_000) as got:
        assert got == n
    for bad in (0, -3, True):
        with pytest.raises(SpecError, match="threads"):
            bounded_threads(bad)


# ---- telemetry -------------------------------------------------------------------------------------
def _monitor(*extra: str) -> list[str]:
    return [
        "monitor",
        "--replay",
        "synthetic",
        "--interval",
        "0.1",
        "--duration",
        "0.3",
        "--quiet",
        "--no-host",
        *extra,
    ]


def test_jsonl_refuses_an_existing_file_that_is_not_a_trace_log(tmp_path, capsys):
    cfg = tmp_path / "config.json"
    cfg.write_text(TINY.read_text())
    before = cfg.read_bytes()
    assert cli.main(_monitor("--jsonl", str(cfg))) == 2
    assert cfg.read_bytes() == before and "not one; nothing was changed" in capsys.readouterr().err


def test_jsonl_appends_to_an_existing_log_and_drops_a_cut_line(tmp_path):
    from aiworkbook.telemetry.replay import load_trace

    log = tmp_path / "log.jsonl"
    assert cli.main(_monitor("--jsonl", str(log))) == 0
    _, first = load_trace(log)
    with log.open("a") as fh:
        fh.write('{"t": 1.0, "wall"')  # a writer killed mid-line
    assert cli.main(_monitor("--jsonl", str(log))) == 0
    _, both = load_trace(log)
    assert len(both) >= len(first) + 2 and log.read_text().count('"kind"') == 1


def test_trace_header_with_wrong_types_is_one_line(tmp_path, capsys):
    lines = SYNTHETIC.read_text().splitlines()
    head = json.loads(lines[0])
    for key, value in (("gpus", "H100"), ("interval_s", float("nan")), ("label", 3)):
        p = tmp_path / "t.jsonl"
        p.write_text("\n".join([json.dumps({**head, key: value}), *lines[1:5]]) + "\n")
        assert cli.main(["monitor", "--replay", str(p), "--duration", "0.2"]) == 2
        err = capsys.readouterr().err
        assert f"field '{key}'" in err and "Traceback" not in err


def test_traces_never_hold_nan(tmp_path):
    from aiworkbook.telemetry.export import to_jsonl
    from aiworkbook.telemetry.na import is_na
    from aiworkbook.telemetry.replay import load_trace
    from aiworkbook.telemetry.sample import Sample

    s = Sample(t=1.0, wall=1.0, phase=None, gpus=({"index": 0, "power_w": float("nan")},), host={})
    p = to_jsonl([s], tmp_path / "t.jsonl", {"gpus": []})
    assert "NaN" not in p.read_text()
    _, back = load_trace(p)
    assert is_na(back[0].gpus[0]["power_w"])
    # a trace written by another tool with a bare NaN reads as NA, not as a number
    text = p.read_text().replace('{"na": "not a finite reading (nan)"}', "NaN")
    p.write_text(text)
    _, back = load_trace(p)
    assert is_na(back[0].gpus[0]["power_w"])


def test_no_gpu_status_is_printed_once(capsys):
    assert cli.main(["monitor", "--interval", "0.1", "--duration", "0.45", "--no-host"]) == 0
    out = capsys.readouterr()
    status = out.err.splitlines()[0]
    assert (out.out + out.err).count(status) <= 2  # once at the start, once in the summary line


def test_second_ctrl_c_during_finalisation_keeps_the_csv(tmp_path, monkeypatch):
    import aiworkbook.telemetry.export as export
    from aiworkbook.telemetry.monitor import run_monitor
    from aiworkbook.telemetry.replay import ReplayReader, trace_header
    from aiworkbook.telemetry.sampler import Sampler

    real = export.to_csv

    def to_csv_interrupted(samples, path):
        os.kill(os.getpid(), signal.SIGINT)  # the second Ctrl-C, while the files are written
        time.sleep(0.05)  # real time: a real signal's handler runs here, inside the write, not after it
        return real(samples, path)

    monkeypatch.setattr(export, "to_csv", to_csv_interrupted)
    sampler = Sampler(interval=0.1, gpu_reader=ReplayReader(SYNTHETIC), host=False)
    stop = threading.Event()
    bound = threading.Timer(30, stop.set)  # a lost signal fails the test below instead of hanging it
    bound.start()
    threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()  # the first Ctrl-C
    # Ctrl-C handled as in a terminal, also when pytest runs as a background job (SIGINT ignored)
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        run = run_monitor(
            sampler,
            interval=0.1,
            header=trace_header(sampler.gpu_reader, 0.1),
            record=tmp_path / "r.jsonl",
            csv=tmp_path / "c.csv",
            stop=stop,
        )
    finally:
        signal.signal(signal.SIGINT, old)
        bound.cancel()
    assert run.stopped_by == signal.SIGINT
    assert (tmp_path / "c.csv").read_text().count("\n") == len(run.samples) + 1
    assert len(run.written) == 2


# ---- OpenMetrics -----------------------------------------------------------------------------------
@pytest.fixture()
def sampler():
    from aiworkbook.telemetry.replay import ReplayReader
    from aiworkbook.telemetry.sampler import Sampler

    s = Sampler(interval=0.1, gpu_reader=ReplayReader(SYNTHETIC), host=True)
    s.sample_now()  # a latest sample to serve at once, without waiting for the thread's ticks
    s.start()
    yield s
    s.stop()


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_metrics_head_ipv6_and_valid_prometheus_text(sampler, host):
    from prometheus_client.parser import text_string_to_metric_families

    from aiworkbook.telemetry.openmetrics import serve

    if host == "::1" and not _has_ipv6_loopback():
        pytest.skip("this machine has no IPv6 loopback")
    srv = serve(sampler, host, 0)
    try:
        port = srv.server_address[1]
        url = f"http://[{host}]:{port}/metrics" if ":" in host else f"http://{host}:{port}/metrics"
        head = urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=5)
        assert head.status == 200 and int(head.headers["Content-Length"]) > 0 and head.read() == b""
        body = urllib.request.urlopen(url, timeout=5).read().decode()
        names = {f.name for f in text_string_to_metric_families(body)}
        assert "DCGM_FI_DEV_POWER_USAGE" in names and "aiworkbook_telemetry_info" in names
    finally:
        srv.shutdown()
        srv.server_close()


def test_metrics_text_spells_non_finite_values_for_prometheus():
    from aiworkbook.telemetry.openmetrics import render
    from aiworkbook.telemetry.sample import Sample

    s = Sample(
        t=1.0,
        wall=1.0,
        phase=None,
        gpus=({"index": 0, "power_w": float("nan")},),
        host={"cpu_pct": float("inf")},
    )
    text = render(s, [{"index": 0, "name": "x", "uuid": "u"}])
    assert "nan" not in text.replace("NaN", "") and " NaN" in text and " +Inf" in text


def test_idle_connections_time_out_and_resets_print_nothing(sampler, monkeypatch, capfd):
    import aiworkbook.telemetry.openmetrics as om

    monkeypatch.setattr(om, "CONNECTION_TIMEOUT_S", 0.3)
    srv = om.serve(sampler, "127.0.0.1", 0)
    try:
        addr = srv.server_address
        before = threading.active_count()
        idle = [socket.create_connection(addr) for _ in range(50)]
        time.sleep(0.2)  # real time: the real server accepts and starts its connection threads
        assert threading.active_count() <= before + om.MAX_CONNECTIONS
        for s in idle[:10]:  # clients that reset mid-connection
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            s.close()
        time.sleep(1.0)  # real time: the server's own socket timeout (0.3 s) must pass on real sockets
        assert threading.active_count() <= before + 1  # every idle connection's thread let go
        for s in idle[10:]:
            s.close()
        body = urllib.request.urlopen(f"http://127.0.0.1:{addr[1]}/metrics", timeout=5).read()
        assert body  # still serving
    finally:
        srv.shutdown()
        srv.server_close()
    assert "Traceback" not in capfd.readouterr().err


# ---- sizes that would overflow, and one list of allowed values per option ---------------------------
def test_huge_sequence_is_refused_not_answered_wrongly(capsys):
    rc = cli.main(["fit", "llama-3-8b", "--mode", "train", "--seq", "1000000000000", "--json"])
    out = capsys.readouterr().out
    assert rc == 2 or json.loads(out)["max_batch"] in (0, None)


def test_every_attention_value_named_as_allowed_is_accepted(capsys):
    assert cli.main(["prove", "vram", "tiny-llama", "--attention", "bogus"]) == 2
    allowed = capsys.readouterr().err.rsplit("allowed:", 1)[1].strip()
    # an optional choice reads "empty (the default) or eager, sdpa, flash": empty is the family's default
    assert allowed.startswith("empty (the default) or ")
    for value in allowed.removeprefix("empty (the default) or ").split(", "):
        rc = cli.main(["prove", "vram", "tiny-llama", "--quick", "--device", "cpu", "--attention", value])
        err = capsys.readouterr().err
        assert "field 'attention'" not in err, (value, rc)
