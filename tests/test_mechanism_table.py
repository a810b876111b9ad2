"""docs/sizing.md's family x mechanism tables cannot drift: every mechanism a family can declare has a
column, every family of the registry a row (and an error, or the reason the truth tool does not build it),
each declared mechanism is found in transformers' own source, and the page is what tools/mechanism_table.py
generates from the declarations, transformers and the recorded errors."""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from aiworkbook.proofs.activation_truth import FAMILY_KEYS, NOT_BUILT
from aiworkbook.specs.families import PARSERS

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location("mechanism_table", ROOT / "tools" / "mechanism_table.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("mechanism_table", mod)
    spec.loader.exec_module(mod)
    return mod


table = _tool()


def test_every_declared_mechanism_has_a_column():
    assert set(table.mechanism_fields()) == set(table.COLUMNS)


def test_every_family_is_measured_or_says_why_not():
    data = json.loads(table.ERRORS.read_text())
    assert set(data["families"]) == set(FAMILY_KEYS), "re-run tools/mechanism_table.py --measure"
    assert set(PARSERS) == set(FAMILY_KEYS) | set(NOT_BUILT) and not set(FAMILY_KEYS) & set(NOT_BUILT)
    assert all(abs(f["worst"]) <= 0.05 and f["cases"] >= 18 for f in data["families"].values())


@pytest.mark.timeout(120)
def test_the_page_is_what_the_tool_generates():
    pytest.importorskip("transformers")
    text = table.DOC.read_text()
    page = text[text.index(table.BEGIN) : text.index(table.END) + len(table.END)]
    generated = table.generated()
    groups = dict.fromkeys(c.group for c in table.COLUMNS.values())
    for mt in PARSERS:  # a row in each mechanism table and in the error table
        assert generated.count(f"\n| {mt} | ") == len(groups) + 1, mt
    assert page == generated, "docs/sizing.md is stale: run .venv/bin/python tools/mechanism_table.py --write"


def test_a_declaration_transformers_does_not_do_stops_the_tool():
    """Llama declaring gpt-oss's attention sinks: no line of modeling_llama.py appends a sink."""
    pytest.importorskip("transformers")
    llama = table.families()["llama"]
    wrong = replace(llama, mechanisms=replace(llama.mechanisms, attention_sinks=True))
    with pytest.raises(LookupError, match="attention_sinks"):
        table.cell("llama", wrong, "attention_sinks")
    assert table.cell("llama", llama, "attention_sinks") == "-"
    assert table.cell("llama", llama, "softmax_fp32").startswith("yes: ")
