"""One table per language (en, nl, de) with the same keys; `text(key, lang)` reads them."""

from __future__ import annotations

import re

from aiworkbook.errors import SpecError
from aiworkbook.patterns import text_de, text_en, text_nl

LANGS: tuple[str, ...] = ("en", "nl", "de")
TABLES: dict[str, dict[str, str | tuple[str, ...]]] = {
    "en": text_en.TEXT,
    "nl": text_nl.TEXT,
    "de": text_de.TEXT,
}


def check_lang(lang: str) -> str:
    if lang not in TABLES:
        raise SpecError("lang", lang, ", ".join(LANGS))
    return lang


def text(key: str, lang: str = "en") -> str:
    """The string under `key` in `lang`; SpecError for an unknown language or key."""
    v = _get(key, lang)
    if not isinstance(v, str):
        raise SpecError("key", key, "a text key (this one holds a list: use texts())")
    return v


def texts(key: str, lang: str = "en") -> tuple[str, ...]:
    """The list of strings under `key` in `lang` (use-when, infrastructure, red flags, sizing)."""
    v = _get(key, lang)
    return (v,) if isinstance(v, str) else tuple(v)


def _get(key: str, lang: str) -> str | tuple[str, ...]:
    table = TABLES[check_lang(lang)]
    if key not in table:
        raise SpecError("key", key, f"a key of the {lang} table")
    return table[key]


#: a figure inside a sentence the library wrote (not a digit inside a name such as fp32)
_FIGURE = re.compile(r"(?<![\w.,])\d+(?:[.,]\d+)*(?=x\b|[^\w]|$)")  # 1.69x is a figure too


def said(sentence: str, lang: str = "en") -> str:
    """A sentence the library wrote in English (a proof's plan, its notes), in `lang`: its figures
    become slots, the catalog's `said.<English with {} slots>` entry gives the words, and the figures
    come back in the language's format. A sentence the catalog lacks (or joined parts, split at "; ")
    stays as written, so a new library sentence shows, in English, until someone adds it."""
    if check_lang(lang) == "en" or not sentence:
        return sentence
    from aiworkbook.i18n_format import localize_numbers

    parts = []
    for part in sentence.split("; "):
        figures = _FIGURE.findall(part)
        template = TABLES[lang].get("said." + _FIGURE.sub("{}", part))
        if isinstance(template, str):
            part = template.format(*(localize_numbers(f, lang) for f in figures))
        parts.append(part)
    return "; ".join(parts)
