"""English left on a Dutch or German page: the words of the English gettext catalogue
(aiworkbook/locale) that the Dutch and German catalogues never use, plus common English function words. Used by tests/browser/test_lang_browser.py;
`python tests/english_left.py nl FILE` checks a text file (a page's text saved by hand)."""

from __future__ import annotations

import re
import sys
from functools import cache

WORD = re.compile(r"[A-Za-zÀ-ÿ][A-Za-zÀ-ÿ']+")
#: English words that are no Dutch or German word, beyond those the catalogs yield
FUNCTION_WORDS = frozenset(
    "the and with against which from does not each every this that these those there their when where "
    "what while would should could cannot found shows show running until than then into only also".split()
)
#: words the same in the three languages, or names (technical terms, products, units)
SHARED = frozenset(
    "gpu gpus cpu ram vram host node engine batch model tokens token context live budget reserve lora qlora "
    "kv cache zero torch compile dropout optimizer loss workload workloads plan proof proofs nvidia gib mib "
    "json config roofline serving checkpoint parquet dataloader prefetch workers pin_memory safetensors "
    "torchrun nccl gloo algbw busbw ttft tpot itl slo goodput rank threads rss flop tflop datasheet dtype "
    "matmul adamw sgd bf16 fp16 fp32 english nederlands deutsch vllm trace interconnect logits backward "
    "forward eager offload recipe tensor bit cuda serve meta llama dir".split()
)


def _strings(table: dict) -> list[str]:
    out: list[str] = []
    for v in table.values():
        out.extend([v] if isinstance(v, str) else [x for x in v if isinstance(x, str)])
    return out


def _words(texts: list[str]) -> set[str]:
    """The words of catalogue texts, less fields and command-line options (--engine-version is no Dutch
    or German use of "version")."""
    return {w.lower() for t in texts for w in WORD.findall(re.sub(r"{\w+[^}]*}|--[\w-]+", " ", t))}


@cache
def english_words(lang: str) -> frozenset[str]:
    """English words a page in `lang` (nl or de) should not show: the English catalogue's words that
    `lang`'s catalogue never uses, and the function words, less the shared names."""
    from aiworkbook.catalogue import catalogue
    from aiworkbook.proofs.flags import FLAGS

    en = _words(_strings(catalogue("en")))
    other = _words(_strings(catalogue(lang)))
    names = SHARED | set(FLAGS)  # an honesty flag is shown by its name (`accounted`) in every language
    return frozenset(w for w in (en - other) | FUNCTION_WORDS if len(w) >= 3 and w not in names)


#: names, not words: fp32, kv_cache, bert-base-uncased, options (--seq), settings written as name=value
IDENTIFIER = re.compile(r"\S*[\d_]\S*|--[\w-]+|\b[a-z]+(?:-[a-z]+)+\b|\b\w+=\S*")
#: a figure in English format: a decimal point before a unit, or thousands grouped by commas twice
ENGLISH_NUMBER = re.compile(
    r"(?<![\w.,])\d+\.\d+ ?(?:[KMGT]i?B(?:/s)?|ms|s|%|W|h|\$)(?![\w])|(?<![\w.,])\d{1,3}(?:,\d{3}){2,}(?![\d])"
)


def _grouped(figure: str, lang: str) -> bool:
    """A whole number grouped in thousands by `lang`'s own group sign (143.247 s in Dutch and German),
    which reads like an English decimal before a unit."""
    from babel.numbers import get_group_symbol

    sign = get_group_symbol(lang)
    return sign != "," and re.fullmatch(rf"\d{{1,3}}(?:{re.escape(sign)}\d{{3}})+ ?\D*", figure) is not None


#: words from outside the library quoted as they were said (aiworkbook.message.quoted: «No such file or
#: directory», the OS's or a decoder's English): not ours to translate
QUOTATION = re.compile(r"«[^«»]*»")


def english_left(text: str, lang: str) -> list[str]:
    """The lines of `text` that hold an English word or an English-formatted figure outside a marked
    quotation (each line once, what was found marked in [brackets])."""
    words = english_words(lang)
    out: list[str] = []
    for line in dict.fromkeys(x.strip() for x in text.splitlines() if x.strip()):
        ours = QUOTATION.sub(" ", line)
        prose = IDENTIFIER.sub(" ", ours)  # names such as inference-4xl40s or kv_cache are no words
        figures = [x for x in ENGLISH_NUMBER.findall(ours) if not _grouped(x, lang)]
        hits = [w for w in WORD.findall(prose) if w.lower() in words] + figures
        if hits:
            out.append(f"{line[:160]}  [{', '.join(dict.fromkeys(hits))}]")
    return out


if __name__ == "__main__":
    left = english_left(open(sys.argv[2], encoding="utf-8").read(), sys.argv[1])
    print("\n".join(left) or "no English left")
    sys.exit(1 if left else 0)


def widget_text(w: object, out: list[str] | None = None) -> list[str]:
    """Every string a viewer can read in widget `w` and its children: HTML (tags stripped), descriptions,
    drop-down labels, accordion titles, and a chart's titles, axis and legend titles and legend words."""
    import html

    out = [] if out is None else out
    value = getattr(w, "value", None)
    if type(w).__name__ in ("HTML", "HTMLMath") and isinstance(value, str):
        text = re.sub(r"<style>.*?</style>", "", value, flags=re.S)  # a stylesheet is not read by anyone
        out.append(html.unescape(re.sub(r"<[^>]+>", "\n", text)))
    if isinstance(getattr(w, "description", None), str):
        out.append(w.description)  # type: ignore[attr-defined]
    out.extend(getattr(w, "_options_labels", ()) or ())
    out.extend(t for t in (getattr(w, "titles", ()) or ()) if t)
    spec = getattr(w, "spec", None) if hasattr(w, "embed_options") else None
    if isinstance(spec, dict):
        _chart_text({k: v for k, v in spec.items() if k not in ("datasets", "data")}, out)
        for rows in (spec.get("datasets") or {}).values():
            for r in rows:
                out.extend(str(r[k]) for k in ("label", "bar", "series") if isinstance(r.get(k), str))
    for c in getattr(w, "children", ()) or ():
        widget_text(c, out)
    return out


def _chart_text(o: object, out: list[str]) -> None:
    if isinstance(o, dict):
        for k, v in o.items():
            if k in ("title", "text") and isinstance(v, str):
                out.append(v)
            elif k != "labelExpr":
                _chart_text(v, out)
    elif isinstance(o, list):
        for x in o:
            _chart_text(x, out)
