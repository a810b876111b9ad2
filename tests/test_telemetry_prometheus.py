"""The fleet view against a real Prometheus (Debian's package, `make test` installs it): two
`monitor --serve` endpoints replaying different traces, scraped every second; the reader sees both
nodes with their own values in the project's units, and a node whose exporter stops reads "no data
since <time>" while the other stays current. Unreachable servers and answers that are not
Prometheus's fail with one clear error naming the URL."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from prometheus_fleet import NODES, Fleet, free_port, prometheus_binary, wait_for

from aiworkbook.errors import SpecError
from aiworkbook.telemetry.prometheus import PrometheusError, PrometheusReader, format_fleet


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Iterator[Fleet]:
    binary = prometheus_binary()
    if binary is None:
        pytest.skip("Debian's prometheus is not at /usr/bin/prometheus and apt-get could not install it")
    f = Fleet(tmp=tmp_path_factory.mktemp("fleet"), binary=binary)
    try:
        for node in NODES:
            f.start_exporter(node)
        f.start_prometheus()
        yield f
    finally:
        f.close()


def _both_nodes(reader: PrometheusReader, n_points: int = 2):
    """The fleet view once both nodes' GPU utilisation has `n_points` points (None until then)."""
    view = reader.fleet(window_s=60, step_s=1)
    util = view.of("util_gpu_pct")
    if len({s.node for s in util}) == 2 and all(len(s.points) >= n_points for s in util):
        return view
    return None


@pytest.mark.timeout(240)
def test_the_reader_sees_both_nodes_with_their_own_values(fleet):
    reader = PrometheusReader(fleet.url, timeout_s=5)
    view = wait_for(lambda: _both_nodes(reader), "both nodes' data in Prometheus")
    targets = {node: t for node, (_p, t) in fleet.exporters.items()}
    assert view.nodes() == sorted(targets.values())
    for node, target in targets.items():
        for field_name, expected in NODES[node].items():
            (s,) = [s for s in view.of(field_name) if s.node == target]
            assert s.gpu == "0" and s.labels["modelName"] == f"Test GPU {node}"
            assert [v for _t, v in s.points] == pytest.approx([expected] * len(s.points)), (node, field_name)
            assert not view.is_stale(s)
        assert view.sources[target] == f"replay: synthetic trace (not measured), node {node}"
    assert view.notes() == []
    assert "through Prometheus at " + fleet.url in format_fleet(view)
    rows = view.rows("mem_used_bytes")  # GiB, as the local monitor draws memory
    assert {r["value"] for r in rows} == {10.0, 60.0}


@pytest.mark.timeout(120)
def test_prometheus_scrapes_the_prometheus_client_text_without_error(fleet):
    """The body prometheus_client writes for `monitor --serve` is what a real Prometheus ingests: the
    target is up with no scrape error, and the metadata it kept types our gauges as gauges."""
    import json
    import urllib.request

    target = fleet.exporters["a"][1]  # node a is never stopped

    def api(path: str):
        with urllib.request.urlopen(fleet.url + path, timeout=5) as r:
            return json.loads(r.read())["data"]

    def scraped():
        ts = [t for t in api("/api/v1/targets")["activeTargets"] if t["labels"]["instance"] == target]
        return ts if ts and ts[0]["health"] == "up" else None

    (t,) = wait_for(scraped, "node a up in Prometheus")
    assert t["lastError"] == ""
    meta = wait_for(lambda: api("/api/v1/metadata"), "metadata in Prometheus")
    types = {name: entries[0]["type"] for name, entries in meta.items()}
    assert types["DCGM_FI_DEV_GPU_UTIL"] == "gauge" and types["aiworkbook_telemetry_info"] == "gauge"
    assert types["DCGM_FI_DEV_XID_ERRORS"] == "gauge"


@pytest.mark.timeout(240)
def test_a_stopped_node_reads_no_data_since_its_last_scrape(fleet):
    reader = PrometheusReader(fleet.url, timeout_s=5)
    wait_for(lambda: _both_nodes(reader), "both nodes' data in Prometheus")
    stopped = fleet.exporters["b"][1]
    fleet.stop_exporter("b")
    t_stop = time.time()

    def b_stale():
        view = reader.fleet(window_s=60, step_s=1, stale_after_s=3)
        return view if {s.node for s in view.stale()} == {stopped} else None

    view = wait_for(b_stale, "node b's series stale after its exporter stopped", timeout=30)
    b = [s for s in view.series if s.node == stopped]
    assert len(b) == 4 and all(s.last_time is not None and s.last_time <= t_stop + 1.5 for s in b)
    assert all(not view.is_stale(s) for s in view.series if s.node != stopped)
    assert len(view.notes()) == 4
    assert all(n.startswith(f"{stopped} GPU 0 ") and "no data since 20" in n for n in view.notes())
    table = format_fleet(view)
    assert "no data since" in table and stopped in table


def test_the_cli_prints_the_fleet(fleet, capsys):
    from aiworkbook.cli import main

    reader = PrometheusReader(fleet.url)
    wait_for(lambda: reader.fleet(window_s=60, step_s=1).of("util_gpu_pct"), "data in Prometheus")
    assert main(["monitor", "--prometheus", fleet.url, "--window", "60", "--json"]) == 0
    import json

    doc = json.loads(capsys.readouterr().out)
    assert doc["url"] == fleet.url and doc["series"]
    assert {s["field"] for s in doc["series"]} == {"util_gpu_pct", "mem_used_bytes", "power_w", "temp_gpu_c"}


def test_an_exporter_is_not_a_prometheus_server(fleet):
    target = fleet.exporters["a"][1]
    with pytest.raises(PrometheusError, match=f"http://{target}.*not Prometheus"):
        PrometheusReader(f"http://{target}").fleet(window_s=60)


def test_a_bad_query_says_prometheus_error(fleet):
    with pytest.raises(PrometheusError, match=rf"{fleet.url}.*bad_data"):
        PrometheusReader(fleet.url).query("rate(")


def test_nothing_listening_names_the_url(capsys):
    from aiworkbook.cli import main

    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(PrometheusError, match=rf"{url}: no answer from a Prometheus server"):
        PrometheusReader(url, timeout_s=2).fleet()
    assert main(["monitor", "--prometheus", url]) == 1
    err = capsys.readouterr().err
    assert url in err and "Traceback" not in err


@pytest.mark.parametrize("url", ["", "127.0.0.1:9090", "ftp://x", "http://", "http://h:9090/?q=1"])
def test_a_url_that_is_not_http_is_bad_input(url, capsys):
    from aiworkbook.cli import main

    with pytest.raises(SpecError, match="prometheus"):
        PrometheusReader(url)
    if url:
        assert main(["monitor", "--prometheus", url]) == 2
        assert "prometheus" in capsys.readouterr().err


def test_the_fleet_read_does_not_mix_with_this_nodes_options(capsys):
    from aiworkbook.cli import main

    assert main(["monitor", "--prometheus", "http://127.0.0.1:9", "--serve", "127.0.0.1:0"]) == 2
    assert "--serve read this node" in capsys.readouterr().err
    assert main(["monitor", "--prometheus", "http://127.0.0.1:9", "--window", "5"]) == 2
    assert "window_s" in capsys.readouterr().err


def test_a_recorded_answer_reads_like_a_live_one():
    """The opener seam: a canned query_range answer (as the notebook uses) goes through the same parsing."""
    import json

    answer = {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {
                    "metric": {"__name__": "DCGM_FI_DEV_FB_USED", "instance": "n1:9400", "gpu": "1"},
                    "values": [[100.0, "1024"], [101.0, "2048"]],
                }
            ],
        },
    }

    def opener(url: str, timeout: float) -> bytes:
        if "query_range" in url and "FB_USED" in url:
            return json.dumps(answer).encode()
        return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": []}}).encode()

    view = PrometheusReader("http://prom.example:9090", opener=opener, clock=lambda: 120.0).fleet(window_s=60)
    (s,) = view.series
    assert (s.node, s.gpu, s.field) == ("n1:9400", "1", "mem_used_bytes")
    assert s.points == ((100.0, 2**30), (101.0, 2 * 2**30))  # MiB back to bytes
    assert view.is_stale(s) and view.notes() == [
        "n1:9400 GPU 1 mem_used_bytes: no data since 1970-01-01 00:01:41 UTC"
    ]


# ---- the fleet mode of the monitor dashboard (widgets/fleet_monitor.py) ----------------------------
def _title(view) -> str:
    return str(view.spec["title"])


@pytest.mark.timeout(240)
def test_the_fleet_widget_charts_every_node_from_prometheus(fleet):
    from aiworkbook.widgets import FleetMonitor

    reader = PrometheusReader(fleet.url)
    wait_for(lambda: _both_nodes(reader), "both nodes' data in Prometheus")
    m = FleetMonitor(reader=reader, window_s=60, autorefresh=False)
    try:
        assert {"aiwb-fleet-monitor", "aiwb-ready"} <= set(m._dom_classes)
        m.refresh()
        assert m.error == ""
        targets = sorted(t for _p, t in fleet.exporters.values())
        assert f"2 node(s), 2 GPU(s) through Prometheus at {fleet.url}" in m.headline.value
        for f, view in m.charts.items():
            title = _title(view)
            assert f"Prometheus at {fleet.url}" in title and "live" not in title, title
            series = {r["series"] for r in view.spec["data"]["values"]}
            assert {s.split(" GPU ")[0] for s in series} == set(targets), (f, series)
        assert m.result["url"] == fleet.url and len(m.result["series"]) >= 8
    finally:
        m.close()


def test_the_fleet_widget_shows_an_unreachable_server_as_an_error():
    from aiworkbook.widgets import FleetMonitor

    url = f"http://127.0.0.1:{free_port()}"
    m = FleetMonitor(url, autorefresh=False)
    try:
        m.refresh_async()  # the button's path: a worker thread, the error shown in the widget
        deadline = time.monotonic() + 20
        while not m.error and time.monotonic() < deadline:
            time.sleep(0.1)
        assert url in m.error and "no answer from a Prometheus server" in m.error
        assert m.error_area.layout.display != "none" and "Traceback" not in m.error_area.value
    finally:
        m.close()
    with pytest.raises(SpecError, match="refresh_s"):
        FleetMonitor(url, refresh_s=0.1, autorefresh=False)


# ---- recorded answers (notebook 08 without a server) ------------------------------------------------
def test_a_recording_replays_exactly_what_the_server_said(fleet, tmp_path):
    from aiworkbook.telemetry.prometheus import record_fleet, recorded_reader

    reader = PrometheusReader(fleet.url, node_label="node")  # the relabelled node name of each target
    wait_for(lambda: _both_nodes(reader), "both nodes' data in Prometheus")
    live = record_fleet(reader, tmp_path / "rec.json", window_s=60)
    assert live.nodes() == ["gpu-node-a", "gpu-node-b"] and live.recorded is None
    again = recorded_reader(tmp_path / "rec.json").fleet(window_s=60)
    assert [(s.node, s.field, s.points) for s in again.series] == [
        (s.node, s.field, s.points) for s in live.series
    ]
    assert again.source_label().startswith("recorded 20") and fleet.url in again.source_label()


def test_the_shipped_recording_shows_a_stopped_node():
    from aiworkbook.paths import data_dir
    from aiworkbook.telemetry.prometheus import recorded_reader

    view = recorded_reader(data_dir() / "prometheus" / "fleet-two-nodes.json").fleet(window_s=90)
    assert view.nodes() == ["gpu-node-a", "gpu-node-b"]
    assert {s.node for s in view.stale()} == {"gpu-node-b"} and len(view.notes()) == 4
    a = [s for s in view.of("power_w") if s.node == "gpu-node-a"]
    assert a and {v for _t, v in a[0].points} == {NODES["a"]["power_w"]}
    assert "recorded" in view.source_label() and "recorded" in format_fleet(view).splitlines()[0]


def test_a_recording_that_is_not_one_is_refused(tmp_path):
    from aiworkbook.telemetry.prometheus import recorded_reader

    bad = tmp_path / "x.json"
    bad.write_text('{"kind": "something else", "schema_version": 1}')
    with pytest.raises(SpecError, match="kind"):
        recorded_reader(bad)


def test_the_fleet_widget_names_the_stopped_node_in_the_legend_and_the_table():
    from aiworkbook.widgets import FleetMonitor

    from aiworkbook.paths import data_dir
    from aiworkbook.telemetry.prometheus import recorded_reader

    reader = recorded_reader(data_dir() / "prometheus" / "fleet-two-nodes.json")
    m = FleetMonitor(reader=reader, window_s=90, autorefresh=False)
    try:
        m.refresh()
        series = {r["series"] for r in m.charts["power_w"].spec["data"]["values"]}
        assert "gpu-node-a GPU 0" in series
        (b,) = [s for s in series if s.startswith("gpu-node-b")]
        assert "(no data since 20" in b
        assert "No data since" in m.notes.value and "gpu-node-b GPU 0" in m.notes.value
        assert m.notes.value.count("<tr>") == 1 + 4  # the header and node b's four metrics
        assert "recorded" in m.headline.value and all("recorded" in _title(v) for v in m.charts.values())
    finally:
        m.close()


def test_app_monitor_takes_the_prometheus_url_and_refuses_others():
    """`aiworkbook app monitor --prometheus URL` hands the URL to the dashboard (the viewer cannot pick
    one); another dashboard, or a URL that is not http(s), is bad input."""
    from aiworkbook.cli.app_cmds import PROMETHEUS_ENV, launch
    from aiworkbook.errors import SpecError

    assert (
        launch("monitor", prometheus="http://127.0.0.1:9090").env[PROMETHEUS_ENV] == "http://127.0.0.1:9090"
    )
    assert PROMETHEUS_ENV not in launch("monitor").env
    with pytest.raises(SpecError, match="only with the monitor dashboard"):
        launch("sizing", prometheus="http://127.0.0.1:9090")
    for bad in ("ftp://x", "127.0.0.1:9090", "http://"):
        with pytest.raises(SpecError, match="prometheus"):
            launch("monitor", prometheus=bad)
