"""Latency vs load: TTFT and TPOT percentiles (ms) and throughput, with the knee marked."""

from __future__ import annotations

from typing import Any

import altair as alt

from aiworkbook.charts.colours import MARK_COLOURS, PERCENTILE_COLOURS
from aiworkbook.charts.theme import finish, meaning_scale, tr

PERCENTILES = ("p50", "p95", "p99")
REQUIRED = (
    ("load",) + tuple(f"{p}_{m}_s" for m in ("ttft", "tpot") for p in PERCENTILES) + ("throughput_tok_s",)
)


def latency_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Long format: one row per load, metric (ttft/tpot) and percentile, in milliseconds."""
    from aiworkbook.errors import SpecError

    out = []
    for r in rows:
        missing = [k for k in REQUIRED if k not in r]
        if missing:
            raise SpecError("rows", missing, ", ".join(REQUIRED))
        for m in ("ttft", "tpot"):
            for p in PERCENTILES:
                v = r[f"{p}_{m}_s"]
                out.append({"load": r["load"], "metric": m.upper(), "percentile": p, "ms": _ms(v)})
    return out


def _ms(v: float | None) -> float | None:
    return None if v is None else float(v) * 1e3


def latency_chart(
    rows: list[dict[str, Any]], knee: float | None = None, lang: str = "en"
) -> alt.HConcatChart:
    """Three panels against load: TTFT and TPOT (p50/p95/p99, ms) and output tokens/s; the knee (the
    load past which latency climbs without throughput) as a dashed rule in each."""
    long = latency_rows(rows)
    thr = [
        {"load": r["load"], "throughput_tok_s": r["throughput_tok_s"], "line": tr("chart.output_tps", lang)}
        for r in rows
    ]
    knee_said = tr("chart.knee", lang, knee=f"{knee:g}") if knee is not None else ""
    tput_said = tr("chart.output_tps", lang)
    # one legend for everything drawn: the percentiles, the knee's rule, the throughput line
    keys = [(p, PERCENTILE_COLOURS[p]) for p in PERCENTILES] + [(tput_said, MARK_COLOURS["throughput"])]
    if knee is not None:
        keys.append((knee_said, MARK_COLOURS["knee"]))
    scale = meaning_scale(keys)
    colour = alt.Color("percentile:N", scale=scale, title=tr("chart.percentile", lang))
    knee_rows = [{"load": knee, "label": knee_said}] if knee is not None else []

    def knee_rule() -> alt.Chart:
        return (
            alt.Chart(alt.Data(values=knee_rows))
            .mark_rule(strokeDash=[6, 4])
            .encode(
                x=alt.X("load:Q"), color=alt.Color("label:N", scale=scale), tooltip=[alt.Tooltip("label:N")]
            )
        )

    panels = []
    for metric in ("TTFT", "TPOT"):
        line = (
            alt.Chart(alt.Data(values=long))
            .transform_filter(alt.datum.metric == metric)
            .mark_line(point=True)
            .encode(
                x=alt.X("load:Q", title=tr("chart.load_axis", lang)),
                y=alt.Y("ms:Q", title=f"{metric} (ms)"),
                color=colour,
                tooltip=[
                    alt.Tooltip("load:Q"),
                    alt.Tooltip("percentile:N"),
                    alt.Tooltip("ms:Q", format=",.1f"),
                ],
            )
        )
        layers = [line, knee_rule()] if knee_rows else [line]
        panels.append(alt.layer(*layers).properties(title=metric, width=260, height=200))
    tput = (
        alt.Chart(alt.Data(values=thr))
        .mark_line(point=True)
        .encode(
            x=alt.X("load:Q", title=tr("chart.load", lang)),
            y=alt.Y("throughput_tok_s:Q", title=tr("chart.output_tps", lang)),
            color=alt.Color("line:N", scale=scale),
            tooltip=[alt.Tooltip("load:Q"), alt.Tooltip("throughput_tok_s:Q", format=",.0f")],
        )
    )
    layers = [tput, knee_rule()] if knee_rows else [tput]
    panels.append(alt.layer(*layers).properties(title=tr("chart.throughput", lang), width=260, height=200))
    knee_title = f" ({knee_said})" if knee is not None else ""
    return finish(alt.hconcat(*panels), tr("chart.latency_title", lang) + knee_title, lang)
