"""The message catalogues: gettext .po files, one per language, under aiworkbook/locale/<lang>/
LC_MESSAGES/messages.po, read with Babel (no compiled .mo in the tree: the .po is what translators
edit and what runs). Every word a person reads is there under a stable id: the library's messages,
the widgets' labels, the patterns', questionnaire's and report's texts. An entry flagged `aiwb-list`
holds a list, one item a line. The languages are the catalogues present; docs/i18n.md says how to
add one."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path

LOCALE_DIR = Path(__file__).resolve().parent / "locale"
DOMAIN = "messages"
#: the flag of an entry that holds a list (use-when, red flags, sizing questions), one item a line
LIST_FLAG = "aiwb-list"


def path(lang: str) -> Path:
    return LOCALE_DIR / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


@cache
def languages() -> tuple[str, ...]:
    """The languages with a catalogue, English first."""
    found = sorted(p.parent.parent.name for p in LOCALE_DIR.glob(f"*/LC_MESSAGES/{DOMAIN}.po"))
    return tuple(sorted(found, key=lambda lang: lang != "en"))


def check_lang(lang: object) -> str:
    """`lang` itself, or a SpecError naming the languages there are."""
    if lang not in languages():
        from aiworkbook.errors import SpecError

        raise SpecError("lang", lang, ", ".join(languages()))
    return str(lang)


#: the layout of a parsed catalogue kept in the cache (`_read`); another number is not read
CACHE_VERSION = 1


@cache
def _read(lang: str) -> tuple[dict[str, str], frozenset[str]]:
    """Id -> words and the ids of list entries. Babel reads a catalogue in about 10 ms (its reader loads
    in 6 more), in every dashboard kernel and command: what it read is kept as JSON in the user's cache
    ($XDG_CACHE_HOME/aiworkbook/catalogues), named by the .po's own bytes, so an edited catalogue is
    read by Babel again and a cache that cannot be read or written changes nothing but the time."""
    import hashlib

    raw = path(check_lang(lang)).read_bytes()
    kept = _kept(lang, hashlib.sha256(raw).hexdigest()[:32])
    found = _from_cache(kept)
    if found is None:
        found = _parse(raw, lang)
        doc = {"version": CACHE_VERSION, "strings": found[0], "lists": sorted(found[1])}
        _keep(kept, json.dumps(doc, ensure_ascii=False))
    return found


def _keep(kept: Path, text: str) -> None:
    """Write the kept catalogue whole or not at all (a temp file renamed over it: another kernel reading
    it at the same moment sees the old file or the new one). Not aiworkbook.persist, which says its
    errors in words read from this module; a cache that cannot be written is no error."""
    import os
    import tempfile

    try:
        kept.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{kept.name}.", suffix=".tmp", dir=kept.parent)
    except OSError:
        return  # a read-only home: no cache, the same words
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, kept)
    except OSError:
        Path(tmp).unlink(missing_ok=True)


def _kept(lang: str, key: str) -> Path:
    from aiworkbook.paths import cache_dir

    return cache_dir() / "catalogues" / f"{lang}-{key}.json"


def _from_cache(kept: Path) -> tuple[dict[str, str], frozenset[str]] | None:
    """The kept catalogue, or None when there is none or it is not one this code wrote (another
    version, cut short, edited)."""
    try:
        doc = json.loads(kept.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("version") != CACHE_VERSION:
        return None
    strings, lists = doc.get("strings"), doc.get("lists")
    if not isinstance(strings, dict) or not isinstance(lists, list):
        return None
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in strings.items()):
        return None
    if not all(isinstance(k, str) and k in strings for k in lists):
        return None
    return strings, frozenset(lists)


def _parse(raw: bytes, lang: str) -> tuple[dict[str, str], frozenset[str]]:
    """The .po's bytes read by Babel: the entries that are translated and not fuzzy (gettext's rule)."""
    import io

    from babel.messages.pofile import read_po

    cat = read_po(io.BytesIO(raw), locale=lang)
    found = [m for m in cat if m.id and m.string and not m.fuzzy]
    return {str(m.id): str(m.string) for m in found}, frozenset(
        str(m.id) for m in found if LIST_FLAG in m.flags
    )


def catalogue(lang: str) -> dict[str, str]:
    """Message id -> template in `lang`; a fuzzy or empty entry counts as missing (gettext's rule).
    SpecError for a language without a catalogue."""
    return _read(lang)[0]


@cache
def entries(lang: str) -> dict[str, str | tuple[str, ...]]:
    """Id -> words in `lang`, a list entry as its items."""
    strings, lists = _read(lang)
    return {id: tuple(s.split("\n")) if id in lists else s for id, s in strings.items()}


class _Tables(Mapping[str, dict[str, str | tuple[str, ...]]]):
    """lang -> entries(lang), each catalogue read on first use (an English page reads only English)."""

    def __getitem__(self, lang: str) -> dict[str, str | tuple[str, ...]]:
        if lang not in languages():
            raise KeyError(lang)
        return entries(lang)

    def __iter__(self) -> Iterator[str]:
        return iter(languages())

    def __len__(self) -> int:
        return len(languages())


#: every language's entries: TABLES["nl"]["report.notes"]
TABLES: Mapping[str, dict[str, str | tuple[str, ...]]] = _Tables()


def template(id: str, lang: str = "en") -> str:
    """The template of message `id` in `lang`; SpecError for an id the catalogue lacks."""
    found = catalogue(lang).get(id)
    if found is None:
        from aiworkbook.errors import SpecError

        raise SpecError("message id", id, f"an id of {path(lang).relative_to(LOCALE_DIR.parent)}")
    return found
