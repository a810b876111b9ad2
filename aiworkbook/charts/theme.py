"""One look for every chart: a colour-blind-safe palette (Okabe & Ito 2008), verdict colours, GiB axes.

Colours carry meaning only together with a label or a tooltip, never alone.
"""

from __future__ import annotations

from typing import Any

import altair as alt

from aiworkbook.units import GiB

#: Okabe-Ito: distinguishable under the common colour-vision deficiencies.
PALETTE = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#D55E00",  # vermillion
    "#F0E442",  # yellow
    "#000000",  # black
    "#999999",  # grey
    "#882255",  # wine (Tol), an eleventh hue for long stacks
    "#44AA99",  # teal (Tol)
)
#: Verdict -> colour: pass blue, fail vermillion (not red/green), the rest neutral.
VERDICT_COLOURS: dict[str, str] = {
    "pass": "#0072B2",
    "fail": "#D55E00",
    "info": "#999999",
    "info (CPU only)": "#BBBBBB",
    "fail (CPU only)": "#E8A07A",
    "does-not-fit": "#CC79A7",
    "interrupted": "#E69F00",
    "error": "#000000",
    "invalid": "#56B4E9",
}
ESTIMATE_COLOUR = "#999999"
WIDTH = 420
HEIGHT = 260


def scale(domain: list[str] | tuple[str, ...]) -> alt.Scale:
    """A categorical colour scale over `domain` with the palette, in order (stable colours per name)."""
    return alt.Scale(domain=list(domain), range=[PALETTE[i % len(PALETTE)] for i in range(len(domain))])


def verdict_scale() -> alt.Scale:
    return alt.Scale(domain=list(VERDICT_COLOURS), range=list(VERDICT_COLOURS.values()))


def gib(n: float | int | None) -> float | None:
    """Bytes as GiB (2**30) for an axis; None stays None."""
    return None if n is None else float(n) / GiB


def tr(key: str, lang: str = "en", **fmt: Any) -> str:
    """A chart's word in `lang` from the one catalog (aiworkbook.patterns.i18n), formatted with `fmt`."""
    from aiworkbook.patterns.i18n import text

    s = text(key, lang)
    return s.format(**fmt) if fmt else s


def component_label(name: str, lang: str = "en") -> str:
    """A memory component's legend word (`component.<name>`); an unknown one reads as its name."""
    from aiworkbook.patterns.i18n import TABLES

    found = TABLES.get(lang, {}).get(f"component.{name}")
    return found if isinstance(found, str) else name


def verdict_label(verdict: str, lang: str = "en") -> str:
    """A proof verdict (pass, fail, info, does-not-fit, interrupted, error) in `lang`."""
    from aiworkbook.patterns.i18n import TABLES

    found = TABLES.get(lang, {}).get(f"verdict.{verdict}") if lang != "en" else None
    return found if isinstance(found, str) else verdict


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


#: Plain words for the library's keys wherever a viewer reads them (legends, axes, tables): one map,
#: so a chart, a widget and the report say the same thing.
LABELS: dict[str, str] = {
    "weights": "weights",
    "gradients": "gradients",
    "optimizer": "optimizer state",
    "master_weights": "master weights (fp32 copy)",
    "activations": "activations",
    "logits": "logits",
    "kv_cache": "KV cache",
    "workspace": "cuBLAS workspace",
    "cuda_context": "CUDA context",
    "reserve": "allocator reserve",
    "total": "total",
    "offloaded_states": "offloaded training state",
    "offloaded_activations": "offloaded activations",
    "paged_optimizer": "paged optimizer",
    "itemised": "itemised",
    "rule of thumb": "rule of thumb",
}


def label(key: Any) -> str:
    """The plain words for a library key: the map's, a rule-of-thumb name spelt out
    ("infer_6B_per_param" -> "rule of thumb: 6 bytes per parameter (inference)"), else the key with
    underscores as spaces."""
    k = str(key)
    if k in LABELS:
        return LABELS[k]
    import re

    m = re.fullmatch(r"(infer|train|lora|qlora)_([0-9.]+)B_per_param", k)
    if m:
        mode = {"infer": "inference", "train": "training", "lora": "LoRA", "qlora": "QLoRA"}[m.group(1)]
        return f"rule of thumb: {m.group(2)} B/parameter ({mode})"
    return k.replace("_", " ")
