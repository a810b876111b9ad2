"""Committed notebooks keep their outputs (nbval compares them) but not the widget state that
execution stores in their metadata: that state embeds the whole Altair/anywidget JavaScript bundle
(megabytes per notebook) and nbval never reads it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_has_outputs_but_no_stored_widget_state(path):
    nb = json.loads(path.read_text())
    assert "widgets" not in nb.get("metadata", {}), f"strip metadata.widgets from {path.name}"
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(c.get("execution_count") for c in code), f"{path.name} is not executed in full"
    assert path.stat().st_size < 200_000


def test_the_numbered_path_is_complete():
    names = [p.name for p in NOTEBOOKS]
    assert [n[:2] for n in names] == [f"{i:02d}" for i in range(9)], names
