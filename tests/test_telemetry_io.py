"""Export, recorded-trace replay, the OpenMetrics endpoint and `aiworkbook monitor`."""

from __future__ import annotations

import math
import urllib.request

import pytest
from fake_nvml import DATACENTER, MIG, FakeNVML
from prometheus_client.parser import text_string_to_metric_families

from aiworkbook.cli import main
from aiworkbook.telemetry.export import to_csv, to_dataframe, to_jsonl
from aiworkbook.telemetry.gpu_reader import GPUReader
from aiworkbook.telemetry.na import NA
from aiworkbook.telemetry.openmetrics import parse_bind, render, serve
from aiworkbook.telemetry.replay import ReplayReader, load_trace, shipped_traces, trace_header, trace_label
from aiworkbook.telemetry.sampler import Sampler


@pytest.fixture
def recorded(tmp_path):
    with FakeNVML([DATACENTER, MIG]) as fake:
        reader = GPUReader(clock=fake.clock)
        s = Sampler(gpu_reader=reader, host=False, events=False, clock=fake.clock)
        for phase in ("load", "decode", "decode"):
            with s.phase(phase):
                s.sample_now()
            fake.advance(1.0)
        path = to_jsonl(s.samples(), tmp_path / "t.jsonl", trace_header(reader, 1.0))
        yield path, s, reader


def test_jsonl_trace_round_trips_with_na(recorded):
    path, s, _ = recorded
    header, samples = load_trace(path)
    assert header["label"].startswith("recorded on NVIDIA H100 80GB HBM3, ")
    assert header["gpus"][1]["mig_mode"] == "enabled"
    assert [x.phase for x in samples] == ["load", "decode", "decode"]
    assert samples[1].gpus[1]["util_gpu_pct"] == NA("not supported")
    assert samples == s.samples()


def test_dataframe_and_csv(recorded, tmp_path):
    _, s, _ = recorded
    df = to_dataframe(s.samples())
    assert len(df) == 3 and df["gpu0.power_w"].tolist() == [412.0] * 3
    assert math.isnan(df["gpu1.util_gpu_pct"][0]) and df["gpu0.throttle_reasons"][0] == "sw_power_cap"
    assert df["phase"].tolist() == ["load", "decode", "decode"]
    text = to_csv(s.samples(), tmp_path / "s.csv").read_text()
    assert text.splitlines()[0].startswith("t,wall,phase,gpu0.") and len(text.splitlines()) == 4


def test_replay_follows_the_clock_and_loops(recorded):
    path, _, _ = recorded
    now = [0.0]
    r = ReplayReader(path, clock=lambda: now[0])
    assert r.status().startswith("replay: recorded on NVIDIA H100") and r.count() == 2
    assert r.identities()[0]["uuid"] == DATACENTER["uuid"]
    assert r.capabilities()[1]["utilization"] == "not supported"
    e0 = r.read(0)["energy_mj"]
    now[0] = 1.2
    assert r.read(0)["energy_mj"] == e0 + 412_000
    now[0] = 3.0  # the 3-sample trace spans 2 s + one interval: wraps to the start
    assert r.read(0)["energy_mj"] == e0
    assert isinstance(r.history(0), NA)


def test_shipped_trace_is_labelled_synthetic_and_replays():
    traces = shipped_traces()
    assert traces, "data/traces/ ships at least one trace"
    synthetic = [p for p in traces if "synthetic" in p.name]
    header, samples = load_trace(synthetic[0])
    assert (
        header["source"] == "synthetic" and "synthetic" in header["label"] and "SYNTHETIC" in header["note"]
    )
    assert {"idle", "prefill", "decode"} <= {s.phase for s in samples}
    s = Sampler(gpu_reader=ReplayReader(synthetic[0]), host=False, events=False)
    assert s.sample_now().gpus[0]["mem_total_bytes"] == 85_520_809_984


def test_corrupt_trace_names_the_file(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "something-else", "schema_version": 1}\n')
    with pytest.raises(ValueError, match="bad.jsonl.*kind"):
        load_trace(bad)


def _parsed(text: str) -> dict[str, dict[tuple, float]]:
    """Exposition text read back by prometheus_client's parser: family -> {sorted labels: value}."""
    return {
        f.name: {tuple(sorted(s.labels.items())): s.value for s in f.samples}
        for f in text_string_to_metric_families(text)
    }


def test_openmetrics_uses_dcgm_names_and_omits_na(recorded):
    _, s, reader = recorded
    text = render(s.latest(), reader.identities(), [{"type": "xid", "gpu": 1, "xid": 79}], hostname="node1")
    got = _parsed(text)
    gpu0 = {"gpu": "0", "UUID": "GPU-00000000-fake-h100", "device": "nvidia0"}
    gpu0 = tuple(sorted({**gpu0, "modelName": "NVIDIA H100 80GB HBM3", "Hostname": "node1"}.items()))
    assert got["DCGM_FI_DEV_POWER_USAGE"][gpu0] == 412.0
    # dcgm-exporter's counters keep their names (no _total); prometheus_client's text format would
    # append _total to a counter's TYPE line, so they are untyped
    assert "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION untyped" in text
    assert gpu0 in got["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]
    info = (("Hostname", "node1"), ("label", ""), ("source", "live"))
    assert got["aiworkbook_telemetry_info"] == {info: 1.0}
    replayed = _parsed(render(s.latest(), reader.identities(), hostname="n", replay_label="synthetic trace"))
    info = (("Hostname", "n"), ("label", "synthetic trace"), ("source", "replay"))
    assert replayed["aiworkbook_telemetry_info"] == {info: 1.0}
    assert [dict(k)["gpu"] for k in got["DCGM_FI_DEV_GPU_UTIL"]] == ["0"]
    xids = {dict(k)["gpu"]: v for k, v in got["DCGM_FI_DEV_XID_ERRORS"].items()}
    assert xids["1"] == 79 and xids["0"] == 0
    used_mib = DATACENTER["mem_used"] / 2**20
    assert got["DCGM_FI_DEV_FB_USED"][gpu0] == pytest.approx(used_mib)
    assert parse_bind("0.0.0.0:9400") == ("0.0.0.0", 9400) and parse_bind("9400") == ("127.0.0.1", 9400)
    with pytest.raises(ValueError, match="serve"):
        parse_bind("localhost:http")


def test_metrics_endpoint_serves_the_latest_sample(recorded):
    _, s, _ = recorded
    server = serve(s, "127.0.0.1", 0)
    try:
        port = server.server_address[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            body = resp.read().decode()
            assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        assert "DCGM_FI_DEV_SM_CLOCK" in body
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/other", timeout=5)
    finally:
        server.shutdown()


def test_monitor_command_replays_logs_and_records(tmp_path, capsys):
    log, rec = tmp_path / "log.jsonl", tmp_path / "rec.jsonl"
    rc = main(["monitor", "--replay", "synthetic", "--interval", "0.1", "--duration", "0.35", "--quiet",
               "--no-host", "--jsonl", str(log), "--record", str(rec)])  # fmt: skip
    out = capsys.readouterr()
    assert rc == 0
    header, rows = load_trace(log)
    _, rec_rows = load_trace(rec)
    assert header["source"] == "replay" and "synthetic" in header["gpu_status"]
    assert len(rows) == len(rec_rows) >= 3
    assert "gpu0: energy" in out.out and "samples over" in out.out
    # a replayed synthetic trace is never labelled as a recording, here or when replayed again
    rec_header, _ = load_trace(rec)
    shipped, _ = load_trace(next(p for p in shipped_traces() if "synthetic" in p.name))
    assert rec_header["replay_of"]["source"] == "synthetic"
    assert rec_header["label"] == f"replay of: {shipped['label']}"
    assert "recorded on" not in out.err and "replay of: synthetic trace (not measured)" in out.err
    again = ReplayReader(rec)
    assert again.label == rec_header["label"]
    assert trace_header(again, 0.1, source="replay")["label"] == rec_header["label"]  # not nested


def test_trace_label_for_a_replay_header_without_origin():
    assert trace_label({"source": "replay", "gpu": "NVIDIA H100 80GB HBM3"}).startswith("replay of:")


def test_monitor_rejects_bad_input(capsys):
    assert main(["monitor", "--interval", "0.01", "--duration", "1"]) == 2
    assert "interval" in capsys.readouterr().err
    assert main(["monitor", "--duration", "-1"]) == 2


def _never_sample(monkeypatch) -> None:
    """Fail (instead of looping or waiting) when the monitor gets as far as sampling."""
    import aiworkbook.telemetry.monitor as monitor

    def sampled(*a, **k):
        raise AssertionError("the monitor started sampling before rejecting its input")

    monkeypatch.setattr(monitor, "run_monitor", sampled)


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_monitor_rejects_non_finite_duration(value, capsys, monkeypatch):
    """--duration nan used to pass validation and loop forever with sleep(0)."""
    _never_sample(monkeypatch)
    assert main(["monitor", "--replay", "synthetic", "--duration", value, "--quiet"]) == 2
    assert "duration" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--record", "--csv", "--jsonl"])
@pytest.mark.parametrize("where", ["folder", "under_a_file"])
def test_monitor_checks_outputs_before_sampling(tmp_path, capsys, monkeypatch, flag, where):
    """A path that cannot be written fails at once (exit 2, naming the option), not after sampling."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    target = tmp_path if where == "folder" else blocker / "out.jsonl"
    _never_sample(monkeypatch)
    rc = main(["monitor", "--replay", "synthetic", "--interval", "0.1", "--duration", "5", "--quiet",
               "--no-host", flag, str(target)])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 2 and flag.lstrip("-") in err, err


def test_monitor_serve_on_a_bad_address_is_a_clean_error(tmp_path, capsys):
    import socket

    log = tmp_path / "log.jsonl"
    rc = main(["monitor", "--replay", "synthetic", "--duration", "0.2", "--quiet", "--no-host",
               "--serve", "nosuchhost.invalid:9400", "--jsonl", str(log)])  # fmt: skip
    assert rc == 2 and "serve" in capsys.readouterr().err and not log.exists()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        rc = main(["monitor", "--replay", "synthetic", "--duration", "0.2", "--quiet", "--no-host",
                   "--serve", f"127.0.0.1:{port}"])  # fmt: skip
        err = capsys.readouterr().err
    assert rc == 2 and "field 'serve'" in err and "Traceback" not in err


def test_monitor_without_gpu_still_shows_the_host(capsys):
    with FakeNVML([DATACENTER], driver=False):
        assert main(["monitor", "--interval", "0.1", "--duration", "0.25"]) == 0
    out = capsys.readouterr().out
    assert "no NVIDIA GPU found (NVIDIA driver not loaded)" in out and "host  cpu" in out


def test_monitor_summary_names_why_energy_is_missing(capsys):
    from fake_nvml import NS

    gpu = {
        **DATACENTER,
        "unsupported": {"nvmlDeviceGetTotalEnergyConsumption": NS, "nvmlDeviceGetPowerUsage": NS},
    }
    with FakeNVML([gpu]):
        assert main(["monitor", "--interval", "0.1", "--duration", "0.3", "--quiet", "--no-host"]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("gpu0: energy"))
    assert "n/a (" in line and "{" not in line and "'na'" not in line, line


def test_jsonl_log_is_a_live_log_readable_before_close(tmp_path):
    from aiworkbook.telemetry.export import JsonlLog
    from aiworkbook.telemetry.sample import Sample

    path = tmp_path / "live.jsonl"
    log = JsonlLog(path, {"source": "recorded", "gpu": None})
    for t in (1.0, 2.0):
        log.write(Sample(t=t, wall=t))
    header, samples = load_trace(path)  # still open: every written sample is already there
    assert [s.t for s in samples] == [1.0, 2.0] and header["kind"] == "aiworkbook.telemetry.trace"
    log.close()
