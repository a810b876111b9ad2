"""Estimate vs measured, one pair of bars per proof, both relative to the estimate (units differ
between proofs), the measured bar coloured by verdict, the raw figures and honesty flags in the tooltip."""

from __future__ import annotations

from typing import Any

import altair as alt

from aiworkbook.charts.colours import ESTIMATE_COLOUR, VERDICT_COLOURS
from aiworkbook.charts.theme import HEIGHT, finish, tr
from aiworkbook.provenance import verdict_words

ESTIMATE = "estimate"
MEASURED = "measured"


def proof_rows(results: list[Any]) -> list[dict[str, Any]]:
    """Two rows per ProofResult (or its to_dict()): the estimate at 1.0 and the measured ratio."""
    rows = []
    for i, r in enumerate(results):
        d = r.to_dict() if hasattr(r, "to_dict") else dict(r)
        name = f"{d['proof']} ({d.get('device', '')})" if d.get("device") else d["proof"]
        if sum(1 for x in results if _name(x) == d["proof"]) > 1:
            name = f"{name} #{i + 1}"
        common = {
            "proof": name,
            "unit": d.get("unit", ""),
            "predicted": d.get("predicted"),
            "predicted_label": d.get("predicted_label", ""),
            "measured": d.get("measured"),
            "ratio": d.get("ratio"),
            "tolerance": d.get("tolerance"),
            "verdict": verdict_words(d),  # a CPU-only run's pass is not a GPU pass
            "flags": ", ".join(d.get("flags", [])) or "none",
        }
        has_estimate = bool(d.get("predicted"))
        rows.append({**common, "kind": ESTIMATE, "key": ESTIMATE, "relative": 1.0 if has_estimate else None})
        rows.append({**common, "kind": MEASURED, "key": common["verdict"], "relative": d.get("ratio")})
    return rows


def _name(r: Any) -> str:
    return r.proof if hasattr(r, "proof") else r["proof"]


def proofs_chart(results: list[Any], lang: str = "en") -> alt.LayerChart:
    """Per proof: the estimate (1.0) and measured / estimate, the tolerance band around 1 as a tick.

    Proofs without an estimate (verdict info) keep their row with the measured figure in the tooltip.
    """
    rows = proof_rows(results)
    tooltip = [
        alt.Tooltip("proof:N"),
        alt.Tooltip("kind:N"),
        alt.Tooltip("verdict:N", title=tr("chart.verdict", lang)),
        alt.Tooltip("predicted_label:N", title=tr("chart.estimate_of", lang)),
        alt.Tooltip("predicted:Q", title=tr("chart.estimate", lang), format=",.4~g"),
        alt.Tooltip("measured:Q", title=tr("chart.measured", lang), format=",.4~g"),
        alt.Tooltip("unit:N"),
        alt.Tooltip("ratio:Q", title=tr("chart.ratio", lang), format=".3f"),
        alt.Tooltip("tolerance:Q", format=".0%"),
        alt.Tooltip("flags:N", title=tr("chart.flags", lang)),
    ]
    base = alt.Chart(alt.Data(values=rows)).encode(
        y=alt.Y("proof:N", title=None),
        yOffset=alt.YOffset("kind:N", sort=[ESTIMATE, MEASURED]),
        tooltip=tooltip,
    )
    # one legend for everything drawn: the estimate (its bar and its 1.0 line) and each verdict, in the
    # estimate's own colour, which no verdict uses (info is grey)
    words = _words(lang)
    for r in rows:
        r["key"] = words.get(r["key"], r["key"])
    colour = alt.Color("key:N", scale=_scale(lang), title=tr("chart.verdict", lang))
    est = base.transform_filter(alt.datum.kind == ESTIMATE).mark_bar()
    meas = base.transform_filter(alt.datum.kind == MEASURED).mark_bar()
    x = alt.X("relative:Q", title=tr("chart.relative", lang))
    one = (
        alt.Chart(alt.Data(values=[{"x": 1.0, "key": words[ESTIMATE]}]))
        .mark_rule(strokeDash=[4, 3])
        .encode(x=alt.X("x:Q"), color=colour)
    )
    chart = alt.layer(est.encode(x=x, color=colour), meas.encode(x=x, color=colour), one).properties(
        width=360, height=max(HEIGHT // 2, 48 * max(1, len(results)))
    )
    return finish(chart, tr("chart.proofs_title", lang), lang)


def _words(lang: str) -> dict[str, str]:
    """The legend's words in `lang` for "estimate" and each verdict (the data keeps the verdict names)."""
    from aiworkbook.patterns.i18n import TABLES

    said = {v: TABLES.get(lang, {}).get(f"verdict.{v}") for v in VERDICT_COLOURS}
    return {
        ESTIMATE: tr("chart.estimate", lang),
        **{v: w if isinstance(w, str) else v for v, w in said.items()},
    }


def _scale(lang: str) -> alt.Scale:
    words = _words(lang)
    colours = {ESTIMATE: ESTIMATE_COLOUR, **VERDICT_COLOURS}
    return alt.Scale(domain=[words[k] for k in colours], range=list(colours.values()))
