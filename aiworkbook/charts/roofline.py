"""Decode roofline: attainable FLOP/s against arithmetic intensity per dtype (log-log), the workload's
point on the roof of its own dtype (rows from `aiworkbook.proofs.roofline.roofline_chart_data`)."""

from __future__ import annotations

from typing import Any

import altair as alt

from aiworkbook.charts.theme import HEIGHT, WIDTH, finish, scale, tr


def _rows(data: Any) -> list[dict[str, Any]]:
    if hasattr(data, "to_dict") and hasattr(data, "columns"):  # a DataFrame
        return list(data.to_dict(orient="records"))
    if isinstance(data, dict) and "chart" in data:  # a roofline ProofResult's details
        return list(data["chart"])
    return [dict(r) for r in data]


def roofline_chart(data: Any, source: str | None = None, lang: str = "en") -> alt.LayerChart:
    """`data`: the rows of roofline_chart_data (kind "ceiling" per dtype and intensity, at most one
    kind "workload"), a DataFrame of them, or a roofline proof's `details`. FLOP/s shown as TFLOP/s.
    `source` ("datasheet" when no roofline proof measured the ceilings) is said in the title."""
    from aiworkbook.errors import SpecError

    rows = _rows(data)
    ceilings = [r for r in rows if r.get("kind") == "ceiling"]
    points = [r for r in rows if r.get("kind") == "workload"]
    if not ceilings:
        raise SpecError("data", "no ceiling rows", "rows of roofline_chart_data (kind 'ceiling')")
    dtypes = list(dict.fromkeys(r["dtype"] for r in ceilings))
    for r in ceilings + points:
        r["tflops"] = float(r["attainable_flops"]) / 1e12
    colour = alt.Color("dtype:N", scale=scale(dtypes), title=tr("chart.dtype_roof", lang))
    x = alt.X("intensity:Q", scale=alt.Scale(type="log"), title=tr("chart.intensity", lang))
    y = alt.Y("tflops:Q", scale=alt.Scale(type="log"), title=tr("chart.attainable", lang))
    roofs = (
        alt.Chart(alt.Data(values=ceilings))
        .mark_line()
        .encode(
            x=x, y=y, color=colour, tooltip=[alt.Tooltip("dtype:N"), alt.Tooltip("tflops:Q", format=",.1f")]
        )
    )
    layers: list[Any] = [roofs]
    if points:
        layers.append(
            alt.Chart(alt.Data(values=points))
            .mark_point(size=140, filled=True, shape="diamond", stroke="#FFFFFF", strokeWidth=1)
            .encode(
                x=x,
                y=y,
                color=colour,
                tooltip=[
                    alt.Tooltip("label:N", title=tr("chart.workload", lang)),
                    alt.Tooltip("dtype:N"),
                    alt.Tooltip("intensity:Q", format=",.2f"),
                    alt.Tooltip("tflops:Q", title="TFLOP/s", format=",.2f"),
                    alt.Tooltip("bound:N"),
                ],
            )
        )
    name = ceilings[0].get("spec", "")
    title = tr("chart.roofline_of", lang, gpu=name) if name else tr("chart.roofline_title", lang)
    if source:
        title += f" ({tr('chart.datasheet', lang) if source == 'datasheet' else source})"
    if points:
        what = points[0].get("label", tr("chart.workload", lang))
        title += ": " + tr("chart.bound", lang, what=what, bound=points[0].get("bound", ""))
    return finish(alt.layer(*layers).properties(width=WIDTH, height=HEIGHT), title, lang)
