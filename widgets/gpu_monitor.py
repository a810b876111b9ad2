"""GPUMonitor: live charts from the kernel's one shared sampler (a subscription at 1-2 Hz), pause and
resume, and no polling left behind when it closes. Without an NVIDIA GPU it says so, charts the host,
and offers the recorded trace shipped under data/traces, labelled as recorded (or synthetic).

Samples arrive on the sampler's thread; the charts are updated on the kernel's event loop (widgets
already on screen, never display() from a thread).
"""

from __future__ import annotations

import collections
import html
import threading
from typing import Any

import ipywidgets as W
import traitlets

from aiworkbook.errors import SpecError

from .base import Composite, Delivery, chart_view, html_table, value_html

GPU_METRICS = ("util_gpu_pct", "mem_used_bytes", "power_w", "temp_gpu_c")
HOST_METRICS = ("cpu_pct", "ram_used_bytes")
MIN_INTERVAL, MAX_INTERVAL = 0.5, 1.0  # 1-2 Hz


class GPUMonitor(Composite):
    """`value`: "live" | "paused" | "recorded"; `result`: {"gpu": bool, "samples": n, "source": label}.
    `close()` ends the sampler subscription (the sampler stops when it was started for it)."""

    css = "gpu-monitor"
    value = traitlets.Unicode("live")

    def __init__(
        self,
        interval: float = 1.0,
        sampler: Any = None,
        window_s: float = 120.0,
        lang: str = "en",
        gpu: bool | None = None,
    ) -> None:
        super().__init__(lang=lang)
        if (
            isinstance(interval, bool)
            or not isinstance(interval, int | float)
            or not MIN_INTERVAL <= interval <= MAX_INTERVAL
        ):
            raise SpecError("interval", interval, f"seconds in [{MIN_INTERVAL}, {MAX_INTERVAL}] (1-2 Hz)")
        if sampler is None:
            from aiworkbook.telemetry import get_sampler

            sampler = get_sampler()
        self.sampler = sampler
        self.interval = float(interval)
        self.has_gpu = self._gpu_count() > 0 if gpu is None else gpu
        self.metrics = GPU_METRICS if self.has_gpu else HOST_METRICS
        size = max(2, int(window_s / interval) + 1)
        self._samples: collections.deque[Any] = collections.deque(maxlen=size)
        # each sample flattened once, on arrival (Sample.flat: the row of telemetry.export.to_dataframe)
        self._flat: collections.deque[dict[str, Any]] = collections.deque(maxlen=size)
        self._lock = threading.Lock()
        self._delivery = Delivery()
        self._refresh_pending = False
        self._specs: dict[Any, tuple[tuple[str, str], dict[str, Any]]] = {}
        self._sub: Any = None
        self._showing_trace = False
        self._header: dict[str, Any] | None = self._live_header()
        self.headline = value_html(
            html.escape(self.sampler.status()) if self.has_gpu else f"<b>{html.escape(self.t('no_gpu'))}</b>"
        )
        self.pause = W.ToggleButton(value=False, description=self.t("pause"), icon="pause")
        self.pause.observe(self.guarded(self._paused), names="value")
        self.recorded = W.Button(description=self.t("recorded"), layout=W.Layout(width="auto"))
        self.recorded.on_click(self.guarded(lambda _b: self.show_recorded()))
        self.details = W.HTML("")
        self._show_live_layout()
        self._subscribe()
        comm = getattr(self, "comm", None)
        if comm is not None and hasattr(comm, "on_close"):  # the page went away: stop polling for it
            comm.on_close(lambda _msg: self._unsubscribe())
        self.ready()

    def _show_live_layout(self) -> None:
        """The live page: this reader's charts (the host's without a GPU) and, without a GPU, the button
        that shows the recorded trace. Resuming after a recorded trace comes back to exactly this. Each
        chart appears with the first reading (no empty axes before it); until then the status line says
        the page waits for it."""
        self.charts = {m: chart_view(lazy=True) for m in self.metrics}
        self._specs.clear()
        self.status.value = f"<i>{html.escape(self.t('monitor.waiting'))}</i>"
        buttons = [self.pause] + ([] if self.has_gpu else [self.recorded])
        self.children = [
            self.headline,
            self.error_area,
            W.HBox(buttons),
            self.status,
            *self.charts.values(),
            self.details,
        ]

    def _live_header(self) -> dict[str, Any] | None:
        """None when the sampler reads this machine (NVML, psutil): the charts may say "live". A sampler
        that replays a trace ($AIWORKBOOK_TELEMETRY_REPLAY) is titled with the trace's label instead."""
        reader = getattr(self.sampler, "gpu_reader", None)
        if getattr(reader, "source", "nvml") == "nvml":
            return None
        label = getattr(reader, "label", None) or "an unlabelled trace (not measured here)"
        return {"label": f"replay of: {label}" if not str(label).startswith("replay") else str(label)}

    def _gpu_name(self) -> str | None:
        try:
            ids = self.sampler.gpu_reader.identities()
            return str(ids[0]["name"]) if ids else None
        except Exception:
            return None

    def _gpu_count(self) -> int:
        try:
            return int(self.sampler.gpu_reader.count())
        except Exception:
            return 0

    # -- subscription --------------------------------------------------------------------------
    def _subscribe(self) -> None:
        if self._sub is None:
            self._sub = self.sampler.subscribe(self._on_samples, interval=self.interval)

    def _unsubscribe(self) -> None:
        sub, self._sub = self._sub, None
        if sub is not None:
            sub.close()

    @property
    def subscribed(self) -> bool:
        return self._sub is not None and not self._sub.closed

    def _on_samples(self, batch: list[Any]) -> None:
        """On the sampler's thread: keep the samples, then redraw on the kernel's loop."""
        with self._lock:
            if self._showing_trace:  # a batch that was on its way when the trace was shown: not mixed in
                return
            self._samples.extend(batch)
            self._flat.extend(x.flat() for x in batch)
            if self._refresh_pending:  # one redraw queued is enough: it reads the newest window
                return
            self._refresh_pending = True
        self._delivery.post(self.guarded(self.refresh))

    def _paused(self, change: dict[str, Any]) -> None:
        if change["new"]:
            self._unsubscribe()
            self.pause.description, self.pause.icon = self.t("resume"), "play"
            self.value = "paused"
        else:
            if self.value == "recorded":  # back to this machine: none of the trace stays on screen
                self._leave_trace()
            self._header = self._live_header()
            self._subscribe()
            self.pause.description, self.pause.icon = self.t("pause"), "pause"
            self.value = "live"

    @traitlets.validate("value")
    def _valid_value(self, proposal: dict[str, Any]) -> str:
        v = proposal["value"]
        if v not in ("live", "paused", "recorded"):
            raise traitlets.TraitError(str(SpecError("value", v, "live, paused, recorded")))
        return v

    # -- drawing -------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Redraw the charts from the samples in the window (called on the kernel's loop)."""
        import pandas as pd

        with self._lock:
            samples = list(self._samples)
            flat = list(self._flat)
            self._refresh_pending = False
        if not samples:
            return
        frame = pd.DataFrame(
            flat
        )  # what telemetry.export.to_dataframe(samples) builds, without re-flattening
        gpu_name = self._gpu_name() if self.has_gpu else None
        source = self._header.get("label", "") if self._header else self.t("live")
        for m, view in self.charts.items():
            try:
                self._draw(m, view, frame, source, gpu_name)
            except SpecError:
                continue  # this reader does not report the metric
        self.details.value = self._details(samples[-1])
        self.status.value = ""  # the first reading is drawn
        self.result = {"gpu": self.has_gpu, "samples": len(samples), "source": source}

    def _draw(self, metric: str, view: Any, frame: Any, source: str, gpu_name: str | None) -> None:
        """The first draw of a metric (per source) builds and validates the chart; later ticks only swap
        its data rows into the same spec, skipping Altair's schema validation of every row (which cost
        most of a redraw's CPU at 2 Hz)."""
        from aiworkbook.charts import telemetry_chart
        from aiworkbook.charts.telemetry import telemetry_rows

        key = (metric, source)
        base = self._specs.get(view.model_id if hasattr(view, "model_id") else id(view))
        if base is None or base[0] != key or "values" not in base[1].get("data", {}):
            view.draw(telemetry_chart(frame, metric, header=self._header, gpu=gpu_name, lang=self.lang))
            self._specs[view.model_id if hasattr(view, "model_id") else id(view)] = (key, view.spec)
            return
        view.spec = {**base[1], "data": {"values": telemetry_rows(frame, metric)}}

    def _details(self, s: Any) -> str:
        """Throttle reasons and processes of the latest sample, per GPU."""
        if not s.gpus:
            return ""
        rows = []
        for g in s.gpus:
            reasons = g.get("throttle_reasons")
            procs = g.get("processes")
            rows.append(
                [
                    g.get("index", 0),
                    ", ".join(reasons) if isinstance(reasons, list) and reasons else "—",
                    len(procs) if isinstance(procs, list) else "n/a",
                ]
            )
        return html_table([self.t("gpu"), self.t("throttle"), self.t("processes")], rows)

    def show_recorded(self, path: Any = None) -> None:
        """Stop live sampling and chart a recorded trace (default: the first shipped one), titled with
        its label ("recorded on <GPU>, <date>" or synthetic)."""
        from aiworkbook.telemetry.replay import load_trace, shipped_traces

        traces = shipped_traces()
        if path is None:
            if not traces:
                raise SpecError("trace", "none shipped", "a trace under data/traces")
            path = traces[0]
        elif path not in traces:  # a viewer never reaches the file system through this widget
            raise SpecError("trace", str(path), ", ".join(p.name for p in traces))
        header, samples = load_trace(path)
        self._unsubscribe()
        with self._lock:
            self._showing_trace = True
            self._samples.clear()
            self._samples.extend(samples)
            self._flat.clear()
            self._flat.extend(x.flat() for x in samples)
        self._header = header
        if not self.has_gpu:  # the trace has GPU metrics: chart them
            self.charts = {m: chart_view() for m in GPU_METRICS}
            self.children = [
                self.headline,
                self.error_area,
                W.HBox([self.pause]),
                *self.charts.values(),
                self.details,
            ]
        self._syncing_pause(True)
        self.value = "recorded"
        self.refresh()

    def _leave_trace(self) -> None:
        """Drop the trace's samples and put the live page back (host charts, the trace button)."""
        with self._lock:
            self._showing_trace = False
            self._samples.clear()
            self._flat.clear()
            self._refresh_pending = False
        self.result = {}
        self._show_live_layout()

    def _syncing_pause(self, paused: bool) -> None:
        self.pause.unobserve_all("value")
        self.pause.value = paused
        self.pause.description, self.pause.icon = (
            (self.t("resume"), "play") if paused else (self.t("pause"), "pause")
        )
        self.pause.observe(self.guarded(self._paused), names="value")

    def close(self) -> None:
        self._unsubscribe()
        super().close()

    def __del__(self) -> None:
        try:
            self._unsubscribe()
        except Exception:
            pass
