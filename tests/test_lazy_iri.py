"""aiworkbook._lazy_iri: importing the charts (or the widgets) defers rfc3987_syntax's grammar build,
which jsonschema triggers at import and altair pays for (python-jsonschema/jsonschema#1428), while
jsonschema's `iri` format checks still give the real module's answers."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest


def _run(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_rfc3987_syntax_is_installed_here():
    # what the other tests exercise: jsonschema[format-nongpl] (through jupyter-events) brings it
    assert importlib.util.find_spec("rfc3987_syntax") is not None


@pytest.mark.parametrize("first", ["aiworkbook.charts", "aiworkbook.widgets.base"])
def test_charts_validate_without_the_grammar_and_iri_checks_still_answer(first):
    code = f"""
import sys
import {first}
from aiworkbook.charts import memory_chart
from aiworkbook.sizing import Workload, estimate
from aiworkbook.specs import load_model
memory_chart(estimate(load_model("tiny-llama"), Workload(mode="infer"))).to_dict()  # validates the spec
print("jsonschema" in sys.modules, "rfc3987_syntax.syntax_helpers" in sys.modules)
import jsonschema
v = jsonschema.Draft7Validator({{"format": "iri"}}, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
print(v.is_valid("http://example.org/caf\\u00e9"), v.is_valid("not an iri"), v.is_valid("http://[bad"))
print("rfc3987_syntax.syntax_helpers" in sys.modules)
"""
    assert _run(code) == ["True", "False", "True", "False", "False", "True"]


def test_nothing_is_replaced_once_jsonschema_is_loaded():
    code = """
import sys, jsonschema
import aiworkbook._lazy_iri as lazy
print(lazy.install(), getattr(sys.modules["rfc3987_syntax"], "_aiworkbook_stand_in", False))
"""
    assert _run(code) == ["False", "False"]
