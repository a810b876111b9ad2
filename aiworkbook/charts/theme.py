"""One look for every chart: a colour-blind-safe palette (Okabe & Ito 2008), verdict colours, GiB axes.

Colours carry meaning only together with a label or a tooltip, never alone.
"""

from __future__ import annotations

from typing import Any

import altair as alt

from aiworkbook.charts.colours import ESTIMATE_COLOUR as ESTIMATE_COLOUR  # one colour per meaning
from aiworkbook.charts.colours import VERDICT_COLOURS as VERDICT_COLOURS
from aiworkbook.charts.colours import series
from aiworkbook.charts.labels import component_label as component_label  # words, without altair
from aiworkbook.charts.labels import tr as tr
from aiworkbook.charts.labels import verdict_label as verdict_label
from aiworkbook.sizing.memory import COMPONENTS, HOST_KEYS
from aiworkbook.units import GiB

WIDTH = 420
HEIGHT = 260


def scale(domain: list[str] | tuple[str, ...]) -> alt.Scale:
    """A categorical colour scale over open-ended series `domain` (GPUs, dtypes), in order, from the
    series hues no fixed meaning uses (aiworkbook.charts.colours)."""
    return alt.Scale(domain=list(domain), range=series(domain))


def meaning_scale(pairs: list[tuple[str, str]]) -> alt.Scale:
    """A colour scale whose legend names each colour's meaning: (legend words, colour) pairs."""
    return alt.Scale(domain=[w for w, _ in pairs], range=[c for _, c in pairs])


def gib(n: float | int | None) -> float | None:
    """Bytes as GiB (2**30) for an axis; None stays None."""
    return None if n is None else float(n) / GiB


def verdict_legend(lang: str = "en") -> Any:
    """The verdict legend with its labels in `lang` (the data keeps the library's verdict names)."""
    if lang == "en":
        return alt.Legend()
    import json

    words = {v: verdict_label(v, lang) for v in VERDICT_COLOURS}
    return alt.Legend(labelExpr=f"{json.dumps(words)}[datum.label] || datum.label")


def finish(chart: Any, title: str | None = None, lang: str = "en") -> Any:
    """The shared configuration: font sizes, no chart border, a title when given, and numbers on axes
    and in tooltips in `lang`'s format (Vega's number locale)."""
    if title is not None:
        chart = chart.properties(title=title)
    if lang != "en":
        from aiworkbook.i18n_format import vega_locale

        chart = chart.configure(locale={"number": vega_locale(lang)})
    return (
        chart.configure_view(strokeWidth=0)
        .configure_axis(labelFontSize=11, titleFontSize=12)
        .configure_legend(labelFontSize=11, titleFontSize=12, labelLimit=320)
    )


#: The library's keys a viewer reads as plain words (legends, axes, tables), each `label.<key>` in the
#: catalogues: one set of words, so a chart, a widget and the report say the same thing in any language.
LABEL_KEYS = (*COMPONENTS, "total", *HOST_KEYS, "itemised", "rule of thumb")


def label(key: Any, lang: str = "en") -> str:
    """The plain words for a library key in `lang`: its `label.<key>` entry, a rule-of-thumb name spelt
    out ("infer_6B_per_param" -> "rule of thumb: 6 B/parameter (inference)"), else the key with
    underscores as spaces (a name no catalogue holds)."""
    import re

    from aiworkbook.message import Msg

    k = str(key)
    if k in LABEL_KEYS:
        return Msg(f"label.{k.replace(' ', '_')}").render(lang)
    m = re.fullmatch(r"(infer|train|lora|qlora)_([0-9.]+)B_per_param", k)
    if m:
        mode = Msg(f"label.mode.{m.group(1)}")
        return Msg("label.rule_name", n=float(m.group(2)), mode=mode).render(lang)
    return k.replace("_", " ")
