"""The charts' words in a language (legend entries, verdicts), apart from the charts themselves so a
widget's headline or table can say them without importing altair (a dashboard's start-up, issue 33)."""

from __future__ import annotations

from typing import Any


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
