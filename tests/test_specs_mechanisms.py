"""Each family declares its mechanisms in its parser; sizing and the proofs read only those.

The declarations are checked against transformers' own source for the family (the eager softmax's
dtype, the rotary embedding, one fused q/k/v projection), a spec whose family declared nothing is
refused, and the same config sizes the same under its own name as read as the family it behaves like.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import replace

import pytest
import test_specs_families as fam

from aiworkbook.errors import SpecError
from aiworkbook.sizing import Workload, estimate
from aiworkbook.specs import spec_from_config
from aiworkbook.specs.families import FAMILY_PARSERS, PARSERS
from aiworkbook.specs.mechanisms import Mechanisms

BASE = {"llama", "mistral", "mixtral", "qwen2", "gemma", "gemma2", "phi3", "gpt2", "gpt_neox", "bert"}
TINY_BASE = {
    "mixtral": {"num_local_experts": 4, "num_experts_per_tok": 2},
    "gpt2": {"n_layer": 2, "n_embd": 64, "n_head": 4, "n_positions": 256},
}


def _cfg(mt: str) -> dict:
    """A tiny config of model_type mt: the families test's own, or the common sizes for a base family."""
    for _, cfg in fam.TINY:
        if cfg["model_type"] == mt:
            return cfg
    return {"model_type": mt, **fam.T, **TINY_BASE.get(mt, {})}


def test_registry_is_every_family_and_each_declares():
    assert BASE | set(FAMILY_PARSERS) == set(PARSERS)
    for mt in PARSERS:
        spec = spec_from_config(_cfg(mt))
        assert isinstance(spec.mechanisms, Mechanisms), mt


def test_a_family_that_declares_nothing_is_refused():
    spec = replace(spec_from_config(_cfg("llama")), mechanisms=None)
    with pytest.raises(SpecError, match="declares its mechanisms"):
        estimate(spec, Workload(precision="bf16", recipe="pure-bf16", attention="eager"))


def test_granite_sizes_as_the_llama_it_computes_like():
    """Granite's multipliers multiply by Python scalars (nothing saved): its own name gives Llama's bytes."""
    cfg = {**_cfg("granite"), "model_type": "granite"}
    w = Workload(precision="bf16", recipe="pure-bf16", attention="eager", seq_len=4096)
    own = estimate(spec_from_config(cfg), w).memory.activations
    as_llama = estimate(spec_from_config({**cfg, "model_type": "llama"}), w).memory.activations
    assert own == as_llama


def _hf_module(mt: str):
    transformers = pytest.importorskip("transformers")
    cfg = transformers.AutoConfig.for_model(mt)
    cls = transformers.MODEL_MAPPING[type(cfg)]
    return inspect.getmodule(cls)


@pytest.mark.parametrize("mt", sorted(PARSERS))
def test_declarations_match_transformers_source(mt):
    """softmax_fp32, rope and fused_qkv as transformers' modeling file for the family does them."""
    mod = _hf_module(mt)
    src = inspect.getsource(mod)
    mech = spec_from_config(_cfg(mt)).mechanisms
    eager = inspect.getsource(mod.eager_attention_forward)
    fp32 = bool(re.search(r"softmax\([^)]*dtype=torch\.float32", eager))
    assert mech.softmax_fp32 == fp32, mt
    assert mech.rope == ("apply_rotary_pos_emb" in src or "rotary" in src.lower() and "_rope" in src), mt
    fused = bool(re.search(r"self\.(c_attn|query_key_value|qkv_proj) = ", src))
    assert mech.fused_qkv == fused, mt
    assert mech.attn_softcap == ("softcap" in eager and mt == "gemma2"), mt
    assert mech.attention_sinks == ("sinks" in eager), mt  # gpt-oss: a sink logit per head


def test_partial_rotary_families_declare_their_share_and_cat():
    """partial_rotary_factor (or GPT-NeoX's rotary_pct, or rope_parameters') sets the cos/sin width; the
    three families that rotate a slice and join it with torch.cat declare it; a share outside (0, 1] is
    refused naming the key."""
    neox = spec_from_config(_cfg("gpt_neox"))
    assert neox.mechanisms.rotary_fraction == 0.25 and neox.mechanisms.rope_concat
    assert neox.mechanisms.parallel_norms and neox.num_kv_heads == neox.num_heads  # no GQA in GPT-NeoX
    seq = spec_from_config({**_cfg("gpt_neox"), "rotary_pct": 0.5, "use_parallel_residual": False})
    assert seq.mechanisms.rotary_fraction == 0.5 and not seq.mechanisms.parallel_norms
    nested = {**_cfg("phi"), "rope_parameters": {"partial_rotary_factor": 0.25}}
    assert spec_from_config(nested).mechanisms.rotary_fraction == 0.25
    assert spec_from_config(_cfg("phi")).mechanisms.rotary_fraction == 0.5
    assert spec_from_config(_cfg("phi3")).mechanisms.rotary_fraction == 1.0
    assert not spec_from_config(_cfg("llama")).mechanisms.rope_concat
    with pytest.raises(SpecError, match="partial_rotary_factor"):
        spec_from_config({**_cfg("phi3"), "partial_rotary_factor": 1.5})
    w = Workload(precision="fp32", recipe="fp32-adamw", batch=1, seq_len=64)
    wider = spec_from_config({**_cfg("gpt_neox"), "rotary_pct": 0.5})
    quarter, half = (estimate(s, w, device="cpu").memory.activations for s in (neox, wider))
    d = neox.head_dim  # cos and sin, fp32, one row per position: the width follows the share
    assert half - quarter == 2 * (int(d * 0.5) - int(d * 0.25)) * 4 * 64


def test_qwen2_moe_declares_its_gated_shared_expert():
    """shared_expert_intermediate_size is the shared expert's own width; its sigmoid gate keeps the output
    and the sigmoid: (4·I_shared + h + 1)·e more per token and layer than the same model without it."""
    cfg = _cfg("qwen2_moe")
    spec = spec_from_config(cfg)
    width = cfg["shared_expert_intermediate_size"]
    assert spec.mechanisms.shared_intermediate == width and spec.mechanisms.shared_gate
    alone = spec_from_config({**cfg, "shared_expert_intermediate_size": 0})
    assert not alone.mechanisms.shared_expert and not alone.mechanisms.shared_gate
    w = Workload(precision="fp32", recipe="fp32-adamw", batch=1, seq_len=64, checkpointing="none")
    more = (
        estimate(spec, w, device="cpu").memory.activations
        - estimate(alone, w, device="cpu").memory.activations
    )
    assert more == spec.num_layers * 64 * (4 * width + spec.hidden_size + 1) * 4


def test_grouped_mm_experts_run_at_the_weights_width_under_autocast():
    """The four MoE families transformers runs through grouped_mm declare it: under AMP the experts keep
    fp32 tensors and autocast copies none of their matrices (the attention's and the router's still)."""
    from aiworkbook.sizing.activations import layer_matrix_params

    for mt in ("mixtral", "phimoe", "qwen2_moe", "qwen3_moe"):
        spec = spec_from_config(_cfg(mt))
        assert spec.mechanisms.experts_grouped_mm, mt
        as_linear = replace(spec, mechanisms=replace(spec.mechanisms, experts_grouped_mm=False))
        h, i, E = spec.hidden_size, spec.intermediate_size, spec.num_experts
        assert layer_matrix_params(as_linear) - layer_matrix_params(spec) == 3 * h * i * E, mt
        amp = Workload(precision="bf16-mixed", recipe="fp32-adamw", batch=1, seq_len=64)
        fp32_wide = estimate(spec, amp, device="cpu").memory.activations
        assert fp32_wide != estimate(as_linear, amp, device="cpu").memory.activations, mt
    assert not spec_from_config(_cfg("llama")).mechanisms.experts_grouped_mm


def test_gemma2_post_norms_keep_no_output():
    """Gemma 2's post-attention and post-feedforward norms feed the residual add: outside autocast each
    keeps e·h per token less than a norm a matmul reads; under autocast no norm output was counted."""
    spec = spec_from_config(_cfg("gemma2"))
    assert spec.mechanisms.post_norms == 2
    pre_only = replace(spec, mechanisms=replace(spec.mechanisms, post_norms=0))
    for precision, recipe, e in (("fp32", "fp32-adamw", 4), ("bf16", "pure-bf16", 2)):
        w = Workload(precision=precision, recipe=recipe, attention="eager", batch=1, seq_len=64)
        less = (
            estimate(pre_only, w, device="cpu").memory.activations
            - estimate(spec, w, device="cpu").memory.activations
        )
        assert less == spec.num_layers * 64 * 2 * e * spec.hidden_size, precision
    amp = Workload(precision="bf16-mixed", recipe="fp32-adamw", attention="eager", batch=1, seq_len=64)
    assert (
        estimate(spec, amp, device="cpu").memory.activations
        == estimate(pre_only, amp, device="cpu").memory.activations
    )


def _offered(cls) -> set[str]:
    """The attention implementations a transformers model class offers, in the names sizing uses."""
    return (
        {"eager"}
        | ({"sdpa"} if cls._supports_sdpa else set())
        | ({"flash"} if cls._supports_flash_attn else set())
    )


@pytest.mark.parametrize("mt", sorted(PARSERS))
def test_attentions_declared_as_transformers_offers_them(mt):
    """Each family declares the attention implementations its transformers model class offers
    (_supports_sdpa, _supports_flash_attn): Gemma 2 and gpt-oss have no sdpa, Llama 4 no flash."""
    transformers = pytest.importorskip("transformers")
    cls = transformers.MODEL_MAPPING[type(transformers.AutoConfig.for_model(mt))]
    assert set(spec_from_config(_cfg(mt)).mechanisms.attentions) == _offered(cls), mt


def test_a_wrapper_offers_what_its_transformers_model_offers():
    """Gemma 3's multimodal model takes flash attention away from its text family (the image mask)."""
    transformers = pytest.importorskip("transformers")
    wrapper = {"model_type": "gemma3", "text_config": {**fam.T, "head_dim": 16}, "vision_config": {}}
    spec = spec_from_config(wrapper)
    cls = transformers.MODEL_MAPPING[type(transformers.AutoConfig.for_model("gemma3"))]
    assert set(spec.mechanisms.attentions) == _offered(cls) and "flash" not in spec.mechanisms.attentions
    assert "flash" in spec_from_config(_cfg("gemma3_text")).mechanisms.attentions


@pytest.mark.timeout(60)
def test_a_family_without_sdpa_is_sized_as_transformers_runs_it():
    """gpt-oss offers no sdpa: transformers builds it eagerly when none is asked for, and so does the
    estimate (said in its activations formula); sdpa asked for is refused naming the field and the
    implementations the family offers; a family with sdpa keeps it as the default."""
    transformers = pytest.importorskip("transformers")
    cfg = {**_cfg("gpt_oss"), "num_hidden_layers": 2}
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**cfg))
    assert model.config._attn_implementation == "eager"
    spec = spec_from_config(cfg)
    w = Workload(precision="bf16", recipe="pure-bf16", seq_len=64)
    assert w.attention is None and w.attention_for(spec) == "eager"
    est = estimate(spec, w, device="cpu")
    eager = estimate(spec, w.replace(attention="eager"), device="cpu")
    assert est.workload.attention == "eager" and est.memory.activations == eager.memory.activations
    assert "transformers offers gpt_oss eager, flash, no sdpa" in str(est.memory.formulas["activations"])
    with pytest.raises(SpecError) as refused:
        estimate(spec, w.replace(attention="sdpa"), device="cpu")
    assert refused.value.field == "attention" and "eager, flash" in str(refused.value)
    llama = spec_from_config(_cfg("llama"))
    assert estimate(llama, w, device="cpu").workload.attention == "sdpa"
    assert "no sdpa" not in str(estimate(llama, w, device="cpu").memory.formulas["activations"])


def test_cli_refuses_sdpa_for_a_family_without_it(tmp_path, capsys):
    """`size --attention sdpa` on a gpt-oss config: exit 2, the option and what the family offers."""
    import json

    from aiworkbook.cli import main

    path = tmp_path / "config.json"
    path.write_text(json.dumps({**_cfg("gpt_oss"), "num_hidden_layers": 2}))
    assert main(["size", str(path), "--attention", "sdpa", "--seq", "64"]) == 2
    err = capsys.readouterr().err
    assert "--attention" in err and "eager, flash" in err and "Traceback" not in err, err
    assert main(["size", str(path), "--seq", "64"]) == 0
    assert "no sdpa" in capsys.readouterr().out


def test_the_vram_proof_runs_what_transformers_runs_for_the_family():
    """`prove vram` without --attention sizes and builds gpt-oss eagerly (sdpa for Llama), and records it."""
    from aiworkbook.proofs import vram

    gpt_oss = spec_from_config({**_cfg("gpt_oss"), "num_hidden_layers": 2})
    st = vram._prepare(gpt_oss, device="cpu", quick=True)
    assert st.w.attention == "eager" and st.inputs["attention"] == "eager"
    llama = vram._prepare(spec_from_config(_cfg("llama")), device="cpu", quick=True)
    assert llama.w.attention == "sdpa" and llama.inputs["attention"] == "sdpa"
    with pytest.raises(SpecError, match="attention"):
        vram._prepare(gpt_oss, device="cpu", quick=True, attention="sdpa")


def _granite(**scales: float) -> dict:
    return {"model_type": "granite", **fam.T, **scales}


def test_multipliers_are_declared_from_what_the_config_carries():
    """Granite's constants come from its config (embedding_multiplier, residual_multiplier,
    attention_multiplier, logits_scaling), not its name: a granite config with them declares them, one
    without them (transformers' defaults, 1.0) or with all of them 1 does not, nor does a llama config."""
    granite = next(cfg for name, cfg in fam.TINY if name == "granite")
    assert spec_from_config(granite).mechanisms.multipliers
    assert spec_from_config(_granite(logits_scaling=8.0)).mechanisms.multipliers
    assert not spec_from_config(_granite()).mechanisms.multipliers
    ones = {
        "embedding_multiplier": 1,
        "residual_multiplier": 1.0,
        "attention_multiplier": 1,
        "logits_scaling": 1,
    }
    assert not spec_from_config(_granite(**ones)).mechanisms.multipliers
    assert not spec_from_config({"model_type": "llama", **fam.T}).mechanisms.multipliers


@pytest.mark.parametrize("bad", ["12", True, 0, -0.5])
def test_a_multiplier_that_is_no_positive_number_is_refused_naming_it(bad):
    with pytest.raises(SpecError, match="residual_multiplier"):
        spec_from_config(_granite(residual_multiplier=bad))
