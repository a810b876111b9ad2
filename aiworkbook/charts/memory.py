"""Memory breakdown: one stacked bar by component (the formula in each tooltip), the rule of thumb
beside it, and the GPU budget as a line when the estimate names a GPU. For training the total is the
step's peak phase, below the stacked sum (gradients and activations are not all alive at once): a
black tick on the bar marks it."""

from __future__ import annotations

from typing import Any

import altair as alt

from aiworkbook.charts.theme import HEIGHT, finish, gib, label, scale
from aiworkbook.sizing.memory import COMPONENTS
from aiworkbook.units import fmt_bytes

ITEMISED = "itemised"
RULE = "rule of thumb"
#: a budget more than this many times the tallest bar is left off the chart (said in the title), so a
#: small workload's bars are not flattened to an empty-looking chart
OFF_SCALE = 4


def memory_rows(estimate: Any) -> list[dict[str, Any]]:
    """Rows of the chart from an Estimate (or its to_dict()): one per non-zero component, one for the rule."""
    d = estimate.to_dict() if hasattr(estimate, "to_dict") else dict(estimate)
    mem, formulas, rule = d["memory"], d.get("formulas", {}), d.get("rules_of_thumb") or {}
    rows = [
        {
            "bar": ITEMISED,
            "component": c,
            "name": label(c),
            "order": i,
            "bytes": int(mem[c]),
            "gib": gib(mem[c]),
            "formula": formulas.get(c, ""),
        }
        for i, c in enumerate(COMPONENTS)
        if mem.get(c)
    ]
    if rule.get("bytes") is not None:
        rows.append(
            {
                "bar": RULE,
                "component": str(rule.get("rule", RULE)),
                "name": label(rule.get("rule", RULE)),
                "order": len(COMPONENTS),
                "bytes": int(rule["bytes"]),
                "gib": gib(rule["bytes"]),
                "formula": str(rule.get("formula", "")),
            }
        )
    return rows


def memory_chart(estimate: Any) -> alt.LayerChart:
    """Stacked bar of GiB per component with its formula as tooltip, the rule-of-thumb bar beside it,
    and a dashed line at the GPU's budget (utilisation x usable memory) when the estimate has a GPU."""
    d = estimate.to_dict() if hasattr(estimate, "to_dict") else dict(estimate)
    rows = memory_rows(d)
    names = [r["name"] for r in rows]
    bars = (
        alt.Chart(alt.Data(values=rows))
        .mark_bar()
        .encode(
            x=alt.X("bar:N", title=None, sort=[ITEMISED, RULE], axis=alt.Axis(labelAngle=0)),
            y=alt.Y("sum(gib):Q", title="GiB (2^30 bytes)", stack="zero"),
            color=alt.Color("name:N", scale=scale(names), sort=names, title="component"),
            order=alt.Order("order:Q"),
            tooltip=[
                alt.Tooltip("name:N", title="component"),
                alt.Tooltip("gib:Q", title="GiB", format=",.2f"),
                alt.Tooltip("bytes:Q", format=","),
                alt.Tooltip("formula:N"),
            ],
        )
    )
    layers: list[Any] = [bars]
    fits = d.get("fits") or {}
    tallest = max(sum(r["bytes"] for r in rows if r["bar"] == ITEMISED), *(r["bytes"] for r in rows))
    off_scale = bool(fits.get("budget_bytes")) and fits["budget_bytes"] > OFF_SCALE * max(tallest, 1)
    if fits.get("budget_bytes") and not off_scale:
        budget = [{"gib": gib(fits["budget_bytes"]), "label": f"budget on {fits.get('gpu')}"}]
        line = alt.Chart(alt.Data(values=budget)).encode(
            y="gib:Q", tooltip=[alt.Tooltip("label:N"), alt.Tooltip("gib:Q", format=",.2f")]
        )
        layers.append(line.mark_rule(strokeDash=[6, 4], color="#000000"))
        # the line says what it is on the chart itself (dashed lines are otherwise unexplained)
        layers.append(line.mark_text(align="left", dx=2, dy=-6, fontSize=10, x=0).encode(text="label:N"))
    mem = d["memory"]
    summed = sum(int(mem.get(c) or 0) for c in COMPONENTS)
    if mem["total"] < summed:  # a training step's peak: not every component is alive at once
        peak = [
            {
                "bar": ITEMISED,
                "gib": gib(mem["total"]),
                "label": "the step's peak (the total)",
                "formula": (d.get("formulas") or {}).get("total", ""),
            }
        ]
        layers.append(
            alt.Chart(alt.Data(values=peak))
            .mark_tick(color="#000000", thickness=3, size=60)
            .encode(
                x=alt.X("bar:N", sort=[ITEMISED, RULE]),
                y="gib:Q",
                tooltip=[
                    alt.Tooltip("label:N"),
                    alt.Tooltip("gib:Q", format=",.2f"),
                    alt.Tooltip("formula:N"),
                ],
            )
        )
    gpu = f" on {d['gpu']}" if d.get("gpu") else ""
    title = f"{d.get('model', 'model')}: {fmt_bytes(d['memory']['total'], 'GiB')} per GPU{gpu}"
    if off_scale:  # a line far above the bars would flatten them to nothing: say the budget instead
        title += f" (budget {fmt_bytes(fits['budget_bytes'], 'GiB')}, off the scale)"
    return finish(alt.layer(*layers).properties(width=220, height=HEIGHT), title)
