"""The language the CLI speaks: `aiworkbook --lang nl COMMAND` says a command's messages (its table,
verdict and refusals) in Dutch; English, the default, prints each message's English text as before.
One setting for the process, set by the root callback before any command runs."""

from __future__ import annotations

from aiworkbook.errors import SpecError, printable, quote
from aiworkbook.message import Msg, words

_lang = "en"
_given: str | None = None


def set_lang(lang: str | None) -> None:
    """Speak `lang` (one of the catalogues present; None: English, as no `--lang` given) from now on;
    a SpecError naming `--lang` else."""
    from aiworkbook.catalogue import languages

    global _lang, _given
    if lang is not None and lang not in languages():
        raise SpecError("--lang", lang, ", ".join(languages()))
    _lang, _given = lang or "en", lang


def cli_lang() -> str:
    """The language set by `--lang` (en unless given)."""
    return _lang


def given_lang() -> str | None:
    """The language `aiworkbook --lang` named, None when it was not given: a command whose default is
    another language (a report in its profile's) keeps that default then."""
    return _given


def said(x: object) -> str:
    """`x` in the CLI's language: a message's words, anything else as it is."""
    return words(x, _lang)


def error_line(exc: SpecError) -> str:
    """A refusal's one line: `error: <file>: field 'f' = value is not valid; allowed: ...`, its frame
    and (when it is a message) what is allowed in the CLI's language."""
    if _lang == "en":
        return f"error: {exc}"
    where = f"{printable(exc.source, 400)}: " if exc.source else ""
    if isinstance(exc.allowed, Msg) and str(exc) == exc.allowed:  # a whole sentence (WouldNotFit's)
        return said(Msg("cli.error", text=where + said(exc.allowed)))
    value = quote(said(exc.value)) if isinstance(exc.value, Msg) else quote(exc.value)
    line = Msg("error_line", field=field_name(exc.field), value=value, allowed=exc.allowed)
    return said(Msg("cli.error", text=where + line.render(_lang)))


def field_name(field: str) -> str:
    """A refused field as the CLI's language names it (`field.path`: "pad", "Pfad"), where the
    catalogue has a word for it; else the field as the library names it (`pull_gb_s`, `--tp`)."""
    from aiworkbook.catalogue import catalogue

    return catalogue(_lang).get(f"field.{field}") or printable(field)
