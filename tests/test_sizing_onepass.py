"""Sizing in one pass (issue 24 item 7): estimate() enters states.py and activations.py once per
quantity, its sections read one SizingPass, formulas come from the expression that computed the number,
and `size --json` / `fit --json` stay byte-identical to the outputs recorded before the refactor."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import pytest

from aiworkbook.message import Msg
from aiworkbook.sizing import Workload, estimate
from aiworkbook.sizing.expr import Term
from aiworkbook.sizing.memory import memory_breakdown
from aiworkbook.sizing.onepass import sizing_pass
from aiworkbook.specs import load_gpu, load_model

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


counts = _tool("sizing_call_counts")
golden = _tool("sizing_golden")

#: Helpers a pass may enter more than once: table lookups (recipe_bytes, width), the small arithmetic
#: shared by a number and its text or by the activations and the step's timeline, with their bounds.
REPEATS_ALLOWED = {
    "states.recipe_bytes": 8,
    "states.width": 3,
    "activations._layer_split": 2,
    "activations._layer_terms": 2,
    "activations._dot": 8,  # one layer's norm, attention and MLP products, inside the one terms() call
    "activations._max": 4,
    "activations._resident_layers": 2,
    "activations._first_layer_offloaded": 2,
    "activations.autocast_fp32_weights": 2,
    "activations.prefill_tokens": 2,
    "activations.inference_logits_term": 2,
}
#: Entries into each module from outside it during one estimate(), at most (before the one pass:
#: 24/25 into states.py and 23 into activations.py for training, 15 and 6 for inference).
ENTRIES_MAX = {"train": (10, 12), "infer": (5, 5)}


@pytest.mark.parametrize(("label", "model", "fields", "gpu"), counts.CASES, ids=[c[0] for c in counts.CASES])
def test_estimate_enters_states_and_activations_once_per_quantity(label, model, fields, gpu):
    calls = counts.count(model, fields, gpu)
    repeated = {k: v for k, v in calls.items() if ":" not in k and v > 1 and v > REPEATS_ALLOWED.get(k, 1)}
    assert repeated == {}
    for heavy in ("states.model_states", "states.trainable_and_optimizer", "states.zero3_gather_bytes"):
        assert calls[heavy] == 1, heavy
    if Workload(**fields).training:
        assert calls["activations.terms"] == 1
    else:
        assert calls["states.inference_weight_term"] == 1
    states_max, act_max = ENTRIES_MAX["train" if Workload(**fields).training else "infer"]
    assert calls["entries:states"] <= states_max
    assert calls["entries:activations"] <= act_max


def test_the_counter_sees_the_calls_it_wraps():
    """The harness counts calls made through by-name imports too (else the bounds above prove nothing)."""
    from aiworkbook.sizing import memory

    spec, w = load_model("llama-3-8b"), Workload(mode="train")
    with counts.counting() as calls:
        memory.components(spec, w, 1, 128)
        memory.components(spec, w, 2, 128)
    assert calls["states.model_states"] == 2  # no pass given: each call builds its own
    assert calls["activations.terms"] == 2
    p = sizing_pass(spec, w)
    with counts.counting() as calls:
        memory.evaluate(p, 1, 128)
        memory.evaluate(p, 2, 128)
    assert calls["states.model_states"] == 0
    assert calls["activations.terms"] == 0


def test_estimate_sections_read_the_pass():
    spec, gpu = load_model("llama-3-8b"), load_gpu("H100-SXM")
    w = Workload(mode="lora", batch=2, seq_len=1024)
    est = estimate(spec, w, gpu=gpu)
    p = sizing_pass(spec, w)
    assert est.params["trainable"] == p.trainable
    assert est.memory == memory_breakdown(spec, w)
    assert est.fits.total_bytes == est.memory.total
    assert est.storage.to_dict()["weights_only_bytes"] == p.trainable * 2  # the adapters, bf16


def test_capacity_solvers_agree_with_the_pass_at_each_shape():
    """The solvers reuse the pass's terms at other batches; the answer is that of a fresh breakdown."""
    from aiworkbook.sizing import capacity, memory

    spec, gpu = load_model("llama-3.2-1b"), load_gpu("H100-SXM")
    w = Workload(mode="train", seq_len=1024)  # 14 micro-batches fit
    n = capacity.max_batch(spec, w, gpu, limit=512)
    assert 0 < n < 512
    budget = capacity.budget(w, gpu)
    assert memory.memory_breakdown(spec, w.replace(batch=n)).total <= budget
    assert memory.memory_breakdown(spec, w.replace(batch=n + 1)).total > budget


def test_term_builds_number_and_text_from_one_expression():
    t = Term(8_030_261_248, "term.params") * Term(2, "term.B") // Term(8, "term.tp")
    assert t.value == 8_030_261_248 * 2 // 8
    assert t.text == "8,030,261,248 params · 2 B / 8 tp"
    assert t.text.render("nl") == "8.030.261.248 parameters · 2 B / 8 tp"
    s = (Term(3) + Term(4)).said(Msg("term.compiled"))
    assert (s.value, s.text) == (7, "3 + 4 (compiled)")


def test_model_state_formulas_render_their_values():
    """Each states formula is the text of the Term whose value is the figure (checked on ZeRO-3 + tp)."""
    spec = load_model("llama-3-8b")
    w = Workload(mode="train", dp=4, zero=3, tp=2)
    mem = memory_breakdown(spec, w)
    p = spec.params
    assert mem.weights == p * 2 // 4 // 2
    assert mem.formulas["weights"] == f"{p:,} params · 2 B / 4 ZeRO-3 / 2 tp"
    assert mem.optimizer == p * 8 // 8
    assert mem.formulas["optimizer"] == f"{p:,} trainable · 8 B / 4 ZeRO-3 / 2 tp"


def test_golden_outputs_are_byte_identical_to_the_recorded_ones():
    data = json.loads((ROOT / "tests" / "data" / "sizing_golden.json").read_text())
    data.pop("_note")
    assert len(data) >= 50
    differ = []
    for case, want in data.items():
        got = golden.run(case.split())
        out = got["output"]
        seen = (got["exit_code"], got["error"], hashlib.sha256(out.encode()).hexdigest(), len(out))
        if seen != (want["exit_code"], want["error"], want["sha256"], want["chars"]):
            differ.append(case)
    assert differ == []


def test_texts_that_once_left_out_part_of_their_number_now_say_it():
    """Two formulas found disagreeing with their numbers in the one-pass review: the training logits
    (the number adds the fp32 scalar loss) and optimizer-in-backward gradients under tensor parallelism
    (the number divides by tp)."""
    from aiworkbook.sizing import Workload, estimate
    from aiworkbook.specs import load_model

    spec = load_model("llama-3.2-1b")
    w = Workload(mode="train", batch=1, seq_len=256, tp=2, optimizer_in_backward=True)
    est = estimate(spec, w, gpu="H100-SXM")
    f = est.memory.formulas
    assert "largest tensor" in f["gradients"]
    assert "/ 2 tp" in f["gradients"] and f["logits"].endswith(" + 4 B loss")
    one = estimate(
        spec, Workload(mode="train", batch=1, seq_len=256, optimizer_in_backward=True), gpu="H100-SXM"
    )
    assert est.memory.gradients == one.memory.gradients // 2


@pytest.mark.parametrize("kv_dtype", ["bf16", "fp8", "int4"])
@pytest.mark.parametrize("tp", [1, 2, 8])
def test_the_kv_formula_is_built_from_the_groups_its_number_sums(kv_dtype, tp):
    """The KV text comes from the same KVGroups as `kv_bytes` (MLA latents, sliding windows, grouped
    heads per rank): its Term's value equals the breakdown's kv_cache for every decoder preset."""
    from aiworkbook.sizing import Workload, estimate
    from aiworkbook.sizing.memory import kv_term
    from aiworkbook.specs import list_presets, load_model

    checked = 0
    for name in list_presets():
        spec = load_model(name)
        if not spec.is_decoder:
            continue
        for seq in (100, 4096, 40_000):
            w = Workload(mode="infer", concurrency=3, seq_len=seq, new_tokens=64, tp=tp, kv_dtype=kv_dtype)
            try:
                w.check_against(spec)
            except ValueError:
                continue  # a tp the model's heads cannot take, a context beyond its positions
            est = estimate(spec, w)
            term = kv_term(spec, w, 3, w.context_len)
            assert term.value == est.memory.kv_cache, (name, seq)
            assert est.memory.formulas["kv_cache"] == term.text
            checked += 1
    assert checked > 30
