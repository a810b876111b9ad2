"""The viewer's language: numbers in Babel's formats, one catalog with every key in every language,
`aiworkbook app --lang` and `?lang=` reaching the page, choices and charts in the language, and the
offline report without English words or English-formatted figures."""

from __future__ import annotations

import re
import string

import pytest
from english_left import english_left

from aiworkbook.errors import SpecError
from aiworkbook.i18n_format import fixed, integer, money, percent
from aiworkbook.units import GiB, fmt_bytes, fmt_value


@pytest.mark.parametrize("lang", ["nl", "de"])
def test_babel_formats_in_dutch_and_german(lang):
    assert integer(4096, lang) == "4.096"
    assert fmt_bytes(40.2449 * GiB, "GiB", lang) == "40,24 GiB"
    assert fmt_bytes(-646.95 * GiB, lang=lang) == "-646,95 GiB"
    assert fixed(1234567.891, 2, lang) == "1.234.567,89"
    assert percent(0.123, 1, lang) == "12,3 %"
    assert "1,26" in money(1.26, lang) and "$" in money(1.26, lang)
    assert fmt_value(2.5e9, "B/s", lang) == "2,50 GB/s"


def test_english_keeps_pythons_own_format():
    assert integer(4096) == "4,096"
    assert fmt_bytes(40.2449 * GiB, "GiB") == "40.24 GiB"
    assert money(1.26) == "$1.26" and percent(0.123) == "12.3%"
    with pytest.raises(SpecError, match="lang"):
        fixed(1.0, 2, "fr")


def test_one_catalog_every_key_in_every_language():
    from aiworkbook.widgets.i18n import TABLES as LABELS
    from aiworkbook.widgets.i18n import label

    from aiworkbook.catalogue import TABLES
    from aiworkbook.patterns.i18n import TABLES as TEXTS

    assert LABELS is TEXTS is TABLES  # one catalogue per language, for widgets, library and report
    keys = set(TABLES["en"])
    for lang in ("nl", "de"):
        assert set(TABLES[lang]) == keys, (lang, set(TABLES[lang]) ^ keys)
        for k in keys:
            if isinstance(TABLES["en"][k], str):
                fields = {f for _, f, _, _ in string.Formatter().parse(str(TABLES["en"][k])) if f}
                assert fields == {f for _, f, _, _ in string.Formatter().parse(str(TABLES[lang][k])) if f}, k
    assert label("chart.rule", "de") == TEXTS["de"]["chart.rule"] == "Faustregel"


def test_app_passes_the_language_and_refuses_another(monkeypatch):
    from aiworkbook.cli.app_cmds import LANG_ENV, launch

    assert launch("sizing", lang="nl").env[LANG_ENV] == "nl"
    assert launch("report").env[LANG_ENV] == "en"
    with pytest.raises(SpecError, match="lang"):
        launch("monitor", lang="fr")


def test_the_page_language_from_the_url_then_the_server(monkeypatch):
    from aiworkbook.widgets.i18n import page_lang

    from aiworkbook.cli.app_cmds import LANG_ENV

    monkeypatch.delenv("QUERY_STRING", raising=False)
    monkeypatch.delenv(LANG_ENV, raising=False)
    assert page_lang() == "en"
    monkeypatch.setenv(LANG_ENV, "de")
    assert page_lang() == "de"
    monkeypatch.setenv("QUERY_STRING", "token=x&lang=nl")
    assert page_lang() == "nl"
    monkeypatch.setenv("QUERY_STRING", "lang=xx")  # a typo in a URL never breaks the page
    assert page_lang() == "de"


def test_switch_marks_the_pages_language():
    from aiworkbook.widgets.i18n import page_header

    html = page_header("sizing", "nl").value
    assert '<option value="nl" selected>Nederlands</option>' in html
    assert 'name="lang"' in html and "<h1>Dimensionering" in html
    assert "<code>aiworkbook size</code>" in html and "`" not in html  # a command as code, in every language


def test_a_page_intro_keeps_its_text_escaped_around_the_code():
    from aiworkbook.widgets.i18n import page_header

    for lang in ("en", "de"):
        html = page_header("sizing", lang).value
        assert html.count("<code>") == html.count("</code>") == 1 and "&lt;code&gt;" not in html


def test_english_choices_read_as_words_too():
    """English pages relabel as the others do: the library's "infer" reads "inference", a proof's name
    its title; the values a notebook reads stay the library's."""
    from aiworkbook.widgets import ModelSizer, ProofRunner

    s = ModelSizer(lang="en", background=False)
    r = ProofRunner(proof="vram", allow_run=False, lang="en")
    try:
        mode = s.controls["mode"]
        assert mode.value == "infer" and mode._options_labels[mode.index] == "inference"
        assert "full training" in mode._options_labels and "infer" not in mode._options_labels
        assert {"LoRA", "QLoRA"} <= set(mode._options_labels)  # as the method is written, not "lora"
        assert r.proof.value == "vram" and r.proof._options_labels[r.proof.index] != "vram"
    finally:
        s.close()
        r.close()


def test_sizer_in_dutch_choices_numbers_and_chart():
    from aiworkbook.widgets import ModelSizer

    s = ModelSizer(lang="nl", background=False)
    try:
        mode = s.controls["mode"]
        assert mode.value == "infer" and "inferentie" in mode._options_labels  # value stays the library's
        mode.value = "train"
        assert s.controls["checkpointing"]._options_labels == ("geen", "selectief", "volledig")
        mode.value = "infer"
        assert "8 × 4.608 tokens" in s.headline.value and "GiB ruimte over" in s.headline.value
        assert re.search(r"\d+,\d\d GiB", s.headline.value)
        spec = s.chart.spec  # the spec on screen
        assert spec["config"]["locale"]["number"]["decimal"] == ","
        words = (
            {r.get("label") for d in spec["datasets"].values() for r in d} if "datasets" in spec else set()
        )
        text = str(spec)
        assert "gewichten" in text and "'weights'" not in text.replace("'component': 'weights'", "")
        assert words is not None
    finally:
        s.close()


def test_a_bad_number_reads_in_german():
    from aiworkbook.widgets import ModelSizer

    s = ModelSizer(lang="de", background=False)
    try:
        s.value = {"tp": "x"}
        assert "ist nicht gültig; erlaubt:" in s.error
        s.value = {"seq_len": 10**12}  # the library's own range check, its message shown in German
        assert s.error.endswith("erlaubt: eine ganze Zahl von 1 bis 16.777.216")
        s.show_error(SpecError("seq_len", 10**12, "text from elsewhere"))  # not a message: as it is
        assert s.error.endswith("erlaubt: text from elsewhere")
    finally:
        s.close()


@pytest.mark.parametrize("lang", ["nl", "de"])
def test_offline_report_has_no_english_words_or_figures(lang):
    import html

    from profile_fakes import CHAT, result

    from aiworkbook.profile import lock
    from aiworkbook.profile.report import render_html

    prof = lock(
        "llm-inference",
        node="inference-4xl40s",
        detected=None,
        workloads=[CHAT],
        results=[result("kv", 9.5e8)],
    )
    page = render_html(prof, lang)
    body = re.sub(r"<style>.*?</style>|<[^>]+>", "\n", page.split("<body", 1)[1].split(">", 1)[1], flags=re.S)
    left = english_left(html.unescape(body), lang)
    assert not left, "English left in the report:\n" + "\n".join(left)


@pytest.mark.parametrize("lang", ["nl", "de"])
def test_widgets_in_every_mode_and_proof_leave_no_english(lang):
    """The states a viewer reaches by clicking (each mode, a model that does not fit, each proof's
    plan), read from the widgets themselves: faster and wider than the browser test."""
    from aiworkbook.widgets import KVPlanner, ModelSizer, ProfileLocker, ProofRunner
    from english_left import widget_text

    found: dict[str, str] = {}

    def check(w: object, where: str) -> None:
        for line in english_left("\n".join(widget_text(w)), lang):
            found.setdefault(line, where)

    sizer = ModelSizer(lang=lang, background=False)
    for mode in ("infer", "train", "lora", "qlora"):
        sizer.controls["mode"].value = mode
        check(sizer, f"sizer, {mode}")
    sizer.value = {"model": "llama-3-70b", "gpu": "RTX-4090", "mode": "infer"}
    check(sizer, "sizer, 70B on an RTX-4090")
    kv = KVPlanner(lang=lang, background=False)
    check(kv, "KV planner")
    runner = ProofRunner(lang=lang, allow_run=False)
    for name in runner.registry.names():
        runner.proof.value = name
        check(runner, f"proof {name}")
    check(ProfileLocker(lang=lang, detect=False), "profile locker")
    for w in (sizer, kv, runner):
        w.close()
    assert not found, "English left:\n" + "\n".join(f"{where}: {line}" for line, where in found.items())
