"""Sizing formulas are messages: each leaf a catalogue id (`term.*`) with its figure, joined by
operators, rendered in the viewer's language; nothing parses English back. Dutch and German formulas
hold no English template, a unit change (MiB to GiB) still translates, and a locked profile says its
formulas in any language, while an older profile's English text is shown as recorded, said so."""

from __future__ import annotations

import copy
import pickle
import re

import pytest
from english_left import IDENTIFIER, SHARED, WORD, english_left

from aiworkbook.catalogue import catalogue
from aiworkbook.message import Joined, Msg, from_data, to_data
from aiworkbook.sizing import Workload, estimate
from aiworkbook.sizing.formula_data import formula_said, rule_said, stored_formulas, with_stored_formulas
from aiworkbook.specs import load_model
from aiworkbook.units import GiB, MiB

OTHERS = ("nl", "de")
#: words a formula writes alike in English, Dutch and German: names of kernels, libraries, tensors and
#: units (checked: each is what the Dutch or German catalogue writes too, not a copy left untranslated)
SAME_WORDS = SHARED | {
    "cublas",  # NVIDIA's library
    "transformers",  # Hugging Face's library
    "qkv",  # the fused projection's name
    "lse",  # log-sum-exp, as the kernels name it
    "absmax",  # bitsandbytes' scale
    "int8",
    "mla",  # Multi-head Latent Attention
    "rope",  # rotary position embedding, as every catalogue abbreviates it
    "mlp",  # the feed-forward block's abbreviation, alike in Dutch and German
    "latent",  # MLA's latent width: the same word in Dutch and German
    "maximize",  # torch.optim's argument
    "router",
    "rms",
    "bits",
    "nf4",
    "sdpa",
    "scores",
    "tanh",
    "autocast",
    "foreach",
    "forloop",
    "sqrt",
    "exp_avg_sq",
    "var_estimates",
    "var_estimate",
    "denom",
    "shard",
    "handles",
    "labels",
    "amp",
    "embedding",
    "gelu_new",
    "compile_loss",
    "quantization_config",
    "llama-factory",
    "pytorch",
    "ids",
    "adapter",
    "min",
    "top",
    "per",
    # loanwords and cognates Dutch or German write as English does (read one by one)
    "norm",
    "encoder",
    "matrix",
    "vector",
    "moment",
    "kernel",
    "softmax",
    "parameter",
    "quotient",
    "tensors",
    "thread",
    "autograd",
    "training",
    "prefill",
    "pool",
    "bytes",
    "graphs",
    "allocator",
    "math",
    "expert",
    "gate",
    "sigmoid",
    "pipeline",
    # names: libraries, vLLM's Sampler and fused-MoE kernel, its dummy inputs, CUDA's Unified Memory
    "sampler",
    "fused",
    "moe",
    "dummy",
    "fsdp",
    "torchao",
    "bitsandbytes",
    "unified",
    "memory",
}

#: the option sets of tools/sizing_golden.py that change a formula's shape, on one dense and one MoE model
CASES = [
    dict(mode="train", dp=8, zero=3),
    dict(mode="train", dp=4, zero=1, tp=2),
    dict(mode="train", fsdp_cpu_offload=True, dp=2, zero=3),
    dict(mode="train", recipe="paged-adamw-8bit"),
    dict(mode="train", recipe="adafactor"),
    dict(mode="train", recipe="blockwise-adamw-8bit", precision="bf16"),
    dict(mode="train", recipe="fp32-adamw", precision="bf16-mixed", attention="eager"),
    dict(mode="train", recipe="fp32-adamw", precision="bf16-mixed", checkpointing="selective"),
    dict(mode="train", optimizer_in_backward=True, checkpointing="full"),
    dict(mode="train", activation_offload=True, compile=True, loss_chunks=8),
    dict(mode="train", chunked_loss=True, batch=4, seq_len=512),
    dict(mode="train", maximize=True, l2_weight_decay=True, optimizer_impl="forloop"),
    dict(mode="train", recipe="sgd-momentum", maximize=True),
    dict(mode="lora", lora_targets="all-linear", compile=True, kv_repeat=True),
    dict(mode="lora", zero=3, dp=2, loss_chunks=8, compile_loss=False, compile=True),
    dict(mode="qlora", lora_rank=64),
    dict(mode="infer", concurrency=8, seq_len=1024, new_tokens=256, kv_dtype="fp8"),
    dict(mode="infer", engine="vllm", concurrency=16, seq_len=512, new_tokens=128),
    dict(mode="infer", engine="trtllm", concurrency=4, weights_dtype="int4"),
    dict(mode="infer", attention="eager", tp=2, weights_dtype="fp8"),
    dict(mode="infer", max_batched_tokens=512, concurrency=4),
]


def _words(text: str) -> set[str]:
    prose = IDENTIFIER.sub(" ", re.sub(r"{[^}]*}", " ", text))
    return {w.lower() for w in WORD.findall(prose) if len(w) >= 3}


def _formulas(model: str, case: dict) -> list[Msg]:
    """The formulas of one option set ([] when the model refuses it, as the CLI would)."""
    from aiworkbook.errors import SpecError

    spec = load_model(model)
    short = {"seq_len": 512} if spec.max_position_embeddings < 2048 and "seq_len" not in case else {}
    try:
        est = estimate(spec, Workload(**case, **short), gpu="H100-SXM")
    except SpecError:
        return []
    comm = est.roofline.get("tp_comm_formula")  # tensor parallel: the all-reduces over the link
    return [*est.memory.formulas.values(), est.rules_of_thumb.formula, *([comm] if comm else [])]


def test_every_formula_id_has_its_own_words_in_dutch_and_german():
    """No term.* template of nl or de keeps an English word of its English template (beyond the names
    every language writes alike), and every one renders without English left."""
    en = catalogue("en")
    ids = [i for i in en if i.startswith("term.") or i.startswith("formula.")]
    assert len(ids) > 100
    copied = []
    for lang in OTHERS:
        other = catalogue(lang)
        for i in ids:
            kept = (_words(en[i]) & _words(other[i])) - SAME_WORDS
            if kept:
                copied.append(f"{lang} {i}: {sorted(kept)} in {other[i]!r}")
    assert not copied, "English left in a translated formula template:\n" + "\n".join(copied)


@pytest.mark.parametrize("model", ["llama-3-8b", "mixtral-8x7b", "gpt2", "gemma-2-9b", "bert-base-uncased"])
def test_real_formulas_say_no_english_in_dutch_and_german(model):
    """Every formula of every option set, rendered in nl and de: no English word or English-formatted
    figure left, the English rendering is the text `size --json` prints, and every piece between the
    messages is notation (operators, brackets, whole numbers, the sequence length s), never words."""
    seen = 0
    for case in CASES:
        for f in _formulas(model, case):
            assert isinstance(f, Msg) and f.render("en") == str(f)
            for part in f.parts if isinstance(f, Joined) else ():
                if not isinstance(part, Msg):
                    assert re.fullmatch(r"[\s·/+−()\[\],;:s0-9]*", part), (part, str(f))
            for lang in OTHERS:
                said = f.render(lang)
                assert not english_left(said, lang), (lang, said)
                seen += bool(str(f))
    assert seen > 150


def test_a_unit_change_still_translates():
    """The same sentence with a figure in MiB and in GiB (a loss transient that grows with the tokens):
    the words stay translated, the unit follows the figure."""
    small = Msg("term.ws.zero3_unit", size=62 * MiB)
    big = Msg("term.ws.zero3_unit", size=3 * GiB)
    assert "MiB" in small.render("nl") and "GiB" in big.render("nl")
    for m in (small, big):
        assert "verzamelde eenheid" in m.render("nl") and "gesammelte Einheit" in m.render("de")
        assert "gathered" in str(m)
    spec = load_model("llama-3-8b")
    short = estimate(spec, Workload(mode="train", batch=1, seq_len=128)).memory.formulas["workspace"]
    long = estimate(spec, Workload(mode="train", batch=4, seq_len=4096)).memory.formulas["workspace"]
    assert "MiB loss backward" in short and "GiB loss backward" in long
    for f, unit in ((short, "MiB"), (long, "GiB")):
        assert f"{unit} backward-pass van het verlies" in f.render("nl")
        assert f"{unit} Rückwärtsdurchlauf des Verlusts" in f.render("de")


def test_plural_forms_follow_the_figure():
    one = estimate(load_model("llama-3-8b"), Workload(mode="infer", concurrency=1)).memory.formulas["logits"]
    many = estimate(load_model("llama-3-8b"), Workload(mode="infer", concurrency=8)).memory.formulas["logits"]
    assert "1 sequentie " in one.render("nl") and "8 sequenties" in many.render("nl")
    assert "1 Sequenz " in one.render("de") and "8 Sequenzen" in many.render("de")


def test_a_formula_travels_as_data():
    """A formula pickles (a proof's child process) and stores as JSON data (a locked profile), and comes
    back the same message; flat, so a stored formula stays well inside the profile's nesting bound."""
    f = estimate(load_model("llama-3-8b"), Workload(mode="qlora", compile=True)).memory.formulas[
        "activations"
    ]
    assert pickle.loads(pickle.dumps(f)).render("de") == f.render("de")
    data = to_data(f)
    assert all(isinstance(p, str) or set(p) == {"id", "args"} for p in data["parts"])
    back = from_data(data)
    assert str(back) == str(f) and back.render("nl") == f.render("nl")


def _locked_estimate() -> dict:
    return with_stored_formulas(
        estimate(load_model("llama-3-8b"), Workload(mode="train", dp=8, zero=3)).to_dict()
    )


def test_a_locked_profile_says_its_formulas_in_the_language():
    d = _locked_estimate()
    stored = stored_formulas(d)
    assert set(stored) == set(d["formulas"])
    plain = {k: str(v) for k, v in d["formulas"].items()}  # as a profile reads back from JSON
    said = formula_said(plain["weights"], "de", stored["weights"])
    assert said.startswith("8.030.261.248 Parameter · 2 B") and "as recorded" not in said
    assert "Gewichte + Gradienten" in formula_said(plain["total"], "de", stored["total"])
    assert "Parameter" in rule_said(d["rules_of_thumb"], "de")


def test_an_older_profile_shows_its_english_as_recorded_and_says_so():
    old = "8,030,261,248 params · 2 B / 8 ZeRO-3"
    assert formula_said(old, "en") == old
    assert formula_said(old, "nl") == f"{old} (zoals vastgelegd, in het Engels)"
    assert formula_said(old, "de") == f"{old} (wie aufgezeichnet, auf Englisch)"
    assert formula_said("", "de") == ""
    assert rule_said({"formula": "6 B · 8,030,261,248 params + KV cache"}, "nl").endswith("in het Engels)")


@pytest.mark.parametrize(
    "broken",
    [
        {"id": "term.no_such_id", "args": {}},
        {"id": "term.params", "args": {"n": "many"}},
        {"id": "term.params", "args": []},
        {"parts": [{"id": "term.ws.cublas", "args": {}}]},
        {"parts": "x"},
        "a string",
        17,
    ],
)
def test_a_hand_edited_stored_formula_falls_back_to_the_text(broken):
    """A stored message this version cannot say (an unknown id, arguments of the wrong kind, another
    shape) never breaks the report: the text as recorded, said so."""
    text = "8,030,261,248 params · 2 B"
    assert formula_said(text, "nl", copy.deepcopy(broken)) == f"{text} (zoals vastgelegd, in het Engels)"


@pytest.mark.parametrize("model", ["llama-3-8b", "mixtral-8x7b", "gemma-3-27b-it"])
def test_vllm_startup_formulas_say_no_english_in_dutch_and_german(model):
    """vLLM's start-up items (requested memory, the profile run's peak with its sampler, dummy images
    and MoE workspace, non-torch memory, the KV blocks) are messages too."""
    from aiworkbook.sizing.vllm import startup
    from aiworkbook.specs import load_gpu

    r = startup(load_model(model), load_gpu("H100-SXM"))
    assert set(r.formulas) == {"requested", "activation_peak", "non_torch", "kv"}
    for f in r.formulas.values():
        assert isinstance(f, Msg) and f.render("en") == str(f)
        for lang in OTHERS:
            assert not english_left(f.render(lang), lang), (lang, f.render(lang))


def test_the_report_of_an_older_profile_shows_its_english_formulas_as_recorded():
    """A profile locked before formulas were messages (no formula_messages) reports in Dutch without
    an error: its formulas as recorded, said to be English; a new one says them in Dutch."""
    import json

    from profile_fakes import CHAT, result

    from aiworkbook.profile import lock
    from aiworkbook.profile.model import LockedProfile
    from aiworkbook.profile.report import render_markdown

    new = lock(
        "llm-inference",
        node="inference-4xl40s",
        detected=None,
        workloads=[CHAT],
        results=[result("kv", 9.5e8)],
    )
    assert "| gewichten | 14,96 GiB | 8.030.261.248 parameters · 2 B |" in render_markdown(new, lang="nl")
    d = json.loads(json.dumps(new.to_dict()))
    d["estimates"]["chat"].pop("formula_messages")
    d["estimates"]["chat"]["rules_of_thumb"].pop("formula_message")
    md = render_markdown(LockedProfile.model_validate(d), lang="nl")
    assert "| gewichten | 14,96 GiB | 8,030,261,248 params · 2 B (zoals vastgelegd, in het Engels) |" in md
    assert "Vuistregel: 6 B · 8,030,261,248 params + KV cache (zoals vastgelegd, in het Engels)" in md
