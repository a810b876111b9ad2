"""ModelSizer's fine-tuning controls headless: each control moves the estimate exactly as
`Workload(**same fields)` through the library does, `value` round-trips every field, the host memory
line shows what the library puts in `host`, and refused combinations land in the error area."""

from __future__ import annotations

import pytest
import test_widgets
from test_widgets import assert_error

from aiworkbook.sizing import Workload, estimate
from aiworkbook.sizing.workload import BOOL_FIELDS
from aiworkbook.specs import load_model
from aiworkbook.units import fmt_bytes

sizer = test_widgets.sizer  # the fixture: a ModelSizer on its worker thread, closed afterwards
#: A LoRA set-up the sizer starts from in these tests (a small model: fast estimates).
LORA = {"model": "qwen2.5-0.5b", "gpu": "L4", "mode": "lora", "batch": 2, "seq_len": 1024}


def library(value: dict) -> dict:
    """What `aiworkbook size --json` gives for the sizer's value: the estimate of the same fields."""
    fields = {k: v for k, v in value.items() if k not in ("model", "gpu")}
    return estimate(load_model(value["model"]), Workload(**fields), gpu=value["gpu"]).to_dict()


def settle(s) -> dict:
    assert s.wait(120) and s.error == "", s.error
    return s.result


def test_section_follows_the_mode_and_lora_rows_only_for_lora(sizer):
    assert sizer.finetune.box.layout.display == "none"  # inference: nothing to fine-tune
    assert "aiwb-finetune" in sizer.finetune.box._dom_classes
    sizer.controls["mode"].value = "train"
    settle(sizer)
    assert sizer.finetune.box.layout.display == "" and sizer.finetune.lora.layout.display == "none"
    for mode in ("lora", "qlora"):
        sizer.controls["mode"].value = mode
        settle(sizer)
        assert sizer.finetune.lora.layout.display == ""
    # a model without a gated MLP is not offered gate_proj
    sizer.value = {"model": "gpt2", "mode": "lora", "seq_len": 512}
    settle(sizer)
    targets = sizer.controls["lora_targets"].options
    assert "gate_proj" not in targets and {"q_proj", "down_proj", "all-linear"} <= set(targets)


@pytest.mark.parametrize(
    "field,value",
    [
        ("compile", True),
        ("chunked_loss", True),
        ("loss_chunks", 8),
        ("optimizer_in_backward", True),
        ("activation_offload", True),
        ("fsdp_cpu_offload", True),
        ("kv_repeat", True),
        ("dropout", 0.1),
        ("lora_rank", 64),
        ("lora_targets", ("all-linear",)),
    ],
)
def test_each_control_moves_the_estimate_as_the_library_does(sizer, field, value):
    sizer.value = LORA
    before = settle(sizer)
    assert before["memory"] == library(sizer.value)["memory"]
    sizer.controls[field].value = value
    after = settle(sizer)
    assert sizer.value[field] == (list(value) if isinstance(value, tuple) else value)
    expected = library(sizer.value)
    assert after["memory"] == expected["memory"] and after["host"] == expected["host"]
    assert after["fits"] == expected["fits"]
    assert (after["memory"], after["host"]) != (before["memory"], before["host"]), f"{field} changed nothing"


def test_an_eager_loss_beside_compiled_layers_as_the_library_sizes_it(sizer):
    """compile_loss off (torchtune's recipe dropping compile_loss's result) keeps the eager loss's
    second fp32 gradient: more memory than the compiled loss, exactly the library's figure."""
    sizer.value = {**LORA, "mode": "train", "compile": True}
    compiled = settle(sizer)
    sizer.controls["compile_loss"].value = False
    eager = settle(sizer)
    assert eager["memory"] == library(sizer.value)["memory"]
    assert eager["memory"]["total"] > compiled["memory"]["total"]


def test_a_torchtune_style_setup_through_the_controls(sizer):
    """Paged 8-bit AdamW, compile, 8 loss chunks, activations offloaded, all-linear LoRA rank 64: the
    numbers and the host line are the library's."""
    sizer.value = LORA
    settle(sizer)
    sizer.controls["recipe"].value = "paged-adamw-8bit"
    sizer.controls["compile"].value = True
    sizer.controls["loss_chunks"].toggle.value = True  # the check box switches the number on
    sizer.controls["loss_chunks"].number.value = 8
    sizer.controls["activation_offload"].value = True
    sizer.controls["lora_targets"].value = ("all-linear",)
    sizer.controls["lora_rank"].value = 64
    r = settle(sizer)
    w = Workload(
        mode="lora",  # new tokens and concurrency do not apply to training: their defaults
        batch=2,
        seq_len=1024,
        recipe="paged-adamw-8bit",
        compile=True,
        loss_chunks=8,
        activation_offload=True,
        lora_targets=("all-linear",),
        lora_rank=64,
    )
    est = estimate(load_model("qwen2.5-0.5b"), w, gpu="L4")
    assert r["memory"] == est.memory.as_dict() and r["workload"] == est.to_dict()["workload"]
    assert est.memory.host_bytes > 0 and r["host"]["host_bytes"] == est.memory.host_bytes
    host = sizer.host.value
    assert sizer.host.layout.display == "" and fmt_bytes(est.memory.host_bytes, "GiB") in host
    assert "activations" in host and "paged optimizer" in host


def test_host_line_hidden_when_nothing_is_offloaded(sizer):
    assert sizer.result["host"]["host_bytes"] == 0
    assert sizer.host.value == "" and sizer.host.layout.display == "none"
    sizer.value = {**LORA, "fsdp_cpu_offload": True}
    settle(sizer)
    assert sizer.result["host"]["offloaded_states"] > 0 and "training state" in sizer.host.value
    sizer.value = {"fsdp_cpu_offload": False}
    settle(sizer)
    assert sizer.host.layout.display == "none"


def test_value_round_trips_every_field(sizer):
    v = {
        **LORA,
        "precision": "bf16",
        "recipe": "blockwise-adamw-8bit",
        "attention": "eager",
        "checkpointing": "selective",
        "compile": True,
        "loss_chunks": 4,
        "optimizer_in_backward": True,
        "dropout": 0.05,
        "lora_rank": 8,
        "lora_targets": ["q_proj", "v_proj", "down_proj"],
    }
    sizer.value = v
    first = settle(sizer)
    got = sizer.value
    assert {k: got[k] for k in v} == v
    assert set(got) == {"model", "gpu", *Workload().to_dict()} - {
        "context",
        "block_size",
        "gpu_memory_utilization",
        "max_batched_tokens",
        "optimizer_impl",  # not a control yet: the widget sizes torch's default implementation
    }
    assert first["memory"] == library(got)["memory"]
    sizer.value = {"mode": "infer"}  # the section hides; its fields count as defaults
    settle(sizer)
    assert sizer.value["compile"] is False and sizer.value["lora_targets"] == [
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
    ]
    sizer.value = got
    assert settle(sizer)["memory"] == first["memory"] and sizer.value == got


@pytest.mark.parametrize(
    "change,field",
    [
        ({"fsdp_cpu_offload": True, "optimizer_in_backward": True}, "optimizer_in_backward"),
        ({"chunked_loss": True, "loss_chunks": 8}, "loss_chunks"),
        ({"lora_targets": ["all-linear", "q_proj"]}, "lora_targets"),
        ({"lora_targets": ["no_proj"]}, "lora_targets"),
        ({"loss_chunks": 0}, "loss_chunks"),
        ({"dropout": 1.0}, "dropout"),
        ({"compile": "yes"}, "compile"),
        ({"mode": "infer", "activation_offload": True}, "activation_offload"),
        ({"mode": "train", "lora_targets": ["q_proj"]}, "lora_targets"),
    ],
)
def test_refused_combinations_name_the_field_and_keep_the_last_result(sizer, change, field):
    sizer.value = LORA
    before = settle(sizer)
    sizer.value = {**LORA, **change}
    sizer.wait(120)
    assert_error(sizer, field)
    assert sizer.result == before


def test_hidden_controls_keep_their_state_for_when_they_show_again(sizer):
    sizer.value = {**LORA, "lora_targets": ["all-linear"], "lora_rank": 32, "compile": True}
    lora = settle(sizer)
    sizer.controls["mode"].value = "train"  # LoRA rows hide: the estimate uses the defaults
    assert settle(sizer)["workload"]["lora_targets"] == ["q_proj", "k_proj", "v_proj", "o_proj"]
    assert sizer.value["compile"] is True
    sizer.controls["mode"].value = "infer"  # the whole section hides
    assert settle(sizer)["workload"]["compile"] is False
    sizer.controls["mode"].value = "lora"
    assert settle(sizer)["memory"] == lora["memory"]
    assert sizer.value["lora_targets"] == ["all-linear"] and sizer.value["lora_rank"] == 32


def test_an_empty_lora_selection_is_an_error_until_a_module_is_picked(sizer):
    sizer.value = LORA
    settle(sizer)
    sizer.controls["lora_targets"].value = ()
    assert_error(sizer, "lora_targets")
    sizer.controls["lora_targets"].value = ("v_proj",)
    assert settle(sizer)["workload"]["lora_targets"] == ["v_proj"]


def test_switches_that_cannot_flip_are_disabled(sizer):
    sizer.value = {**LORA, "fsdp_cpu_offload": True}
    settle(sizer)
    assert sizer.controls["optimizer_in_backward"].disabled  # the step runs on the host
    assert not sizer.controls["fsdp_cpu_offload"].disabled  # on: it can be switched off
    sizer.controls["fsdp_cpu_offload"].value = False
    settle(sizer)
    assert not sizer.controls["optimizer_in_backward"].disabled
    assert all(not sizer.controls[f].disabled for f in BOOL_FIELDS)
    sizer.controls["chunked_loss"].value = True  # the fused loss has its own chunks
    settle(sizer)
    assert sizer.controls["loss_chunks"].toggle.disabled
    sizer.controls["chunked_loss"].value = False
    settle(sizer)
    assert not sizer.controls["loss_chunks"].toggle.disabled


def test_attention_choice_reaches_inference_estimates(sizer):
    sizer.controls["attention"].value = "eager"
    r = settle(sizer)
    assert r["memory"] == library(sizer.value)["memory"] and sizer.value["attention"] == "eager"
    w = Workload(mode="infer", concurrency=8, seq_len=4096, new_tokens=512)
    assert (
        r["memory"]["activations"] > estimate(load_model("llama-3-8b"), w, gpu="H100-SXM").memory.activations
    )


def test_fine_tuning_labels_in_every_language():
    from aiworkbook.widgets import ModelSizer
    from aiworkbook.widgets.finetune import all_fields
    from aiworkbook.widgets.i18n import LANGS, TABLES
    from aiworkbook.widgets.model_sizer import CHOICE_FIELDS, INT_FIELDS

    from aiworkbook.sizing.memory import HOST_KEYS

    for lang in LANGS:
        for key in (*CHOICE_FIELDS, *INT_FIELDS, *all_fields(), *HOST_KEYS, "finetune", "host_memory"):
            assert TABLES[lang].get(key), (lang, key)
    s = ModelSizer(
        lang="de", background=False, mode="lora", seq_len=1024, activation_offload=True, lora_targets="v_proj"
    )
    assert s.error == "" and s.value["lora_targets"] == ["v_proj"]
    assert s.controls["compile"].description == TABLES["de"]["compile"]
    assert s.controls["loss_chunks"].toggle.description == TABLES["de"]["loss_chunks"]
    assert s.controls["lora_targets"].description == TABLES["de"]["lora_targets"]
    assert (
        TABLES["de"]["host_memory"] in s.host.value and TABLES["de"]["offloaded_activations"] in s.host.value
    )
    s.close()


def test_a_hidden_lora_selection_the_new_model_lacks_does_not_lock_lora_out(sizer):
    """gate_proj picked in LoRA, mode switched to train (the LoRA rows hide), then a model without a
    gated MLP: the hidden selection drops the module the model lacks, so LoRA stays offered."""
    sizer.value = {"model": "llama-3-8b", "mode": "lora", "seq_len": 512, "lora_targets": ["gate_proj"]}
    settle(sizer)
    sizer.controls["mode"].value = "train"
    settle(sizer)
    sizer.preset.value = "gpt2"
    settle(sizer)
    assert sizer.error == "" and {"lora", "qlora"} <= set(sizer.controls["mode"].options)
    sizer.controls["mode"].value = "lora"
    settle(sizer)
    assert sizer.error == ""
    picked = sizer.value["lora_targets"]
    assert "gate_proj" not in picked and picked == ["q_proj", "k_proj", "v_proj", "o_proj"]
    assert sizer.result["memory"] == library(sizer.value)["memory"]


def test_attention_offers_what_transformers_offers_the_family(sizer):
    """gpt-oss has no sdpa in transformers: the drop-down offers the family default, eager and flash, and
    the default sizes what transformers runs (eager), as the library does."""
    sizer.preset.value = "gpt-oss-20b"
    r = settle(sizer)
    options = list(sizer.controls["attention"].options)
    assert "sdpa" not in [o[1] if isinstance(o, tuple) else o for o in options] and len(options) == 3
    assert sizer.value["attention"] is None and r["workload"]["attention"] == "eager"
    assert r["memory"] == library(sizer.value)["memory"]
