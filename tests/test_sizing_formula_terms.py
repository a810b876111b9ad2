"""Each formula of the memory breakdown is the text of the Term its number was computed as (issue 24
item 7): read back as arithmetic (tests/formula_text.py), every formula gives its number, for every
preset in train, LoRA, QLoRA and inference and for the option sets that change a formula's shape."""

from __future__ import annotations

import re

import pytest
from formula_text import NotArithmetic, read

from aiworkbook.message import Msg
from aiworkbook.sizing import Workload, estimate
from aiworkbook.sizing.expr import Term
from aiworkbook.sizing.memory import COMPONENTS
from aiworkbook.specs import list_presets, load_model

#: Option sets beside the plain modes: each changes a formula's expression (tools/sizing_golden.py's
#: EXTRA, plus tensor parallelism over each sum it divides).
OPTIONS = (
    {"mode": "train", "dp": 8, "zero": 3},
    {"mode": "train", "dp": 4, "zero": 1, "tp": 2},
    {"mode": "train", "fsdp_cpu_offload": True, "dp": 2, "zero": 3},
    {"mode": "train", "recipe": "paged-adamw-8bit"},
    {"mode": "train", "recipe": "blockwise-adamw-8bit", "precision": "bf16", "dp": 4, "zero": 1},
    {"mode": "train", "recipe": "fp32-adamw", "precision": "bf16-mixed", "attention": "eager"},
    {"mode": "train", "recipe": "fp32-adamw", "precision": "bf16-mixed", "checkpointing": "selective"},
    {"mode": "train", "recipe": "fp32-adamw", "precision": "bf16-mixed", "checkpointing": "full", "tp": 2},
    {"mode": "train", "optimizer_in_backward": True, "checkpointing": "full", "tp": 2},
    {"mode": "train", "activation_offload": True, "compile": True, "loss_chunks": 8},
    {"mode": "train", "activation_offload": True, "checkpointing": "full"},
    {"mode": "train", "loss_chunks": 8, "tp": 2},
    {"mode": "train", "chunked_loss": True, "batch": 4, "seq_len": 512, "tp": 2},
    {"mode": "train", "precision": "fp32", "attention": "eager"},
    {"mode": "train", "optimizer_impl": "forloop", "maximize": True, "dp": 2, "zero": 1},
    {"mode": "train", "recipe": "sgd-momentum", "optimizer_impl": "forloop", "maximize": True},
    {"mode": "train", "recipe": "sgd-momentum", "l2_weight_decay": True},
    {"mode": "lora", "lora_targets": ("all-linear",), "compile": True, "kv_repeat": True},
    {"mode": "lora", "zero": 3, "dp": 2, "loss_chunks": 8, "compile_loss": False, "compile": True, "tp": 2},
    {"mode": "qlora", "lora_rank": 64, "zero": 3, "dp": 2},
    {"mode": "infer", "concurrency": 8, "seq_len": 1024, "new_tokens": 256, "kv_dtype": "fp8"},
    {"mode": "infer", "engine": "vllm", "concurrency": 16, "seq_len": 512, "new_tokens": 128},
    {"mode": "infer", "engine": "trtllm", "concurrency": 4, "weights_dtype": "int4"},
    {"mode": "infer", "attention": "eager", "tp": 2, "weights_dtype": "fp8", "max_batched_tokens": 1000},
)
PLAIN = tuple({"mode": m} for m in ("train", "lora", "qlora", "infer"))
#: Formulas that describe their number rather than spell it (no figure in them can disagree with it).
DESCRIBED = {
    ("activations", "infer"): "per-token width",  # one layer's widths, named, not summed
    ("optimizer", "adafactor"): "(rows + cols) per matrix",
    ("weights", "quantized"): "quantization_config",  # a checkpoint's own layout
}


def _workloads(spec, options):
    short = {"seq_len": 512} if spec.max_position_embeddings < 2048 else {}
    for o in options:
        w = Workload(**{**short, **o})
        try:
            w.check_against(spec)
        except ValueError:
            continue  # a tp the heads cannot take, LoRA targets the model lacks
        yield w


def _check(spec, w, device) -> tuple[int, int]:
    """(formulas read as arithmetic, formulas that describe) for one estimate; asserts each reads as
    its number."""
    est = estimate(spec, w, device=device)
    mem = est.memory
    vals = mem.as_dict()
    read_back = described = 0
    for k in COMPONENTS:
        text = mem.formulas[k]
        try:
            got = read(text)
        except NotArithmetic:
            got = None
        if k == "reserve" and got is not None and "% of allocated" in text:
            # a share of everything else the allocator holds: total less the context and the reserve
            pct = int(got[0])
            assert vals[k] == (vals["total"] - vals["cuda_context"] - vals[k]) * pct // 100
            read_back += 1
            continue
        if got is None:
            assert any(k == key and words in text for (key, _), words in DESCRIBED.items()), (
                spec.name,
                w,
                k,
                text,
            )
            described += 1
            continue
        value, allowed = got
        assert abs(value - vals[k]) <= allowed, (spec.name, w, device, k, text, float(value), vals[k])
        read_back += 1
    # the total: its components by name (less what a training step does not hold at once)
    named = re.sub(
        r"\b(" + "|".join(COMPONENTS) + r")\b", lambda m: str(vals[m.group()]), mem.formulas["total"]
    )
    value, allowed = read(named.replace(" less ", " − "))
    assert abs(value - vals["total"]) <= allowed, (spec.name, w, mem.formulas["total"])
    # the rule of thumb: bytes per parameter (over the GPUs that shard them) + the activations or KV cache
    rule = est.rules_of_thumb
    said = rule.formula.replace("activations", str(mem.activations)).replace("KV cache", str(mem.kv_cache))
    value, allowed = read(said)
    assert abs(value - rule.bytes) <= allowed, (spec.name, w, rule.formula)
    return read_back + 2, described


@pytest.mark.parametrize("options", ["plain", "options"])
def test_every_formula_reads_back_as_its_number(options):
    names = (
        list_presets() if options == "plain" else ["llama-3-8b", "gpt2", "mixtral-8x7b", "bert-base-uncased"]
    )
    read_back = described = 0
    for name in names:
        spec = load_model(name)
        for w in _workloads(spec, PLAIN if options == "plain" else OPTIONS):
            for device in ("cuda", "cpu") if w.tp == 1 else ("cuda",):
                r, d = _check(spec, w, device)
                read_back, described = read_back + r, described + d
    assert read_back > 10 * described > 0


def test_a_divided_sum_is_grouped_in_its_text():
    """Term puts a sum in parentheses where the value divides or multiplies it whole."""
    a, b, tp = Term(6, "term.B"), Term(4, "term.B"), Term(2, "term.tp")
    assert ((a + b) // tp).text == "(6 B + 4 B) / 2 tp" and ((a + b) // tp).value == 5
    assert (a + b // tp).text == "6 B + 4 B / 2 tp" and (a + b // tp).value == 8
    assert ((a - b) * tp).text == "(6 B − 4 B) · 2 tp" and (a - (b + tp)).text == "6 B − (4 B + 2 tp)"
    assert (a * b // tp).text == "6 B · 4 B / 2 tp"
    said = (a + b).said(Msg("term.compiled")) * tp
    assert said.text == "(6 B + 4 B (compiled)) · 2 tp"
    assert said.text.render("de") == "(6 B + 4 B (kompiliert)) · 2 TP"


def test_texts_that_left_part_of_their_number_out_now_say_it():
    """The formulas found disagreeing with their numbers when they became Terms: a sum divided by tp
    whose text divided only its last part, and inference activations with no tp at all."""
    spec = load_model("llama-3.2-1b")
    f = estimate(spec, Workload(mode="train", checkpointing="full", tp=2, seq_len=256)).memory.formulas
    assert (
        f["activations"].startswith("(16 layers · 256 tokens · ") and ") / 2 tp + 256 · " in f["activations"]
    )
    amp = Workload(mode="train", recipe="fp32-adamw", precision="bf16-mixed", tp=2, seq_len=256)
    assert (
        "(2 B · 128,256 · 2048 autocast copy of the head matrix + "
        in estimate(spec, amp).memory.formulas["logits"]
    )
    lora = Workload(mode="lora", compile=True, tp=2, seq_len=256)
    assert (
        "not recorded before the first adapter (frozen embedding)) / 2 tp"
        in estimate(spec, lora).memory.formulas["activations"]
    )
    infer = Workload(mode="infer", tp=2, weights_dtype="fp8", seq_len=256)
    f = estimate(spec, infer).memory.formulas
    assert f["activations"].endswith("per-token width · 2 B / 2 tp")
    assert f["weights"].startswith("(") and f["weights"].endswith(" · 2 B) / 2 tp")
    small = Workload(mode="train", recipe="blockwise-adamw-8bit", precision="bf16", dp=4, zero=1, seq_len=256)
    gpt2 = estimate(load_model("gpt2"), small).memory.formulas["optimizer"]
    assert gpt2.startswith("(") and gpt2.endswith(" in small tensors · 8 B) / 4 ZeRO-1")


def test_the_per_layer_note_adds_up_to_the_bytes_it_explains():
    """The "[...]" note after a layer's bytes per token is the text of the Term those bytes are (LoRA's
    adapter outputs included); eager attention's a·s·x score term is said there and counted per key
    position, so the note read at length s gives per_token_layer + s · per_token_score. A MoE layer names
    its router instead of spelling it."""
    from aiworkbook.sizing import activations as act

    checked = 0
    for name in list_presets():
        spec = load_model(name)
        for w in _workloads(spec, PLAIN + OPTIONS):
            if not w.training or spec.num_experts:
                continue
            for device in ("cuda", "cpu"):
                t = act.terms(spec, w, device)
                value, allowed = read(t.parts.replace("·s·", "·7·"))
                assert abs(value - (t.per_token_layer + 7 * t.per_token_score)) <= allowed, (name, w, t.parts)
                checked += 1
    assert checked > 500
