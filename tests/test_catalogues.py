"""The gettext catalogues (aiworkbook/locale/<lang>/LC_MESSAGES/messages.po): every message id the
code uses, as `pybabel extract` finds it with babel.cfg, has a translation in every language, none
fuzzy, with the same named fields as the English; messages.pot is what extraction gives today; and
every message renders with extreme arguments in every language, without English left in nl or de."""

from __future__ import annotations

import ast
import io
import string
from functools import cache
from pathlib import Path

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po
from english_left import english_left

from aiworkbook.catalogue import LOCALE_DIR, catalogue, languages, path
from aiworkbook.message import Msg

ROOT = Path(__file__).resolve().parents[1]
OTHERS = [lang for lang in languages() if lang != "en"]


@cache
def extracted_ids() -> frozenset[str]:
    """The ids `pybabel extract -F babel.cfg -k Msg` finds in the sources."""
    with (ROOT / "babel.cfg").open() as f:
        method_map, options_map = parse_mapping_cfg(f)
    ids = set()
    for top in ("aiworkbook", "widgets"):
        # babel.cfg's patterns are relative to the tree root; one directory at a time keeps .venv out
        rel = [(p.removeprefix(f"{top}/"), m) for p, m in method_map if p.startswith(f"{top}/")]
        for _file, _line, msg, _comments, _ctx in extract_from_dir(
            ROOT / top, rel, options_map, keywords={"Msg": None, "template": None}
        ):
            ids.add(msg if isinstance(msg, str) else msg[0])
    return frozenset(ids)


@cache
def named_in_code() -> tuple[frozenset[str], tuple[str, ...]]:
    """(every string literal of the sources, the id prefixes their f-strings compose: `page.` of
    f"page.{key}.title"): a label, a pattern's text or a plan setting's name is asked for by an id the
    code composes or passes around, which no extractor sees as a call's argument."""
    literals: set[str] = set()
    prefixes: set[str] = set()
    for top in ("aiworkbook", "widgets"):
        for src in (ROOT / top).rglob("*.py"):
            for node in ast.walk(ast.parse(src.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    literals.add(node.value)
                elif isinstance(node, ast.JoinedStr) and node.values:
                    head = node.values[0]
                    if isinstance(head, ast.Constant) and str(head.value).endswith((".", "_")):
                        prefixes.add(str(head.value))
    return frozenset(literals), tuple(sorted(prefixes))


def used_ids(have: set[str]) -> set[str]:
    """The entries of `have` the code asks for: extracted, written as a literal, or composed."""
    from aiworkbook.widgets.finetune import all_fields

    literals, prefixes = named_in_code()
    literals |= set(all_fields())  # the sizer labels a fine-tuning control by its Workload field
    return {i for i in have if i in extracted_ids() or i in literals or i.startswith(prefixes)}


def fields(template: str) -> set[str]:
    return {f.partition(".")[0].partition("[")[0] for _, f, _, _ in string.Formatter().parse(template) if f}


def problems(
    po: bytes,
    english: dict[str, str],
    ids: frozenset[str] | set[str],
    lang: str,
    used: set[str] | None = None,
) -> list[str]:
    """What is wrong with one catalogue: an id without translation (of `ids`: those the code calls
    with, and English's), a fuzzy entry, fields that differ from the English, an entry no code uses
    (`used`, default `ids`), and Babel's own checkers' complaints."""
    cat = read_po(io.BytesIO(po), locale=lang)
    out = [f"{m.id}: fuzzy" for m in cat if m.id and m.fuzzy]
    have = {str(m.id): str(m.string) for m in cat if m.id}
    out += [f"{i}: no translation" for i in sorted(ids) if not have.get(i)]
    out += [f"{i}: no code uses it" for i in sorted(set(have) - (ids if used is None else used))]
    out += [
        f"{i}: fields {sorted(fields(t))} != English {sorted(fields(english[i]))}"
        for i, t in have.items()
        if t and i in english and fields(t) != fields(english[i])
    ]
    out += [f"{m.id}: {e}" for m, errors in cat.check() for e in errors]
    return out


def test_the_code_uses_messages_and_the_template_is_current():
    ids = extracted_ids()
    assert {"roofline.buffers", "host.plan", "allowed.int_range"} <= ids
    with (LOCALE_DIR / "messages.pot").open("rb") as f:
        pot = {str(m.id) for m in read_po(f) if m.id}
    assert pot == ids, "run the pybabel extract line of babel.cfg"


@pytest.mark.parametrize("lang", languages())
def test_every_id_is_translated_not_fuzzy_with_the_same_fields(lang):
    english = catalogue("en")
    ids = extracted_ids() | set(english)
    assert problems(path(lang).read_bytes(), english, ids, lang, used_ids(set(english))) == []


def test_an_entry_no_code_names_is_reported():
    """A label, text or list the code neither names nor composes is dead: the check sees it."""
    assert used_ids({"report.notes", "stale", "choice.static", "no_such.label", "pattern", "check_2"}) == {
        "check_2",  # composed: f"check_{report.exit_code}"
        "report.notes",  # composed: f"report.{...}"
        "stale",  # a literal: self.t("stale")
        "choice.static",  # composed: f"choice.{value}"
        "pattern",  # a literal
    }


def test_the_check_catches_a_missing_a_fuzzy_and_a_mismatched_entry():
    english = {"a": "two {size:bytes} on {device}", "b": "b", "c": "c"}
    po = (
        b'msgid "a"\nmsgstr "twee {grootte:bytes} op {device}"\n\n'
        b'#, fuzzy\nmsgid "b"\nmsgstr "b?"\n\n'
        b'msgid "old"\nmsgstr "oud"\n'
    )
    found = "\n".join(problems(po, english, {"a", "b", "c"}, "nl"))
    for what in ("a: fields", "b: fuzzy", "c: no translation", "old: no code uses it"):
        assert what in found


def test_languages_are_the_catalogues_present():
    assert languages()[0] == "en" and {"nl", "de"} <= set(languages())


#: figures at the edges: nothing, one, two (plural forms), huge, tiny
EXTREMES = (0, 1, 2, 10**15, 1e-9)


def _args(id: str, x: float) -> dict[str, object]:
    """Arguments for message `id`: each field's kind as any language's template writes it (English
    may print a count plainly where Dutch picks a plural form by it)."""
    kinds: dict[str, str] = {}
    for lang in languages():
        for _, f, spec, _ in string.Formatter().parse(catalogue(lang)[id]):
            if f:
                kinds[f] = kinds.get(f) or (spec or "").partition(":")[0]
    out: dict[str, object] = {}
    for f, kind in kinds.items():
        if kind == "list":
            out[f] = [x, x]
        elif kind in ("int", "plural"):
            out[f] = int(x)
        else:  # a plain field may hold a nested message; the rest are figures
            out[f] = x if kind else Msg("value.na")
    return out


@pytest.mark.parametrize("x", EXTREMES)
def test_every_message_renders_at_the_extremes_in_every_language(x):
    for id, english in catalogue("en").items():
        if id == "help" or id.startswith("help."):
            continue  # --help's words, shown as written, not a template (tests/test_help_lang.py)
        m = Msg(id, **_args(id, x))
        for lang in languages():
            text = m.render(lang)
            assert text and not any("{" + f in text for f in fields(english)), (id, lang, text)
            assert "None" not in text and "nan" not in text.lower().split()
            if lang != "en":
                assert not english_left(text, lang), (id, lang, text)


def _forget() -> None:
    from aiworkbook import catalogue as c

    for f in (c.languages, c._read, c.entries):
        f.cache_clear()


def test_a_new_language_is_one_po_file(tmp_path, monkeypatch):
    """docs/i18n.md's recipe: a French catalogue dropped next to the others is offered and used (words,
    figures, plural forms and its name in the switch), with no other change to the code."""
    import shutil

    from aiworkbook.widgets.i18n import label, native, page_lang

    from aiworkbook import catalogue as c
    from aiworkbook.i18n_format import fixed

    locale = tmp_path / "locale"
    shutil.copytree(LOCALE_DIR, locale)
    fr = locale / "fr" / "LC_MESSAGES"
    fr.mkdir(parents=True)
    po = (locale / "en" / "LC_MESSAGES" / "messages.po").read_text(encoding="utf-8")
    po = po.replace('"Language: en\\n"', '"Language: fr\\n"')
    po = po.replace('msgid "cancel"\nmsgstr "Cancel"', 'msgid "cancel"\nmsgstr "Annuler"')
    (fr / "messages.po").write_text(po, encoding="utf-8")
    monkeypatch.setattr(c, "LOCALE_DIR", locale)
    monkeypatch.setenv("QUERY_STRING", "lang=fr")
    _forget()
    try:
        assert "fr" in c.languages()
        assert label("cancel", "fr") == "Annuler" and page_lang() == "fr" and native("fr") == "Français"
        assert fixed(1234.5, 1, "fr", group=False) == "1234,5"  # CLDR's French, from the file's name
        assert Msg("roofline.buffers", size=2**28, free=2**34, device="cpu").render("fr").count(",00") == 2
    finally:
        monkeypatch.undo()
        _forget()
    assert "fr" not in c.languages()


def test_a_catalogue_read_once_is_kept_and_an_edited_or_broken_one_is_read_again(tmp_path, monkeypatch):
    """What Babel read from a .po is kept in the user's cache (named by the .po's bytes): a later kernel
    reads the same words without Babel's reader; an edited .po is read by Babel again, and a kept file that
    is broken or not this code's is ignored and written anew."""
    import json
    import os
    import shutil
    import subprocess
    import sys

    from aiworkbook import catalogue as c

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    _forget()
    try:
        first = dict(c.catalogue("en"))
        (kept,) = (tmp_path / "cache" / "aiworkbook" / "catalogues").glob("en-*.json")
        assert json.loads(kept.read_text(encoding="utf-8"))["strings"] == first
        code = (
            "import sys; from aiworkbook.catalogue import catalogue\n"
            "print(len(catalogue('en')), 'babel.messages.pofile' in sys.modules)"
        )
        env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
        )
        assert out.stdout.split() == [str(len(first)), "False"]  # the kept words, no .po parsed

        kept.write_text('{"version": 1, "strings": {"cancel": 3}, "lists": []}', encoding="utf-8")
        _forget()
        assert c.catalogue("en") == first  # a kept file that is not this code's: Babel reads the .po
        assert json.loads(kept.read_text(encoding="utf-8"))["strings"] == first

        locale = tmp_path / "locale"
        shutil.copytree(LOCALE_DIR, locale)
        po = locale / "en" / "LC_MESSAGES" / "messages.po"
        po.write_text(
            po.read_text(encoding="utf-8").replace(
                'msgid "cancel"\nmsgstr "Cancel"', 'msgid "cancel"\nmsgstr "Stop"'
            ),
            encoding="utf-8",
        )
        monkeypatch.setattr(c, "LOCALE_DIR", locale)
        _forget()
        assert c.catalogue("en")["cancel"] == "Stop"  # an edited .po: its own key, read again
        assert len(list(kept.parent.glob("en-*.json"))) == 2
    finally:
        monkeypatch.undo()
        _forget()
