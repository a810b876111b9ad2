"""Memory breakdown: one stacked bar by component (the formula in each tooltip), the rule of thumb
beside it, and the GPU budget as a line when the estimate names a GPU. For training the total is the
step's peak phase, below the stacked sum (gradients and activations are not all alive at once): a
tick on the bar marks it, in
the legend with the rest."""

from __future__ import annotations

from typing import Any

import altair as alt

from aiworkbook.charts.colours import COMPONENT_COLOURS, MARK_COLOURS
from aiworkbook.charts.theme import (
    HEIGHT,
    component_label,
    finish,
    gib,
    label,
    meaning_scale,
    tr,
)
from aiworkbook.sizing.formula_data import formula_said, rule_said, stored_formulas
from aiworkbook.sizing.memory import COMPONENTS
from aiworkbook.units import fmt_bytes

ITEMISED = "itemised"
RULE = "rule of thumb"
#: a budget more than this many times the tallest bar is left off the chart (said in the title), so a
#: small workload's bars are not flattened to an empty-looking chart
OFF_SCALE = 4


def memory_rows(estimate: Any, lang: str = "en") -> list[dict[str, Any]]:
    """Rows of the chart from an Estimate (or its to_dict()): one per non-zero component, one for the rule.
    `label`: the component's legend word in `lang`; `bar`: the bar's name in `lang`."""
    d = estimate.to_dict() if hasattr(estimate, "to_dict") else dict(estimate)
    itemised, rule_bar = _bars(lang)
    mem, formulas, rule = d["memory"], d.get("formulas", {}), d.get("rules_of_thumb") or {}
    stored = stored_formulas(d)
    rows = [
        {
            "bar": itemised,
            "component": c,
            "label": component_label(c, lang),
            "order": i,
            "bytes": int(mem[c]),
            "gib": gib(mem[c]),
            "formula": formula_said(formulas.get(c, ""), lang, stored.get(c)),
        }
        for i, c in enumerate(COMPONENTS)
        if mem.get(c)
    ]
    if rule.get("bytes") is not None:
        rows.append(
            {
                "bar": rule_bar,
                "component": str(rule.get("rule", RULE)),
                "label": _rule_label(str(rule.get("rule", RULE)), lang),
                "order": len(COMPONENTS),
                "bytes": int(rule["bytes"]),
                "gib": gib(rule["bytes"]),
                "formula": rule_formula(rule, lang),
            }
        )
    return rows


def _bars(lang: str) -> tuple[str, str]:
    return (ITEMISED, RULE) if lang == "en" else (tr("chart.itemised", lang), tr("chart.rule", lang))


def _rule_label(name: str, lang: str) -> str:
    """`infer_6B_per_param` as "6 B per parameter (inference)" in `lang`; other names as they are."""
    import re

    m = re.fullmatch(r"(\w+?)_(\d+(?:\.\d+)?)B_per_param", name)
    if lang == "en":
        return label(name, lang)  # plain words: "rule of thumb: 6 B/parameter (inference)"
    if not m:
        return name
    from aiworkbook.patterns.i18n import TABLES

    mode = TABLES[lang].get(f"mode.{m.group(1)}", m.group(1))
    return tr("chart.rule_name", lang, n=m.group(2).replace(".", ","), mode=mode)


def rule_formula(rule: Any, lang: str = "en") -> str:
    """The rule of thumb's formula ("6 B · 8,030,261,248 params + KV cache") in `lang`, from its section
    (RulesOfThumb or its dict; a locked profile's keeps the message beside the text)."""
    return rule_said(rule, lang)


def memory_chart(estimate: Any, lang: str = "en") -> alt.LayerChart:
    """Stacked bar of GiB per component with its formula as tooltip, the rule-of-thumb bar beside it,
    and a dashed line at the GPU's budget (utilisation x usable memory) when the estimate has a GPU."""
    d = estimate.to_dict() if hasattr(estimate, "to_dict") else dict(estimate)
    rows = memory_rows(d, lang)
    names = [r["label"] for r in rows]
    itemised, rule_bar = _bars(lang)
    # one legend for everything drawn: each component, the rule of thumb, the budget line, the peak tick
    keys = [(r["label"], COMPONENT_COLOURS.get(r["component"], MARK_COLOURS["rule of thumb"])) for r in rows]
    fits = d.get("fits") or {}
    tallest = max(sum(r["bytes"] for r in rows if r["bar"] == itemised), *(r["bytes"] for r in rows))
    off_scale = bool(fits.get("budget_bytes")) and fits["budget_bytes"] > OFF_SCALE * max(tallest, 1)
    budget_said = tr("chart.budget_on", lang, gpu=fits.get("gpu"))
    if fits.get("budget_bytes") and not off_scale:
        keys.append((budget_said, MARK_COLOURS["budget"]))
    mem = d["memory"]
    summed = sum(int(mem.get(c) or 0) for c in COMPONENTS)
    peaked = mem["total"] < summed  # a training step's peak: not every component is alive at once
    if peaked:
        keys.append((tr("chart.peak", lang), MARK_COLOURS["peak"]))
    colour = alt.Color("label:N", scale=meaning_scale(keys), sort=names, title=tr("chart.component", lang))
    bars = (
        alt.Chart(alt.Data(values=rows))
        .mark_bar()
        .encode(
            x=alt.X("bar:N", title=None, sort=[itemised, rule_bar], axis=alt.Axis(labelAngle=0)),
            y=alt.Y("sum(gib):Q", title=tr("chart.gib_axis", lang), stack="zero"),
            color=colour,
            order=alt.Order("order:Q"),
            tooltip=[
                alt.Tooltip("label:N", title=tr("chart.component", lang)),
                alt.Tooltip("gib:Q", title="GiB", format=",.2f"),
                alt.Tooltip("bytes:Q", title=tr("chart.bytes", lang), format=","),
                alt.Tooltip("formula:N", title=tr("chart.formula", lang)),
            ],
        )
    )
    layers: list[Any] = [bars]
    if fits.get("budget_bytes") and not off_scale:
        budget = [{"gib": gib(fits["budget_bytes"]), "label": budget_said}]
        line = alt.Chart(alt.Data(values=budget)).encode(
            y=alt.Y("gib:Q"),
            color=colour,
            tooltip=[alt.Tooltip("label:N"), alt.Tooltip("gib:Q", format=",.2f")],
        )
        layers.append(line.mark_rule(strokeDash=[6, 4]))
        # the line says what it is on the chart itself (dashed lines are otherwise unexplained)
        layers.append(
            line.mark_text(align="left", dx=2, dy=-6, fontSize=10, x=0).encode(text=alt.Text("label:N"))
        )
    if peaked:
        peak = [
            {
                "bar": itemised,
                "gib": gib(mem["total"]),
                "label": tr("chart.peak", lang),
                "formula": formula_said(
                    (d.get("formulas") or {}).get("total", ""), lang, stored_formulas(d).get("total")
                ),
            }
        ]
        layers.append(
            alt.Chart(alt.Data(values=peak))
            .mark_tick(thickness=3, size=60)
            .encode(
                x=alt.X("bar:N", sort=[itemised, rule_bar]),
                y=alt.Y("gib:Q"),
                color=colour,
                tooltip=[
                    alt.Tooltip("label:N"),
                    alt.Tooltip("gib:Q", format=",.2f"),
                    alt.Tooltip("formula:N"),
                ],
            )
        )
    total = fmt_bytes(d["memory"]["total"], "GiB", lang)
    model = d.get("model", "model")
    title = (
        tr("chart.memory_title_gpu", lang, model=model, total=total, gpu=d["gpu"])
        if d.get("gpu")
        else tr("chart.memory_title", lang, model=model, total=total)
    )
    if off_scale:  # a line far above the bars would flatten them to nothing: say the budget instead
        title += " " + tr("chart.budget_off_scale", lang, budget=fmt_bytes(fits["budget_bytes"], "GiB", lang))
    return finish(alt.layer(*layers).properties(width=220, height=HEIGHT), title, lang)
