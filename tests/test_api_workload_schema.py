"""Workload as a form can use it: typed choices, bounds and docs per field, the values still allowed
given the others, and sizes bounded so no product wraps."""

from __future__ import annotations

import json
import typing

import pytest

from aiworkbook.cli import main
from aiworkbook.errors import SpecError
from aiworkbook.sizing import Workload, capacity
from aiworkbook.sizing.workload import ATTENTIONS, MAX_TOKENS, RECIPE_NAMES, allowed
from aiworkbook.specs import get_gpu, load_model

L8 = load_model("llama-3-8b")


def test_every_field_has_a_doc_a_type_and_bounds_or_choices():
    rows = Workload.fields()
    assert [r["name"] for r in rows] == list(Workload.__dataclass_fields__)
    for r in rows:
        assert r["doc"], r["name"]
        if r["type"] == "int":
            assert isinstance(r["low"], int) and r["high"] > r["low"], r["name"]
        if r["type"] in ("choice", "choices"):
            assert r["choices"], r["name"]
    by = {r["name"]: r for r in rows}
    assert by["attention"]["choices"] == list(ATTENTIONS) and by["recipe"]["optional"] is True
    schema = Workload.json_schema()
    assert schema["properties"]["seq_len"]["maximum"] == MAX_TOKENS
    assert "enum" in json.dumps(schema["properties"]["mode"]) and schema["properties"]["tp"]["description"]
    hints = typing.get_type_hints(Workload)
    assert typing.get_args(hints["attention"]) == ATTENTIONS  # the Literal is the list


def test_allowed_lists_what_the_other_fields_leave():
    assert allowed("recipe", precision="fp32") == [
        "fp32-adamw",
        "sgd-momentum",
        "adafactor",
        "blockwise-adamw-8bit",
        "paged-adamw-8bit",
    ]
    assert allowed("recipe") == list(RECIPE_NAMES)
    assert allowed("tp", L8) == [1, 2, 4, 8, 16, 32]  # divides 32 heads, 8 KV heads, the MLP
    assert allowed("weights_dtype", mode="train") == ["fp32", "bf16", "fp16"]
    assert "nf4" in allowed("weights_dtype", mode="infer")
    assert allowed("zero", dp=1) == [0] and allowed("zero", dp=8) == [0, 1, 2, 3]
    assert allowed("seq_len") == (1, MAX_TOKENS)
    assert "gate_proj" not in allowed("lora_targets", load_model("gpt2"), mode="lora")
    with pytest.raises(SpecError):
        allowed("nosuch")


def test_sizes_are_bounded_so_totals_never_wrap(capsys):
    assert main(["fit", "llama-3-8b", "--mode", "train", "--seq", "1000000000000"]) == 2
    err = capsys.readouterr().err
    assert "seq_len" in err and "16,777,216" in err
    with pytest.raises(SpecError, match="batch"):
        Workload(batch=1 << 40)
    # at the largest shape allowed, eager attention's batch x heads x seq^2 is past int64: no wrap
    w = Workload(seq_len=MAX_TOKENS, attention="eager")
    assert capacity.max_batch(L8, w, get_gpu("H100-SXM")) == 0
    assert capacity.report(L8, w, "H100-SXM").fits is False
