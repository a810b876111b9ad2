"""docs/architecture.md names files as the one place each rule lives: every one it names exists, and
the code it points to still has the names it cites."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "architecture.md").read_text()


def test_every_file_the_page_names_exists():
    named = set(re.findall(r"\b((?:aiworkbook|widgets|tests|docs|benchmarks)/[\w/.]+\.(?:py|md|json))", DOC))
    assert len(named) > 20
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert not missing, missing


def test_the_one_places_hold_what_the_page_says():
    from aiworkbook.charts import theme
    from aiworkbook.proofs import registry
    from aiworkbook.serving import sse, standin
    from aiworkbook.serving.proof import ServingSettings
    from aiworkbook.specs import families, kv, protocol

    assert callable(kv.kv_bytes) and kv.KVGroup and protocol.ModelSpecLike
    assert families.PARSERS and registry.PATTERN_PROOFS and theme.VERDICT_COLOURS
    assert standin.FixedDelay and sse.Stream and ServingSettings.from_inputs
