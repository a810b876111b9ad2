"""FleetMonitor: the monitor's charts for every node and GPU a Prometheus server scrapes (dcgm-exporter
or `aiworkbook monitor --serve`), read through aiworkbook.telemetry.prometheus, refreshed on a timer.

The server's URL comes from whoever starts the dashboard ($AIWORKBOOK_PROMETHEUS_URL), never from a
viewer: a viewer cannot make the dashboard's server send requests elsewhere. Queries run on a worker
thread; the charts are updated on the kernel's event loop. A series that stopped says "no data since"
in its legend and in the table below the charts; nothing here is titled live.
"""

from __future__ import annotations

import html
import threading
from typing import Any

import ipywidgets as W

from aiworkbook.errors import SpecError

from .base import Composite, Delivery, chart_view, html_table, value_html

MIN_REFRESH_S, MAX_REFRESH_S = 2.0, 3600.0


class FleetMonitor(Composite):
    """`result`: the last FleetView's to_dict() (url, series, notes); `error`: why the server could not
    be read. `close()` stops the refresh timer."""

    css = "fleet-monitor"

    def __init__(
        self,
        url: str | None = None,
        *,
        reader: Any = None,
        window_s: float = 600.0,
        refresh_s: float = 15.0,
        lang: str = "en",
        autorefresh: bool = True,
    ) -> None:
        super().__init__(lang=lang)
        from aiworkbook.telemetry.prometheus import FLEET_FIELDS, PrometheusReader

        if (
            isinstance(refresh_s, bool)
            or not isinstance(refresh_s, int | float)
            or not MIN_REFRESH_S <= refresh_s <= MAX_REFRESH_S
        ):
            raise SpecError("refresh_s", refresh_s, f"seconds in [{MIN_REFRESH_S:g}, {MAX_REFRESH_S:g}]")
        self.reader = reader if reader is not None else PrometheusReader(str(url or ""))
        self.window_s = float(window_s)
        self.refresh_s = float(refresh_s)
        self._delivery = Delivery()
        self._stop = threading.Event()
        self._busy = threading.Lock()
        self.view: Any = None
        self.headline = value_html(html.escape(self.reader.url))
        self.refresh_button = W.Button(description=self.t("fleet_refresh"), icon="refresh")
        self.refresh_button.on_click(self.guarded(lambda _b: self.refresh_async()))
        self.charts = {f: chart_view() for f in FLEET_FIELDS}
        self.notes = W.HTML("")
        self.children = [
            self.headline,
            self.error_area,
            W.HBox([self.refresh_button]),
            *self.charts.values(),
            self.notes,
        ]
        comm = getattr(self, "comm", None)
        if comm is not None and hasattr(comm, "on_close"):  # the page went away: stop querying for it
            comm.on_close(lambda _msg: self._stop.set())
        self.ready()
        if autorefresh:
            threading.Thread(target=self._loop, name="aiworkbook-fleet", daemon=True).start()

    # -- reading -------------------------------------------------------------------------------
    def _loop(self) -> None:
        while not self._stop.is_set():
            self._read()
            self._stop.wait(self.refresh_s)

    def refresh_async(self) -> None:
        threading.Thread(target=self._read, name="aiworkbook-fleet-once", daemon=True).start()

    def _read(self) -> None:
        """On a worker thread: one fleet read (a read already under way answers for this one too)."""
        if not self._busy.acquire(blocking=False):
            return
        try:
            try:
                view = self.reader.fleet(window_s=self.window_s)
            except Exception as exc:  # no answer, not Prometheus: said in the error area, retried
                err = exc
                self._delivery.post(self.guarded(lambda: self.show_error(err)))
                return
            self._delivery.post(self.guarded(lambda: self.show(view)))
        finally:
            self._busy.release()

    def refresh(self) -> None:
        """Read now on this thread and draw (scripts, notebooks, tests)."""
        self.show(self.reader.fleet(window_s=self.window_s))

    # -- drawing -------------------------------------------------------------------------------
    def show(self, view: Any) -> None:
        """Draw a FleetView: a chart per metric with a line per node and GPU, the stopped series below."""
        from aiworkbook.charts.telemetry import series_chart
        from aiworkbook.telemetry.prometheus import utc

        self.view = view
        self.error = ""
        source = view.source_label()
        gpus = {(s.node, s.gpu) for s in view.series}
        if gpus:
            text = self.t("fleet_headline", nodes=len(view.nodes()), gpus=len(gpus), source=source)
        else:
            text = self.t("fleet_none", window=f"{view.end - view.start:.0f}", source=source)
        self.headline.value = html.escape(text)
        for f, chart in self.charts.items():
            chart.draw(series_chart(view.rows(f), f, source, self.lang))
        stopped = [[s.name, s.field, utc(s.last_time) if s.last_time else "—"] for s in view.stale()]
        self.notes.value = (
            f"<b>{html.escape(self.t('fleet_stopped'))}</b>"
            + html_table([self.t("fleet_series"), self.t("fleet_metric"), self.t("fleet_since")], stopped)
            if stopped
            else ""
        )
        self.result = view.to_dict()

    def close(self) -> None:
        self._stop.set()
        super().close()

    def __del__(self) -> None:
        stop = getattr(self, "_stop", None)  # a constructor that refused its arguments made none
        if stop is not None:
            stop.set()
