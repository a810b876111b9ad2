"""Widget labels, read from the gettext catalogues (aiworkbook/locale/<lang>/LC_MESSAGES/messages.po
through aiworkbook.catalogue), the same ones the library's messages, the patterns and the report use;
a label with fields is formatted like any message (aiworkbook.message)."""

from __future__ import annotations

from typing import Any

from aiworkbook.catalogue import TABLES, catalogue, check_lang, languages

LANGS: tuple[str, ...] = languages()

__all__ = ["LANGS", "TABLES", "check_lang", "choice", "label", "native", "page_lang", "size_name", "yes_no"]


def label(key: str, lang: str = "en", **fmt: Any) -> str:
    """The label `key` in `lang`, its fields filled from `fmt` (aiworkbook.message's kinds);
    SpecError for an unknown language or key."""
    from aiworkbook.catalogue import template

    if not fmt:
        return template(key, check_lang(lang))
    from aiworkbook.message import render

    return render(key, fmt, check_lang(lang))


def choice(value: Any, lang: str = "en") -> str:
    """What a drop-down shows for the library's `value`: `choice.<value>`, a pattern's or a proof's
    title, else the value itself (dtype, recipe and engine names read the same in every language)."""
    words = catalogue(check_lang(lang))
    for key in (f"choice.{value}", f"pattern.{value}.title", f"proof.{value}.title"):
        if key in words:
            return words[key]
    return str(value)


def native(lang: str) -> str:
    """A language's name in that language (the switch shows them so): Babel's CLDR display name."""
    from babel import Locale

    return str(Locale.parse(lang).get_display_name(lang)).capitalize()


def page_lang(default: str | None = None) -> str:
    """The language of this dashboard page: `?lang=` of the viewer's URL (Voilà puts the query in the
    kernel's QUERY_STRING), else `aiworkbook app --lang` (the AIWORKBOOK_LANG variable), else English.
    An unknown language falls back rather than failing: a typo in a URL never breaks the page."""
    import os
    from urllib.parse import parse_qs

    from aiworkbook.i18n_format import LANG_ENV  # not aiworkbook.cli: typer and the CLI at every start

    asked = parse_qs(os.environ.get("QUERY_STRING", "")).get("lang", [None])[-1]
    for lang in (asked, os.environ.get(LANG_ENV), default):
        if lang in languages():
            return str(lang)
    return "en"


def switch_html(lang: str) -> str:
    """A small drop-down of the three languages; choosing one reloads the page with `?lang=` (the
    widgets are built in one language, so a reload re-renders every word and number at once)."""
    import html

    opts = "".join(
        f'<option value="{code}"{" selected" if code == lang else ""}>{native(code)}</option>'
        for code in languages()
    )
    return (
        '<form method="get" class="aiwb-lang" style="float:right;margin:0 0 0 1em">'
        f"<label>{html.escape(label('language', lang))} "
        f'<select name="lang" onchange="this.form.submit()">{opts}</select></label></form>'
    )


def page_header(key: str, lang: str, intro: bool = True, switch: bool = True) -> Any:
    """A dashboard's language switch, title (`page.<key>.title`) and introduction (`page.<key>.intro`)
    in `lang`: one widget, so they render together."""
    import html
    import re

    import ipywidgets as W

    text = switch_html(lang) if switch else ""
    text += f"<h1>{html.escape(label(f'page.{key}.title', lang))}</h1>"
    if intro:  # `a command` in the catalogue's words shows as code, not with its backquotes
        said = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(label(f"page.{key}.intro", lang)))
        text += f"<p>{said}</p>"
    w = W.HTML(text)
    w.add_class("aiwb-page-header")
    return w


def section(key: str, lang: str) -> Any:
    """A section heading of a dashboard in `lang`."""
    import html

    import ipywidgets as W

    return W.HTML(f"<h2>{html.escape(label(key, lang))}</h2>")


def size_name(key: str, lang: str) -> str:
    """A plan setting's name in `lang` (its `_bytes` suffix already dropped by the caller): `size.<key>`
    of the catalogue; a setting without one shows as its English name, which the English-left test
    (tests/test_lang.py) reports."""
    return catalogue(check_lang(lang)).get(f"size.{key}", key.replace("_", " "))


def yes_no(value: bool, lang: str) -> str:
    """A plan setting's on/off in `lang`."""
    return label("value.yes" if value else "value.no", lang)
