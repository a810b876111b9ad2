"""The patterns', questionnaire's and report's words, read from the gettext catalogues
(aiworkbook.catalogue): `text(key, lang)` for a text, `texts(key, lang)` for a list."""

from __future__ import annotations

from aiworkbook.catalogue import TABLES, check_lang, languages
from aiworkbook.errors import SpecError

LANGS: tuple[str, ...] = languages()

__all__ = ["LANGS", "TABLES", "check_lang", "text", "texts"]


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
        raise SpecError("key", key, f"a key of the {lang} catalogue")
    return table[key]
