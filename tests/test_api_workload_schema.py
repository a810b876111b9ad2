"""Workload as a form can use it: typed choices, bounds and docs per field, the values still allowed
given the others, and sizes bounded so no product wraps."""

from __future__ import annotations

import json
import typing

import pytest

from aiworkbook.cli import main
from aiworkbook.errors import SpecError
from aiworkbook.sizing import Workload, capacity, estimate
from aiworkbook.sizing.workload import (
    ATTENTIONS,
    MAX_TOKENS,
    MAX_TP,
    MODES,
    RECIPE_NAMES,
    allowed,
    parse_field,
)
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
    literal, none = typing.get_args(hints["attention"])  # optional: None runs the family's default
    assert typing.get_args(literal) == ATTENTIONS and none is type(None)  # the Literal is the list
    assert by["attention"]["optional"] is True and by["attention"]["default"] is None


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
    assert "--seq" in err and "16,777,216" in err
    with pytest.raises(SpecError, match="batch"):
        Workload(batch=1 << 40)
    # at the largest shape allowed, eager attention's batch x heads x seq^2 is past int64: no wrap
    w = Workload(seq_len=MAX_TOKENS, attention="eager")
    assert capacity.max_batch(L8, w, get_gpu("H100-SXM")) == 0
    assert capacity.report(L8, w, "H100-SXM").fits is False


def test_each_field_says_the_modes_it_applies_to():
    by = {r["name"]: r for r in Workload.fields()}
    assert by["batch"]["modes"] == ["train", "lora", "qlora"]  # inference serves `concurrency`
    assert by["concurrency"]["modes"] == ["infer"] and by["new_tokens"]["modes"] == ["infer"]
    for name in ("zero", "dp", "recipe", "compile", "activation_offload"):
        assert "infer" not in by[name]["modes"], name
    assert by["lora_targets"]["modes"] == ["lora", "qlora"] and by["seq_len"]["modes"] == list(MODES)
    # QLoRA's frozen base is NF4 whatever weights_dtype says: a form offers only nf4 there
    assert by["weights_dtype"]["choices_in_mode"]["qlora"] == ["nf4"]
    base = estimate(L8, Workload(mode="qlora"), gpu="L4").to_dict()
    nf4 = estimate(L8, Workload(mode="qlora", weights_dtype="nf4"), gpu="L4").to_dict()
    assert {k: v for k, v in base.items() if k != "workload"} == {
        k: v for k, v in nf4.items() if k != "workload"
    }
    # a field outside its modes stays at its default in every estimate the CLI makes (inference: dp 1,
    # ZeRO 0; the library refuses other values there)
    with pytest.raises(SpecError, match="zero"):
        Workload(mode="infer", dp=2, zero=1)


@pytest.mark.parametrize("text", ["1e12", "0", "-5", "4.5", "many", "", "16777217"])
def test_typed_numbers_out_of_range_are_refused_naming_the_field_and_range(text):
    with pytest.raises(SpecError) as exc:
        parse_field("seq_len", text)
    assert "seq_len" in str(exc.value) and "1 to 16,777,216" in str(exc.value)


def test_typed_numbers_in_range_parse_as_the_field_takes_them():
    assert parse_field("seq_len", " 4,096 ") == 4096 and parse_field("seq_len", 8) == 8
    assert parse_field("gpu_memory_utilization", "0.85") == 0.85
    assert parse_field("loss_chunks", "") is None and parse_field("dropout", "0.1") == 0.1
    assert parse_field("tp", str(MAX_TP)) == MAX_TP
    with pytest.raises(SpecError, match="tp"):
        parse_field("tp", str(MAX_TP + 1))
    with pytest.raises(SpecError, match="numeric"):
        parse_field("mode", "1")


def test_cli_options_are_the_workload_fields():
    """`size` and `fit` take one option per Workload field (block_size: vLLM's --block-size), each
    with the field's doc in its help: the form is written once."""
    import typer.main

    from aiworkbook import cli

    root = typer.main.get_command(cli.app)
    for name in ("size", "fit"):
        params = {p.name: p for p in root.commands[name].params}
        helps = " ".join((p.help or "") for p in params.values())
        for r in Workload.fields():
            if r["name"] == "block_size":
                continue
            assert r["doc"] in helps, (name, r["name"])
        assert {"seq", "compile_", "gpu_util", "dp", "dropout"} <= set(params)


def test_one_tensor_parallel_bound():
    from aiworkbook.sizing import workload

    assert capacity.MAX_TP is workload.MAX_TP
    assert {r["name"]: r for r in Workload.fields()}["tp"]["high"] == MAX_TP
    # a model with 128 heads is tried past 64-way (the old capacity-only cap)
    ds = load_model("deepseek-v3")
    w = Workload(mode="infer", concurrency=8, seq_len=4096, new_tokens=512)
    n = capacity.gpus_needed(ds, w, get_gpu("L4"))
    assert n is None or n <= ds.num_heads


def test_per_gpu_rows_and_the_cheapest_come_from_the_same_sizing():
    from aiworkbook.specs import list_gpus

    w = Workload(mode="infer", concurrency=8, seq_len=4096, new_tokens=512)
    rows = capacity.per_gpu(L8, w)
    assert [r["gpu"] for r in rows] == [g.name for g in list_gpus()]
    assert {r["gpu"]: r["gpus"] for r in rows} == {
        g.name: capacity.gpus_needed(L8, w, g) for g in list_gpus()
    }
    assert capacity.cheapest_of(rows) == capacity.cheapest_gpu(L8, w)
    assert capacity.cheapest_of([{"gpu": "x", "gpus": None, "price_per_gpu_hour": 1.0}]) is None


def test_fit_grid_agrees_with_fits_at_each_cell():
    gpu = get_gpu("L40S")
    for w in (Workload(mode="infer", seq_len=512), Workload(mode="infer", seq_len=512, engine="trtllm")):
        d = capacity.fit_grid(L8, w, gpu, [1, 8, 64], [512, 4096])
        assert len(d["cells"]) == 6 and d["gpu"] == "L40S"
        for c in d["cells"]:
            shaped = w.replace(concurrency=c["batch"], seq_len=c["length"], new_tokens=0)
            assert c["fits"] == capacity.fits(L8, shaped, gpu)["fits"], c
        for f in d["frontier"]:
            assert f["batch"] == max(
                c["batch"] for c in d["cells"] if c["length"] == f["length"] and c["fits"]
            )


@pytest.mark.parametrize(
    ("option", "field", "modes"),
    [
        (["--recipe", "adafactor"], "recipe", "train, lora or qlora"),
        (["--checkpointing", "full"], "checkpointing", "train, lora or qlora"),
        (["--lora-rank", "64"], "lora_rank", "lora or qlora"),
    ],
)
def test_a_field_outside_its_modes_is_refused_by_the_library_and_the_cli(capsys, option, field, modes):
    """The mode rule lives in Workload: the CLI (exit 2) and the library refuse alike, naming the field
    and the modes it applies to; at its default the field is accepted in any mode."""
    assert main(["size", "llama-3-8b", "--mode", "infer", *option]) == 2
    err = capsys.readouterr().err
    assert f"'--{field.replace('_', '-')}'" in err and f"unless mode is {modes} (mode is infer)" in err
    value = int(option[1]) if option[1].isdigit() else option[1]
    with pytest.raises(SpecError) as caught:
        Workload(mode="infer", **{field: value})
    assert caught.value.field == field
    assert Workload(mode="infer", recipe="megatron-bf16", checkpointing="none", lora_rank=16).mode == "infer"


def test_a_misspelt_or_mistyped_field_is_bad_input_naming_it():
    with pytest.raises(SpecError) as caught:
        Workload(batchsize=3)  # type: ignore[call-arg]
    assert caught.value.field == "field" and caught.value.value == "batchsize"
    for bad in ({"batch": True}, {"batch": 2.0}, {"seq_len": "512"}, {"gpu_memory_utilization": 0}):
        with pytest.raises(SpecError) as caught:
            Workload(**bad)
        assert caught.value.field == next(iter(bad))
    with pytest.raises(SpecError, match="an integer from 1 to 1,048,576"):
        Workload(batch=0)
    with pytest.raises(SpecError, match=r"unset \(the default\) or a number in \[0.0, 1.0\)"):
        Workload(dropout=1.0)
