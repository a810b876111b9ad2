"""One look for every chart: a colour-blind-safe palette (Okabe & Ito 2008), verdict colours, GiB axes.

Colours carry meaning only together with a label or a tooltip, never alone.
"""

from __future__ import annotations

from typing import Any

import altair as alt

from aiworkbook.charts.colours import ESTIMATE_COLOUR as ESTIMATE_COLOUR  # one colour per meaning
from aiworkbook.charts.colours import VERDICT_COLOURS as VERDICT_COLOURS
from aiworkbook.charts.colours import series
from aiworkbook.sizing.memory import COMPONENTS
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


#: words of the sizing library's formulas, said in Dutch and German (the formulas' notation stays)
FORMULA_WORDS = (
    "params",
    "trainable",
    "seqs",
    "layers",
    "tokens",
    "vocab",
    "inference",
    "measured",
    "others",
)
#: the memory components (aiworkbook.sizing.memory.COMPONENTS) and the total
COMPONENT_NAMES = (*COMPONENTS, "total")


def formula_words(formula: str, lang: str = "en") -> str:
    """A sizing formula with its component names, common words and numbers in `lang`; a phrase the
    catalog does not hold stays as the library wrote it."""
    if lang == "en" or not formula:
        return formula
    import re

    from aiworkbook.i18n_format import localize_numbers
    from aiworkbook.patterns.i18n import TABLES

    table = TABLES[lang]
    for key, english in TABLES["en"].items():  # whole phrases first, then single words
        if key.startswith("formula.phrase.") and isinstance(english, str) and english in formula:
            formula = formula.replace(english, str(table[key]))

    def word(m: re.Match[str]) -> str:
        w = m.group(0)
        found = table.get(f"component.{w}") or table.get(f"formula.{w}")
        return found if isinstance(found, str) else w

    names = "|".join(sorted({*COMPONENT_NAMES, *FORMULA_WORDS}, key=len, reverse=True))
    return localize_numbers(re.sub(rf"\b(?:{names})\b", word, formula), lang)


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
