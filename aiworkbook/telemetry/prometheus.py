"""A fleet read through a Prometheus server's HTTP API: the dcgm-exporter series that `monitor --serve`
(aiworkbook.telemetry.openmetrics) and NVIDIA's dcgm-exporter publish, for every node and GPU the
server scrapes, converted back to this project's units (bytes, W, %, °C).

Each series says when it last had data: a node whose exporter stopped answering gets Prometheus's
staleness marker on the next failed scrape (https://prometheus.io/docs/prometheus/latest/querying/basics/#staleness)
and its line ends there; the view names it "no data since <time>" instead of drawing its last value
as if it were current. The readings are Prometheus's (scraped from the nodes), never this machine's.

API: https://prometheus.io/docs/prometheus/latest/querying/api/ (/api/v1/query, /api/v1/query_range).
Standard library only (urllib), with a timeout on every request.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import time
import urllib.error
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as _field
from typing import Any

from aiworkbook.errors import SpecError, printable
from aiworkbook.message import Msg, quoted
from aiworkbook.telemetry.openmetrics import GPU_METRICS

#: the charts of the fleet view, as the local monitor draws them (widgets/gpu_monitor.py GPU_METRICS)
FLEET_FIELDS: tuple[str, ...] = ("util_gpu_pct", "mem_used_bytes", "power_w", "temp_gpu_c")
#: sample field -> (dcgm-exporter metric name, scale from the field's unit to the exported one)
EXPORTED: dict[str, tuple[str, float]] = {f: (name, scale) for name, _t, _h, f, scale in GPU_METRICS}
#: the most points one range query asks for (Prometheus refuses more than 11,000 per series)
MAX_POINTS = 1_000
#: the largest answer read from the server, and the most series one fleet view takes: beyond them the
#: view is refused, saying so (700,000 series took 2.5 min and 2.4 GB to draw as text)
MAX_ANSWER_BYTES = 64 * 2**20
MAX_SERIES = 20_000
#: points stamped outside 1970..9999 (a -1e11 or 400-digit time) are not readings: left out
LATEST_TIME = 253402300799.0


class PrometheusError(RuntimeError):
    """The server could not be read: no answer, an HTTP error, or an answer that is not Prometheus's."""


def check_url(url: Any) -> str:
    """The server's base URL without a trailing slash; SpecError unless it is http(s)://host[:port][/path]."""
    text = str(url or "").strip()
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise SpecError(
            "prometheus", url, "an http(s) URL of a Prometheus server, e.g. http://127.0.0.1:9090"
        )
    return text.rstrip("/")


def utc(ts: float) -> str:
    """A Unix time as people read it in a fleet: 'YYYY-MM-DD HH:MM:SS UTC'."""
    return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


@dataclass(frozen=True)
class Series:
    """One GPU's one metric on one node: (Unix time, value in the project's unit) points, oldest first."""

    node: str
    gpu: str
    field: str
    points: tuple[tuple[float, float], ...]
    labels: dict[str, str] = _field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.node} GPU {self.gpu}"

    @property
    def last_time(self) -> float | None:
        return self.points[-1][0] if self.points else None

    @property
    def last_value(self) -> float | None:
        return self.points[-1][1] if self.points else None


@dataclass(frozen=True)
class FleetView:
    """What Prometheus held for the fleet between `start` and `end` (Unix seconds), one query per metric.

    `stale_after_s`: a series whose last point is older than this at `end` has "no data since" it.
    `sources`: per node, where its exporter said the readings came from (aiworkbook_telemetry_info:
    "live" or "replay: <label>"); absent for a plain dcgm-exporter.
    """

    url: str
    start: float
    end: float
    step: float
    stale_after_s: float
    node_label: str
    series: tuple[Series, ...]
    sources: dict[str, str] = _field(default_factory=dict)
    recorded: str | None = None  # "recorded <time>" when the answers were replayed from a file

    def nodes(self) -> list[str]:
        return sorted({s.node for s in self.series})

    def of(self, field_name: str) -> list[Series]:
        return [s for s in self.series if s.field == field_name]

    def is_stale(self, s: Series) -> bool:
        last = s.last_time
        return last is None or self.end - last > self.stale_after_s

    def stale(self) -> list[Series]:
        """The series that stopped: their node has not reported them for longer than stale_after_s."""
        return [s for s in self.series if self.is_stale(s)]

    def notes(self) -> list[str]:
        """One honest line per stopped series: '<node> GPU <n> <field>: no data since <time>'."""
        return [
            f"{s.name} {s.field}: no data since {utc(s.last_time) if s.last_time else 'the window began'}"
            for s in self.stale()
        ]

    def rows(self, field_name: str) -> list[dict[str, Any]]:
        """Long rows for a chart: t_s (seconds since `start`), series ('<node> GPU <n>', with "(no data
        since <time>)" when it stopped), value (GiB for byte fields, as the local monitor draws them)."""
        from aiworkbook.units import GiB

        div = GiB if field_name.endswith("_bytes") else 1
        out = []
        for s in self.of(field_name):
            name = s.name
            if self.is_stale(s) and s.last_time is not None:  # the legend itself says the line stopped
                name = f"{s.name} (no data since {utc(s.last_time)})"
            out += [
                {"t_s": t - self.start, "series": name, "value": v / div, "phase": ""} for t, v in s.points
            ]
        return out

    def source_label(self) -> str:
        """What the charts' titles say: the server the readings came through, and replays named."""
        replaying = [n for n, v in self.sources.items() if v != "live"]
        where = f"Prometheus at {self.url}"
        if self.recorded:
            where = f"{self.recorded} from {where}"
        if replaying:  # each node's own label is in `sources` (and the JSON); the title stays short
            where += f" ({len(replaying)} of {len(self.sources)} node(s) replay a trace, not measured)"
        return where

    def to_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "start": self.start,
            "end": self.end,
            "step_s": self.step,
            "stale_after_s": self.stale_after_s,
            "node_label": self.node_label,
            "sources": dict(self.sources),
            "recorded": self.recorded,
            "series": [
                {
                    "node": s.node,
                    "gpu": s.gpu,
                    "model": s.labels.get("modelName"),
                    "field": s.field,
                    "last_time": s.last_time,
                    "last_value": s.last_value,
                    "stale": self.is_stale(s),
                    "points": len(s.points),
                }
                for s in self.series
            ],
            "notes": self.notes(),
        }


Opener = Callable[[str, float], bytes]


def _urlopen(url: str, timeout: float) -> bytes:
    """The body of GET `url` (any status: Prometheus explains a bad query in a JSON body), within
    `timeout` seconds for the whole answer and MAX_ANSWER_BYTES (aiworkbook.httpget)."""
    from aiworkbook.httpget import FetchError, get

    answer = get(url, deadline_s=timeout, max_bytes=MAX_ANSWER_BYTES)
    if answer.status >= 400 and not answer.body:
        raise FetchError(f"HTTP {answer.status}")
    return answer.body


class PrometheusReader:
    """Reads one Prometheus server. `node_label`: the label that names a node ("instance", the scrape
    target, by default; "Hostname" or a relabelled "node" on Kubernetes). `opener(url, timeout)` returns
    the body (tests and recorded answers)."""

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = 5.0,
        node_label: str = "instance",
        opener: Opener | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.url = check_url(url)
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or not 0 < timeout_s <= 300:
            raise SpecError("timeout_s", timeout_s, Msg("allowed.timeout_300"))
        if not isinstance(node_label, str) or not node_label.replace("_", "a").isalnum():
            raise SpecError("node_label", node_label, Msg("allowed.prom_label"))
        self.timeout_s = float(timeout_s)
        self.node_label = node_label
        self._open = opener or _urlopen
        self._clock = clock
        self.recorded: str | None = None  # set by recorded_reader: every view says it was recorded

    # -- the HTTP API --------------------------------------------------------------------------
    def _get(self, path: str, params: dict[str, Any]) -> Any:
        url = f"{self.url}{path}?{urllib.parse.urlencode(params)}"
        try:
            body = self._open(url, self.timeout_s)
        except urllib.error.HTTPError as exc:  # Prometheus answers bad queries with 400/422 and a JSON body
            try:
                body = exc.read()
            except Exception:  # noqa: BLE001 (the status alone is the message then)
                body = b""
            if not body:
                said = Msg(
                    "prometheus.http", url=self.url, code=exc.code, reason=quoted(exc.reason), path=path
                )
                raise PrometheusError(said) from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            said_why = exc.args[0] if len(exc.args) == 1 and isinstance(exc.args[0], Msg) else None
            why = said_why or quoted(printable(str(getattr(exc, "reason", None) or exc), 300))
            raise PrometheusError(
                Msg("prometheus.no_answer", url=self.url, why=why, timeout=self.timeout_s)
            ) from None
        try:
            doc = json.loads(body)
        except (ValueError, UnicodeDecodeError, RecursionError):  # nested thousands deep: not the API
            raise PrometheusError(Msg("prometheus.not_json", url=f"{self.url}{path}")) from None
        if not isinstance(doc, dict) or doc.get("status") not in ("success", "error"):
            raise PrometheusError(Msg("prometheus.not_api", url=f"{self.url}{path}"))
        if doc["status"] == "error":
            kind, error = (
                printable(str(doc.get("errorType", "error")), 60),
                printable(str(doc.get("error", "")), 300),
            )
            raise PrometheusError(
                Msg("prometheus.error", url=f"{self.url}{path}", error=quoted(f"{kind}: {error}"))
            )
        data = doc.get("data")
        if not isinstance(data, dict) or not isinstance(data.get("result"), list):
            raise PrometheusError(f"{self.url}{path}: the answer has no data.result list")
        return data["result"]

    def query(self, promql: str, at: float | None = None) -> list[dict[str, Any]]:
        """/api/v1/query: an instant vector, [{"metric": labels, "value": [t, "v"]}, ...]."""
        params: dict[str, Any] = {"query": promql}
        if at is not None:
            params["time"] = f"{at:.3f}"
        return self._get("/api/v1/query", params)

    def query_range(self, promql: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
        """/api/v1/query_range: a matrix, [{"metric": labels, "values": [[t, "v"], ...]}, ...]."""
        params = {"query": promql, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
        return self._get("/api/v1/query_range", params)

    # -- the fleet -----------------------------------------------------------------------------
    def fleet(
        self,
        window_s: float = 600.0,
        *,
        step_s: float | None = None,
        stale_after_s: float | None = None,
        fields: tuple[str, ...] = FLEET_FIELDS,
    ) -> FleetView:
        """Every node's and GPU's `fields` over the last `window_s` seconds. The step defaults to the
        window over MAX_POINTS (at least 1 s); a series is stale after 3 steps (at least 15 s) without data."""
        for name, v, lo, hi in (("window_s", window_s, 10, 7 * 86400), ("step_s", step_s, 0.1, 3600)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or not lo <= v <= hi):
                raise SpecError(name, v, Msg("allowed.seconds_in", low=lo, high=hi))
        unknown = [f for f in fields if f not in EXPORTED]
        if unknown:
            raise SpecError("fields", unknown, ", ".join(EXPORTED))
        end = float(self._clock())
        start = end - float(window_s)
        step = float(step_s) if step_s else max(1.0, float(window_s) / MAX_POINTS)
        stale = float(stale_after_s) if stale_after_s is not None else max(3 * step, 15.0)
        series: list[Series] = []
        for f in fields:
            metric, scale = EXPORTED[f]
            found = self.query_range(metric, start, end, step)
            if len(series) + len(found) > MAX_SERIES:
                raise PrometheusError(
                    f"{self.url}: the fleet answer has more than {MAX_SERIES:,} series ({len(found):,} for "
                    f"{metric}): refused; narrow it with --node-label or a smaller Prometheus"
                )
            for item in found:
                series.append(self._series(f, scale, item))
        series.sort(key=lambda s: (s.node, _gpu_order(s.gpu), fields.index(s.field)))
        return FleetView(
            url=self.url,
            start=start,
            end=end,
            step=step,
            stale_after_s=stale,
            node_label=self.node_label,
            series=tuple(series),
            sources=self._sources(end, window_s),
            recorded=self.recorded,
        )

    def _series(self, field_name: str, scale: float, item: Any) -> Series:
        if not isinstance(item, dict) or not isinstance(item.get("metric"), dict):
            raise PrometheusError(f"{self.url}: a range result without its labels: {str(item)[:200]}")
        # label values reach a terminal, a JSON file and a chart: control characters escaped, cut short
        labels = {printable(str(k), 100): printable(str(v), 200) for k, v in item["metric"].items()}
        points = []
        for pair in item.get("values") or []:
            try:
                t, v = float(pair[0]), float(pair[1])
            except (TypeError, ValueError, IndexError):
                raise PrometheusError(
                    f"{self.url}: a point that is not [time, value]: {str(pair)[:100]}"
                ) from None
            if math.isfinite(v) and 0 <= t <= LATEST_TIME:
                points.append((t, v / scale if scale != 1 else v))
        node = labels.get(self.node_label) or labels.get("instance") or "unknown node"
        return Series(
            node=node, gpu=labels.get("gpu", "?"), field=field_name, points=tuple(points), labels=labels
        )

    def _sources(self, at: float, window_s: float) -> dict[str, str]:
        """Per node, what its aiworkbook exporter said about its readings (dcgm-exporter says nothing)."""
        try:
            found = self.query(f"last_over_time(aiworkbook_telemetry_info[{int(window_s)}s])", at)
        except PrometheusError:
            return {}
        out = {}
        for item in found:
            labels = item.get("metric", {}) if isinstance(item, dict) else {}
            node = labels.get(self.node_label) or labels.get("instance")
            if node:
                src = labels.get("source", "")
                out[str(node)] = "live" if src == "live" else f"replay: {labels.get('label') or 'unlabelled'}"
        return out


RECORDING_KIND = "aiworkbook.prometheus.recording"
RECORDING_SCHEMA_VERSION = 1


def record_fleet(reader: PrometheusReader, path: str | os.PathLike, window_s: float = 600.0) -> FleetView:
    """Read the fleet once and keep every answer in `path` (schema-versioned JSON), so a notebook or a
    test without the server replays exactly what the server said (recorded_reader)."""
    from aiworkbook.persist import write_json

    answers: dict[str, Any] = {}
    live = reader._open

    def keep(url: str, timeout: float) -> bytes:
        body = live(url, timeout)
        try:
            answers[_query_of(url)] = json.loads(body)
        except (ValueError, RecursionError):  # not JSON: the reader refuses it in words, nothing kept
            pass
        return body

    reader._open = keep
    try:
        view = reader.fleet(window_s=window_s)
    finally:
        reader._open = live
    payload = {"url": reader.url, "end": view.end, "node_label": reader.node_label, "answers": answers}
    write_json(path, payload, kind=RECORDING_KIND, schema_version=RECORDING_SCHEMA_VERSION)
    return view


def recorded_reader(path: str | os.PathLike) -> PrometheusReader:
    """A reader that answers from a recording (record_fleet) at the recording's time; its views say
    "recorded <time> from Prometheus at <url>"."""
    from aiworkbook.persist import read_json

    doc = read_json(
        path, kind=RECORDING_KIND, max_version=RECORDING_SCHEMA_VERSION, what=Msg("file.prometheus_recording")
    )
    answers, end = doc.get("answers"), doc.get("end")
    if not isinstance(answers, dict) or isinstance(end, bool) or not isinstance(end, int | float):
        raise SpecError(
            "answers", type(answers).__name__, "a recording with answers and end", source=str(path)
        )

    def opener(url: str, timeout: float) -> bytes:
        q = _query_of(url)
        if q not in answers:
            raise PrometheusError(f"{path}: no recorded answer for {q}")
        return json.dumps(answers[q]).encode()

    reader = PrometheusReader(
        str(doc.get("url")),
        node_label=str(doc.get("node_label", "instance")),
        opener=opener,
        clock=lambda: float(end),
    )
    reader.recorded = f"recorded {utc(float(end))}"
    return reader


def _query_of(url: str) -> str:
    """The recording's key of a request: the API path and the PromQL (times differ between runs)."""
    parts = urllib.parse.urlsplit(url)
    q = urllib.parse.parse_qs(parts.query).get("query", [""])[0]
    return f"{parts.path.rsplit('/api/v1/', 1)[-1]} {q}"


def _gpu_order(gpu: str) -> tuple[int, str]:
    """GPU "2" before "10"; a label that is not plain ASCII digits ("²" is a digit to str.isdigit) after."""
    return (int(gpu), "") if gpu.isascii() and gpu.isdigit() and len(gpu) < 10 else (1 << 30, gpu)


def format_fleet(view: FleetView) -> str:
    """The terminal table of `monitor --prometheus`: one row per node and GPU, its latest values, their
    age, and a line per stopped series."""
    from aiworkbook.units import GiB

    cells: dict[tuple[str, str], dict[str, Series]] = {}
    for s in view.series:
        cells.setdefault((s.node, s.gpu), {})[s.field] = s
    head = ["node", "GPU", "model", "util %", "mem GiB", "power W", "temp °C", "last data"]
    rows: list[list[str]] = []

    def val(by: dict[str, Series], f: str, div: float = 1.0, fmt: str = "{:.0f}") -> str:
        s = by.get(f)
        fresh = s is not None and s.last_value is not None and not view.is_stale(s)
        return fmt.format(s.last_value / div) if fresh and s and s.last_value is not None else "—"

    for (node, gpu), by in cells.items():
        lasts = [s.last_time for s in by.values() if s.last_time is not None]
        last = f"{view.end - max(lasts):.0f} s ago" if lasts else "none"
        rows.append(
            [
                node,
                gpu,
                next((s.labels["modelName"] for s in by.values() if s.labels.get("modelName")), "—"),
                val(by, "util_gpu_pct"),
                val(by, "mem_used_bytes", GiB, "{:.1f}"),
                val(by, "power_w"),
                val(by, "temp_gpu_c"),
                last,
            ]
        )
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    lines = [
        f"{len(view.nodes())} node(s), {len(cells)} GPU(s) through {view.source_label()}, "
        f"last {view.end - view.start:.0f} s (readings scraped from the nodes, not measured here)",
        "  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)),
    ]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    if not rows:
        lines.append(
            "no DCGM_FI_DEV_* series in this window: is a dcgm-exporter or `monitor --serve` scraped?"
        )
    lines += view.notes()
    return "\n".join(lines)
