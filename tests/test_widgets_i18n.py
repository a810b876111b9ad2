"""Widget labels (in the gettext catalogues with every other word): the same keys in English, Dutch and German, every key used by a widget exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from aiworkbook.widgets.i18n import LANGS, TABLES, label

from aiworkbook.catalogue import catalogue
from aiworkbook.errors import SpecError

WIDGETS = Path(__file__).resolve().parents[1] / "widgets"


def test_every_language_has_every_key():
    assert set(TABLES) == set(LANGS) == {"en", "nl", "de"}
    keys = set(TABLES["en"])
    for lang in LANGS:
        assert set(TABLES[lang]) == keys, f"{lang}: {set(TABLES[lang]) ^ keys}"


def test_placeholders_match_across_languages():
    fields = re.compile(r"{(\w+)")
    for key, text in catalogue("en").items():
        for lang in LANGS:
            assert set(fields.findall(catalogue(lang)[key])) == set(fields.findall(text)), (lang, key)


def test_every_label_a_widget_asks_for_exists():
    used = set()
    for p in WIDGETS.glob("*.py"):
        used |= set(re.findall(r"""\bt\(\s*["'](\w+)["']""", p.read_text()))
    assert used, "no labels found"
    assert used <= set(TABLES["en"]), used - set(TABLES["en"])


def test_translations_differ_and_unknowns_are_spec_errors():
    assert label("cancel", "nl") != label("cancel", "en") != label("cancel", "de")
    assert label("max_concurrency", "de", context="8,192") == "Max. gleichzeitig bei 8,192 Tokens"
    with pytest.raises(SpecError):
        label("cancel", "fr")
    with pytest.raises(SpecError):
        label("no-such-key")


def test_a_widget_in_dutch_uses_the_dutch_table():
    from aiworkbook.widgets import ProofRunner

    r = ProofRunner(lang="nl", allow_run=True)
    assert r.run_button.description == TABLES["nl"]["run"]
    assert r.cancel_button.description == TABLES["nl"]["cancel"]
    r.close()
