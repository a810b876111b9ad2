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
from aiworkbook.specs import load_model


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


#: a refusal of each kind a combination or the model itself gives, with its German wording
COMBINATIONS = [
    (lambda: Workload(mode="infer", zero=3), "0 für Inferenz (ZeRO teilt den Trainingszustand auf)"),
    (lambda: Workload(mode="train", zero=3), "0, wenn dp 1 ist (ZeRO teilt über datenparallele Ränge auf)"),
    (lambda: Workload(mode="infer", dp=2), "1 für Inferenz (eine Replik wird dimensioniert; tp verteilt ein Modell auf GPUs)"),
    (lambda: Workload(mode="train", new_tokens=5), "der Standardwert (0), außer im Modus infer (Modus ist train)"),
    (lambda: Workload(mode="infer", chunked_loss=True), "der Standardwert (False), außer in den Modi train, lora oder qlora (Modus ist infer)"),
    (lambda: Workload(recipe="adamw-8bit", optimizer_impl="foreach"), "nicht gesetzt oder fused für adamw-8bit (ein Kernel pro Tensor)"),
    (lambda: Workload(mode="lora", lora_targets=[]), "eines oder mehrere von q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj"),
    (lambda: Workload(mode="infer", seq_len=100, new_tokens=10, context=50), ">= seq_len + new_tokens (100 + 10): der Cache hält Prompt und Ausgabe"),
    (lambda: Workload(tp=3).check_against(load_model("llama-3-8b")), "ein Teiler von num_heads (32) von llama-3-8b"),
    (lambda: Workload(mode="infer", seq_len=1000, new_tokens=100).check_against(load_model("gpt2")), "<= 924: max_position_embeddings (1024) von gpt2 abzüglich 100 neuer Tokens"),
]  # fmt: skip


@pytest.mark.parametrize(("make", "de"), COMBINATIONS)
def test_a_refused_combination_is_said_in_the_viewers_language(make, de):
    a = _allowed(make)
    assert words(a, "de") == de
    english = words(a, "en")
    for lang in ("nl", "de"):  # nothing of the English wording is left in the other languages
        assert words(a, lang) != english
