"""The docs show real output: every `$ aiworkbook ...` example in the documents whose output is
deterministic (sizing and specs arithmetic: no clock, no host, no GPU) prints today exactly what the
document shows. After a change that moves a figure, `python tools/refresh_docs.py docs/sizing.md`
rewrites the example; the examples with measured timings (proofs, serving, telemetry) are refreshed
by hand and not compared here."""

from __future__ import annotations

import difflib
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DETERMINISTIC = ("docs/sizing.md", "docs/specs.md")


def _refresh_docs():
    spec = importlib.util.spec_from_file_location("refresh_docs", ROOT / "tools" / "refresh_docs.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("doc", DETERMINISTIC)
def test_the_documents_examples_print_what_they_show(doc, monkeypatch):
    monkeypatch.chdir(ROOT)
    path = ROOT / doc
    text, n = _refresh_docs().refreshed(path)
    assert n >= 1, f"{doc} has no `$ aiworkbook` example left to check"
    shown = path.read_text()
    diff = "".join(difflib.unified_diff(shown.splitlines(True), text.splitlines(True), doc, "now", n=1))
    assert text == shown, f"{doc} is stale; run `python tools/refresh_docs.py {doc}`:\n{diff}"
