"""The message catalogues: gettext .po files, one per language, under aiworkbook/locale/<lang>/
LC_MESSAGES/messages.po, read with Babel (no compiled .mo in the tree: the .po is what translators
edit and what runs). The languages are the catalogues present; docs/i18n.md says how to add one."""

from __future__ import annotations

from functools import cache
from pathlib import Path

LOCALE_DIR = Path(__file__).resolve().parent / "locale"
DOMAIN = "messages"


def path(lang: str) -> Path:
    return LOCALE_DIR / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


@cache
def languages() -> tuple[str, ...]:
    """The languages with a catalogue, English first."""
    found = sorted(p.parent.parent.name for p in LOCALE_DIR.glob(f"*/LC_MESSAGES/{DOMAIN}.po"))
    return tuple(sorted(found, key=lambda lang: lang != "en"))


@cache
def catalogue(lang: str) -> dict[str, str]:
    """Message id -> template in `lang`; a fuzzy or empty entry counts as missing (gettext's rule).
    SpecError for a language without a catalogue."""
    if lang not in languages():
        from aiworkbook.errors import SpecError

        raise SpecError("lang", lang, ", ".join(languages()))
    from babel.messages.pofile import read_po

    with path(lang).open("rb") as f:
        cat = read_po(f, locale=lang)
    return {str(m.id): str(m.string) for m in cat if m.id and m.string and not m.fuzzy}


def template(id: str, lang: str = "en") -> str:
    """The template of message `id` in `lang`; SpecError for an id the catalogue lacks."""
    found = catalogue(lang).get(id)
    if found is None:
        from aiworkbook.errors import SpecError

        raise SpecError("message id", id, f"an id of {path(lang).relative_to(LOCALE_DIR.parent)}")
    return found
