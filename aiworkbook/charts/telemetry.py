"""Telemetry time series: one metric per chart, one line per GPU (or the host), seconds since the
first sample on x. The title says where the data came from: live, "recorded on <GPU>, <date>",
or synthetic (a trace header's label, from aiworkbook.telemetry.replay.trace_label)."""

from __future__ import annotations

import math
from typing import Any

import altair as alt

from aiworkbook.charts.theme import HEIGHT, WIDTH, finish, scale, tr

#: Axis titles for the metrics people watch (others use the column name).
TITLES: dict[str, str] = {
    "util_gpu_pct": "GPU utilisation (%)",
    "util_mem_pct": "memory-controller utilisation (%)",
    "mem_used_bytes": "memory used (GiB)",
    "power_w": "power (W)",
    "temp_gpu_c": "temperature (°C)",
    "sm_clock_mhz": "SM clock (MHz)",
    "throttle_mask": "throttle reasons (bit mask)",
    "processes": "processes",
    "cpu_pct": "host CPU (%)",
    "mem_used_pct": "host memory used (%)",
    "ram_used_bytes": "host memory used (GiB)",
}


def _frame(frame: Any) -> Any:
    import pandas as pd

    if isinstance(frame, pd.DataFrame):
        return frame
    from aiworkbook.telemetry.export import to_dataframe

    return to_dataframe(frame)  # a list of Samples


def series_columns(frame: Any, metric: str) -> list[str]:
    """The frame's columns for `metric`: "gpu0.power_w"-style names as given, a bare name ("power_w")
    for every GPU (or "host.<name>" when no GPU has it)."""
    from aiworkbook.errors import SpecError

    cols = list(frame.columns)
    if metric in cols:
        return [metric]
    found = [c for c in cols if c.startswith("gpu") and c.split(".", 1)[-1] == metric]
    if not found and f"host.{metric}" in cols:
        found = [f"host.{metric}"]
    if not found:
        names = sorted({c.split(".", 1)[-1] for c in cols if "." in c})
        raise SpecError("metric", metric, ", ".join(names) or "a frame with telemetry columns")
    return found


def telemetry_rows(frame: Any, metric: str) -> list[dict[str, Any]]:
    """Long rows (t_s since the first sample, series, value); byte metrics in GiB, NaN dropped."""
    from aiworkbook.units import GiB

    df = _frame(frame)
    cols = series_columns(df, metric)
    t0 = float(df["t"].min()) if len(df) else 0.0
    rows = []
    for col in cols:
        div = GiB if col.endswith("_bytes") else 1
        for t, phase, v in zip(df["t"], df.get("phase", [""] * len(df)), df[col], strict=False):
            if isinstance(v, int | float) and not math.isnan(v):
                rows.append(
                    {
                        "t_s": float(t) - t0,
                        "series": col.split(".", 1)[0],
                        "value": v / div,
                        "phase": phase or "",
                    }
                )
    return rows


def source_label(header: dict[str, Any] | None = None, gpu: str | None = None, lang: str = "en") -> str:
    """'recorded on <GPU>, <date>' / 'synthetic trace ...' for a trace header, 'live on <GPU>' otherwise."""
    if header is not None and lang != "en":  # the stored label is English: said again from its fields
        src = header.get("replay_of") if header.get("source") == "replay" else header
        src = src if isinstance(src, dict) else {}
        gpu_name, date = src.get("gpu") or "—", str(src.get("recorded_at", "—"))[:10]
        kind = "chart.synthetic" if src.get("source") == "synthetic" else "chart.recorded_on"
        said = tr(kind, lang, gpu=gpu_name, date=date)
        return tr("chart.replay_of", lang, what=said) if header.get("source") == "replay" else said
    if header is not None:
        from aiworkbook.telemetry.replay import trace_label

        return str(header.get("label") or trace_label(header))
    return tr("chart.live_on", lang, gpu=gpu) if gpu else tr("chart.live", lang)


def telemetry_chart(
    frame: Any, metric: str, header: dict[str, Any] | None = None, gpu: str | None = None, lang: str = "en"
) -> alt.Chart:
    """A line per GPU of `metric` over time. `frame`: telemetry.export.to_dataframe(samples) (or the
    samples); `header`: the trace header when the samples were recorded or synthetic (its label goes
    in the title); `gpu`: the live GPU's name otherwise."""
    return series_chart(telemetry_rows(frame, metric), metric, source_label(header, gpu, lang), lang)


def series_chart(rows: list[dict[str, Any]], metric: str, source: str, lang: str = "en") -> alt.Chart:
    """A line per series of `metric` from long rows (t_s, series, value, phase), titled
    "<metric>: <source>" (where the data came from: live, a trace's label, a Prometheus server)."""
    key = metric.split(".", 1)[-1]
    name = tr(f"metric.{key}", lang) if key in TITLES else key
    series = list(dict.fromkeys(r["series"] for r in rows))
    chart = (
        alt.Chart(alt.Data(values=rows))
        .mark_line()
        .encode(
            x=alt.X("t_s:Q", title=tr("chart.time_s", lang)),
            y=alt.Y("value:Q", title=name),
            color=alt.Color("series:N", scale=scale(series), title=None),
            tooltip=[
                alt.Tooltip("series:N"),
                alt.Tooltip("t_s:Q", format=".1f"),
                alt.Tooltip("value:Q", format=",.2f"),
                alt.Tooltip("phase:N"),
            ],
        )
        .properties(width=WIDTH, height=HEIGHT // 2)
    )
    return finish(chart, f"{name}: {source}", lang)
