"""One field, one wording of its range (issue 33): the GPU memory share refused as Workload's
`gpu_memory_utilization` (`--gpu-util`) and as vLLM's `--gpu-memory-utilization` (VllmSettings) says the
same allowed range, in the viewer's language (a message, never an English phrase in a Dutch or German
error)."""

from __future__ import annotations

import pytest

from aiworkbook.errors import SpecError
from aiworkbook.message import words
from aiworkbook.sizing import Workload
from aiworkbook.sizing.vllm import VllmSettings


def _allowed(make) -> object:
    with pytest.raises(SpecError) as info:
        make()
    return info.value.allowed


@pytest.mark.parametrize("lang", ["en", "nl", "de"])
def test_the_gpu_memory_share_has_one_range_on_both_paths(lang):
    a = _allowed(lambda: Workload(gpu_memory_utilization=0.0))
    b = _allowed(lambda: VllmSettings(gpu_memory_utilization=2.0).check())
    assert words(a, lang) == words(b, lang)
    said = {
        "en": "a number in (0.0, 1.0]",
        "nl": "een getal > 0,0 en <= 1,0",
        "de": "eine Zahl > 0,0 und <= 1,0",
    }
    assert words(a, lang) == said[lang]


@pytest.mark.parametrize(
    ("field", "value", "nl"),
    [
        ("dropout", 1.0, "niet ingesteld (de standaard) of een getal >= 0,0 en < 1,0"),
        ("batch", 0, "een geheel getal van 1 tot en met 1.048.576"),
        ("compile", "yes", "een booleaanse waarde (True of False)"),
    ],
)
def test_a_workload_range_reads_in_the_language(field, value, nl):
    assert words(_allowed(lambda: Workload(**{field: value})), "nl") == nl
