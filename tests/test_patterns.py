"""Patterns: the three language tables agree, the questionnaire validates and recommends."""

from __future__ import annotations

import pytest

from aiworkbook.errors import SpecError
from aiworkbook.patterns import (
    LANGS,
    PATTERNS,
    QUESTIONS,
    TABLES,
    TARGETS,
    get_pattern,
    patterns,
    recommend,
)
from aiworkbook.proofs import registry


def test_languages_hold_the_same_keys():
    en = TABLES["en"]
    for lang in LANGS:
        table = TABLES[lang]
        missing, extra = set(en) - set(table), set(table) - set(en)
        assert not missing and not extra, f"{lang}: missing {sorted(missing)}, extra {sorted(extra)}"
        for key, value in en.items():
            other = table[key]
            assert type(other) is type(value), f"{lang}:{key} is a {type(other).__name__}"
            if isinstance(value, tuple):
                assert len(other) == len(value), f"{lang}:{key} has {len(other)} items, en {len(value)}"
            items = other if isinstance(other, tuple) else (other,)
            assert all(isinstance(s, str) and s.strip() for s in items), f"{lang}:{key} is empty"


def test_translations_are_translated():
    """A Dutch or German title equal to the English one is most likely a copy-paste, not a translation."""
    for p in PATTERNS:
        titles = {lang: get_pattern(p, lang).title for lang in LANGS}
        assert len(set(titles.values())) == 3, titles


def test_format_placeholders_agree():
    import string

    for key, value in TABLES["en"].items():
        if not isinstance(value, str):
            continue
        fields = {f for _, f, _, _ in string.Formatter().parse(value) if f}
        for lang in LANGS:
            other = {f for _, f, _, _ in string.Formatter().parse(str(TABLES[lang][key])) if f}
            assert other == fields, f"{lang}:{key}"


def test_every_label_the_code_asks_for_exists():
    for lang in LANGS:
        for p in patterns(lang):
            assert p.use_when and p.infrastructure and p.red_flags and p.sizing_questions
            assert set(p.target_labels()) == set(p.targets)
        for q in QUESTIONS:
            assert q.label(lang)
            assert set(q.choice_labels(lang)) == set(q.choices)
        for t in TARGETS:
            assert TABLES[lang][f"target.{t}"]


def test_every_proof_a_pattern_names_is_registered():
    known = set(registry.names())
    for p in patterns():
        assert set(p.proofs) <= known, p.id
        assert set(p.targets) <= set(TARGETS)


@pytest.mark.parametrize(
    ("answers", "pattern", "node"),
    [
        ({"model_kind": "tabular", "phase": "training"}, "classical-ml-cpu", "cpu-highmem"),
        ({"model_kind": "llm", "phase": "training"}, "dl-training", "gpu-training-8xh100"),
        (
            {"model_kind": "llm", "phase": "serving", "latency_slo_ms": 300},
            "llm-inference",
            "inference-4xl40s",
        ),
        ({"model_kind": "neural", "phase": "both", "separate_pools": True}, "hybrid", "hybrid-pools"),
        ({"model_kind": "llm", "phase": "both", "latency_slo_ms": 200}, "hybrid", "hybrid-pools"),
        ({"model_kind": "neural", "phase": "both"}, "dl-training", "gpu-training-8xh100"),
    ],
)
def test_recommend_picks_the_pattern_and_its_nodes(answers, pattern, node):
    rec = recommend(answers)
    assert rec.pattern.id == pattern
    assert node in rec.nodes
    assert rec.reasons and rec.sizing_questions and rec.proofs and rec.targets
    assert set(rec.planned_proofs) == {p for p in rec.proofs if p not in registry.names()}


def test_recommend_adds_slo_and_multi_node():
    rec = recommend({"model_kind": "llm", "phase": "serving", "latency_slo_ms": 250, "multi_node": True})
    assert "allreduce" in rec.proofs
    assert any("250" in r for r in rec.reasons)
    assert {"p95_p99", "ttft", "kv_headroom"} <= set(rec.targets)
    plain = recommend({"model_kind": "llm", "phase": "serving"})
    assert "allreduce" not in plain.proofs and len(plain.reasons) == 1


def test_recommend_speaks_each_language():
    answers = {"model_kind": "llm", "phase": "training"}
    en, nl, de = (recommend(answers, lang) for lang in ("en", "nl", "de"))
    assert en.pattern.id == nl.pattern.id == de.pattern.id
    assert en.reasons != nl.reasons != de.reasons
    assert nl.targets["peak_vram"] == TABLES["nl"]["target.peak_vram"]
    assert en.to_dict()["proofs"] == de.to_dict()["proofs"]


@pytest.mark.parametrize(
    ("answers", "field"),
    [
        ({"model_kind": "cnn", "phase": "training"}, "model_kind"),
        ({"model_kind": "llm"}, "phase"),
        ({"model_kind": "llm", "phase": "serving", "latency_slo_ms": -5}, "latency_slo_ms"),
        ({"model_kind": "llm", "phase": "serving", "latency_slo_ms": "fast"}, "latency_slo_ms"),
        ({"model_kind": "llm", "phase": "serving", "latency_slo_ms": float("nan")}, "latency_slo_ms"),
        ({"model_kind": "llm", "phase": "both", "separate_pools": "maybe"}, "separate_pools"),
        ({"model_kind": "llm", "phase": "both", "colour": "blue"}, "question"),
    ],
)
def test_bad_answers_name_the_question(answers, field):
    with pytest.raises(SpecError) as e:
        recommend(answers)
    assert e.value.field == field
    if field == "model_kind":
        assert "tabular, neural, llm" in str(e.value)


def test_unknown_language_and_pattern():
    with pytest.raises(SpecError, match=", ".join(LANGS)):  # the languages: the catalogues present
        recommend({"model_kind": "llm", "phase": "training"}, lang="fr")
    with pytest.raises(SpecError, match="classical-ml-cpu"):
        get_pattern("quantum")


def test_patterns_and_profile_import_without_torch_or_jupyter():
    import subprocess
    import sys

    code = (
        "import sys, aiworkbook.patterns, aiworkbook.profile; "
        "print(sorted(m for m in ('torch', 'ipywidgets', 'IPython', 'altair') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_each_public_name_loads_its_module_on_first_use():
    """aiworkbook.patterns loads lazily (a kernel that needs a sentence of the catalogue does not load
    the questionnaire): every name of __all__ is still there, the same object as in its module."""
    import subprocess
    import sys

    code = (
        "import sys, aiworkbook.patterns as p\n"
        "print('aiworkbook.patterns.catalog' in sys.modules, p.text('where.cpu', 'en') != '',\n"
        "      'aiworkbook.patterns.questionnaire' in sys.modules)\n"
        "from aiworkbook.patterns import *\n"
        "from aiworkbook.patterns.questionnaire import recommend as r\n"
        "print(all(getattr(p, n) is not None for n in p.__all__), p.recommend is r)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["False", "True", "False", "True", "True"]
    import aiworkbook.patterns as p

    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        p.nothing_here  # noqa: B018
