"""One pattern -> proofs table (proofs/registry.PATTERN_PROOFS): the patterns' proof lists and the
registry's per-proof patterns are both read from it, so they cannot disagree."""

from __future__ import annotations

import pytest

from aiworkbook.patterns import LANGS, get_pattern
from aiworkbook.proofs import registry
from aiworkbook.specs.node import PATTERNS


def test_the_table_names_every_pattern_and_only_registered_proofs():
    assert tuple(registry.PATTERN_PROOFS) == PATTERNS
    for pattern, proofs in registry.PATTERN_PROOFS.items():
        assert len(set(proofs)) == len(proofs), pattern
        assert set(proofs) <= set(registry.names()), pattern


@pytest.mark.parametrize("lang", LANGS)
def test_patterns_and_registry_agree_both_ways(lang):
    for info in registry.proofs():
        for pid in PATTERNS:
            in_pattern = info.name in get_pattern(pid, lang).proofs
            assert in_pattern == (pid in info.patterns), (info.name, pid)
            assert info.to_dict()["patterns"] == list(info.patterns)


def test_a_change_to_the_table_reaches_both_faces(monkeypatch):
    monkeypatch.setitem(registry.PATTERN_PROOFS, "hybrid", ("roofline", "dataload"))
    assert get_pattern("hybrid").proofs == ("roofline", "dataload")
    assert "hybrid" in registry.get("dataload").patterns
    assert "hybrid" not in registry.get("vram").patterns


def test_the_lists_users_see():
    assert get_pattern("classical-ml-cpu").proofs == ("host", "roofline", "dataload")
    assert registry.get("dataload").patterns == ("classical-ml-cpu", "dl-training")
    assert registry.get("allreduce").patterns == ("dl-training",)  # multi-node answers add it (recommend)
