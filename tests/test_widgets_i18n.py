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


#: the first word of a label written as code writes it (config.json, torch.compile, hidden_size)
_AS_CODE = re.compile(r"[a-z0-9]+[._][\w.]*")


def _labels(root) -> list[str]:
    """Every label a viewer reads beside a control: descriptions, toggle buttons' and folds' titles."""
    import ipywidgets as W

    seen, stack = [], [root]
    while stack:
        w = stack.pop()
        d = getattr(w, "description", None)
        if isinstance(d, str) and d:
            seen.append(d)
        if isinstance(w, W.ToggleButtons):
            seen += list(w._options_labels)
        if isinstance(w, W.Accordion):
            seen += [w.get_title(i) for i in range(len(w.children))]
        stack.extend(getattr(w, "children", ()) or ())
    return seen


@pytest.mark.parametrize("lang", ["en", "nl", "de"])
def test_the_sizers_labels_are_capitalised_as_the_ones_beside_them(lang):
    """The model's source (its first tab) and the preset drop-down read "Preset", as "GPU", "Model" and
    "Concurrency" beside them do, in each language; a label that starts with a name written as code
    (config.json, torch.compile, hidden_size) keeps that spelling."""
    from aiworkbook.widgets import ModelSizer

    s = ModelSizer(lang=lang, background=False)
    try:
        assert s.family and s.config_text and s.finetune.controls  # the folded and training ones built
        labels = _labels(s)
        assert s.source._options_labels[0] in labels and s.preset.description in labels
        lower = [x for x in labels if x[:1].isalpha() and not x[0].isupper() and not _AS_CODE.match(x)]
        assert lower == [], f"{lang}: {lower}"
    finally:
        s.close()
