"""`--help` under `aiworkbook --lang nl|de` (issue 31): the help of every command and option the
catalogue has an id for, said in the language; the English entries equal the code's help, so English
`--help` stays as written. The pages are made by typer's CliRunner through the global --lang; each is
first seen as English in the English run, so a pass is not an empty page or a checker that sees nothing.
click's own frame (Usage:, Options:, --help's line, [required], [default: ...]) is still English
(docs/i18n.md) and is taken out of the page before it is checked."""

from __future__ import annotations

import re
from functools import cache

import pytest
from english_left import english_left
from typer.testing import CliRunner

from aiworkbook.catalogue import catalogue
from aiworkbook.cli import app, command
from aiworkbook.cli.help_lang import helps
from aiworkbook.cli.lang import set_lang

#: click's and typer's own words on a help page, still English under --lang, and the metavars (a
#: value's type: <path>, <list[str]>, names as options are)
FRAME = re.compile(
    r"^Usage: .*$|^(Options|Arguments|Commands):$|Show this message and exit\.|\[required\]|\[default:\s[^\]]*\]"
    r"|<[^>\s]*>",
    re.M,
)


def _ids() -> dict[str, str]:
    return {i: e for i, e in catalogue("en").items() if i == "help" or i.startswith("help.")}


def _pages() -> list[list[str]]:
    """The command paths whose own help the catalogue says (every command's, at least), visible ones."""
    out: list[list[str]] = []

    def walk(cmd, path):
        if not getattr(cmd, "hidden", False):
            out.append(path)
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, [*path, name])

    walk(_root(), [])
    return out


def _page(path: list[str], lang: str) -> str:
    try:
        r = CliRunner().invoke(app, ["--lang", lang, *path, "--help"])
    finally:
        set_lang(None)
    assert r.exit_code == 0, r.output
    return r.output


def test_the_english_entries_are_the_codes_help():
    """tools/help_to_po.py wrote them from the code; a help changed in the code without its entry
    (or the other way round) fails here, so English --help is always the code's own words."""
    code = {i: e for i, _, e in helps(command())}
    ids = _ids()
    assert len(ids) >= 60
    assert {i: e for i, e in ids.items() if code.get(i) != e} == {}


@pytest.mark.parametrize("lang", ["nl", "de"])
def test_every_help_id_is_said_in_the_language(lang):
    table = catalogue(lang)
    assert [i for i in _ids() if not table.get(i)] == []


def test_every_help_has_an_id():
    """Every command's and parameter's help has its entry (a new option without one reads English
    under --lang: add it with tools/help_to_po.py, then its nl and de)."""
    ids = _ids()
    assert [i for i, _, _ in helps(_root()) if i not in ids] == []


@pytest.mark.timeout(60)
@pytest.mark.parametrize("lang", ["nl", "de"])
def test_help_pages_say_their_help_in_the_language(lang):
    """Every visible page (the root, each group, each command): English left in English, none in the
    language."""
    pages = _pages()
    assert [] in pages and ["size"] in pages and ["prove", "serving"] in pages and len(pages) >= 30
    for path in pages:
        en, said = _words(path, "en"), _words(path, lang)
        assert english_left(en, lang), (path, en)
        assert not english_left(said, lang), (path, said)


def _words(path: list[str], lang: str) -> str:
    """A page less click's frame and the names of the commands and arguments it lists (names, as
    options are)."""
    page = FRAME.sub(" ", _page(path, lang))
    cmd = _cmd(path)
    shown = [cmd, *getattr(cmd, "commands", {}).values()]  # `check` shows its default command's
    args = [p.name for c in shown for p in c.params if p.param_type_name == "argument"]
    for name in [*getattr(cmd, "commands", {}), *args]:
        page = re.sub(rf"^  {re.escape(name)}(?=[\s.])", " ", page, flags=re.M)
    return page


@cache
def _root():
    return command()


def _cmd(path: list[str]):
    cmd = _root()
    for name in path:
        cmd = cmd.commands[name]
    return cmd
