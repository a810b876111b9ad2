"""One table per language (en, nl, de) with the same keys; `text(key, lang)` reads them."""

from __future__ import annotations

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
