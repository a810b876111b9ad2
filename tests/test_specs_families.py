"""The families added after the first ten, exact to the unit against transformers on the meta device."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from aiworkbook.errors import SpecError
from aiworkbook.paths import data_dir
from aiworkbook.specs import list_presets, load_model, spec_from_config
from aiworkbook.specs.families import FAMILY_PARSERS, WRAPPERS, FamilySpec

T = {
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 4,
    "vocab_size": 500,
    "max_position_embeddings": 256,
}
MOE = {"num_experts_per_tok": 2, "moe_intermediate_size": 32}
MLA = {
    "kv_lora_rank": 32,
    "q_lora_rank": 48,
    "qk_rope_head_dim": 8,
    "qk_nope_head_dim": 16,
    "v_head_dim": 16,
    "n_routed_experts": 8,
    "n_shared_experts": 2,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 32,
    "n_group": 2,
    "topk_group": 1,
}

TINY: list[tuple[str, dict]] = [
    ("qwen3", {"model_type": "qwen3", **T}),
    (
        "qwen3-bias-tied-sliding",
        {
            "model_type": "qwen3",
            **T,
            "attention_bias": True,
            "tie_word_embeddings": True,
            "use_sliding_window": True,
            "sliding_window": 32,
            "max_window_layers": 2,
        },
    ),
    ("qwen3_moe", {"model_type": "qwen3_moe", **T, **MOE, "num_experts": 6, "head_dim": 24}),
    (
        "qwen3_moe-sparse-step",
        {
            "model_type": "qwen3_moe",
            **T,
            **MOE,
            "num_experts": 6,
            "decoder_sparse_step": 2,
            "mlp_only_layers": [3],
        },
    ),
    (
        "qwen2_moe",
        {"model_type": "qwen2_moe", **T, **MOE, "num_experts": 6, "shared_expert_intermediate_size": 80},
    ),
    (
        "qwen2_moe-tied-no-bias",
        {
            "model_type": "qwen2_moe",
            **T,
            **MOE,
            "num_experts": 6,
            "shared_expert_intermediate_size": 40,
            "qkv_bias": False,
            "tie_word_embeddings": True,
        },
    ),
    (
        "gemma3_text",
        {"model_type": "gemma3_text", **T, "head_dim": 32, "num_hidden_layers": 7, "sliding_window": 16},
    ),
    (
        "gemma3_text-untied-pattern3",
        {
            "model_type": "gemma3_text",
            **T,
            "head_dim": 16,
            "tie_word_embeddings": False,
            "sliding_window_pattern": 3,
            "num_hidden_layers": 7,
        },
    ),
    ("deepseek_v3", {"model_type": "deepseek_v3", **T, **MLA, "first_k_dense_replace": 1}),
    (
        "deepseek_v3-no-q-lora-bias",
        {
            "model_type": "deepseek_v3",
            **T,
            **MLA,
            "q_lora_rank": None,
            "attention_bias": True,
            "first_k_dense_replace": 2,
        },
    ),
    ("deepseek_v2", {"model_type": "deepseek_v2", **T, **MLA, "first_k_dense_replace": 1}),
    (
        "deepseek_v2-lite-shape",
        {"model_type": "deepseek_v2", **T, **MLA, "q_lora_rank": None, "n_shared_experts": 1},
    ),
    (
        "gpt_oss",
        {
            "model_type": "gpt_oss",
            **T,
            "head_dim": 16,
            "num_local_experts": 4,
            "num_experts_per_tok": 2,
            "sliding_window": 8,
        },
    ),
    (
        "llama4_text",
        {
            "model_type": "llama4_text",
            **T,
            "head_dim": 16,
            "num_local_experts": 4,
            "num_experts_per_tok": 1,
            "intermediate_size_mlp": 128,
            "interleave_moe_layer_step": 2,
            "attention_chunk_size": 32,
        },
    ),
    (
        "llama4_text-all-moe-bias",
        {
            "model_type": "llama4_text",
            **T,
            "num_local_experts": 3,
            "num_experts_per_tok": 1,
            "attention_bias": True,
            "no_rope_layer_interval": 2,
        },
    ),
    ("olmo2", {"model_type": "olmo2", **T}),
    ("olmo2-bias-tied", {"model_type": "olmo2", **T, "attention_bias": True, "tie_word_embeddings": True}),
    (
        "granite",
        {
            "model_type": "granite",
            **T,
            "embedding_multiplier": 12.0,
            "residual_multiplier": 0.22,
            "attention_multiplier": 0.01,
            "logits_scaling": 8.0,
            "tie_word_embeddings": True,
        },
    ),
    ("granite-biased", {"model_type": "granite", **T, "attention_bias": True, "mlp_bias": True}),
    (
        "phimoe",
        {
            "model_type": "phimoe",
            **T,
            "num_local_experts": 4,
            "num_experts_per_tok": 2,
            "sliding_window": 64,
            "lm_head_bias": True,
            "attention_bias": True,
        },
    ),
    ("phi", {"model_type": "phi", **{k: v for k, v in T.items() if k != "num_key_value_heads"}}),
    ("phi-qk-layernorm-gqa", {"model_type": "phi", **T, "qk_layernorm": True}),
    ("smollm3", {"model_type": "smollm3", **T}),
    (
        "smollm3-untied-sliding",
        {
            "model_type": "smollm3",
            **T,
            "tie_word_embeddings": False,
            "use_sliding_window": True,
            "sliding_window": 16,
        },
    ),
    ("starcoder2", {"model_type": "starcoder2", **T, "sliding_window": 64}),
    (
        "starcoder2-no-bias-untied",
        {"model_type": "starcoder2", **T, "use_bias": False, "tie_word_embeddings": False},
    ),
]


TINY_WRAPPERS: list[tuple[str, dict]] = [
    (
        "mistral3-tiny",
        {
            "model_type": "mistral3",
            "spatial_merge_size": 2,
            "text_config": {"model_type": "mistral", **T, "head_dim": 16, "sliding_window": None},
            "vision_config": {
                "model_type": "pixtral",
                "hidden_size": 48,
                "intermediate_size": 80,
                "num_attention_heads": 4,
                "num_hidden_layers": 2,
                "image_size": 64,
                "patch_size": 8,
                "head_dim": 12,
            },
        },
    ),
    (
        "gemma3-tiny-with-head",
        {
            "model_type": "gemma3",
            "text_config": {"model_type": "gemma3_text", **T, "head_dim": 16, "num_hidden_layers": 6},
            "vision_config": {
                "model_type": "siglip_vision_model",
                "hidden_size": 48,
                "intermediate_size": 80,
                "num_attention_heads": 4,
                "num_hidden_layers": 2,
                "image_size": 64,
                "patch_size": 8,
                "vision_use_head": False,
            },
            "mm_tokens_per_image": 16,
        },
    ),
]


def _presets(kind: str) -> list[tuple[str, dict]]:
    out = []
    for name in list_presets():
        cfg = json.loads((data_dir() / "models" / name / "config.json").read_text())
        wrapper = cfg.get("model_type") in WRAPPERS
        if cfg.get("model_type") in FAMILY_PARSERS and kind == "text" or wrapper and kind == "wrapper":
            out.append((name, cfg))
    return out


def _hf(cfg: dict):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    clean = {k: v for k, v in cfg.items() if not k.startswith("_") and k not in ("quantization_config",)}
    for tok in ("bos_token_id", "eos_token_id", "pad_token_id"):
        if not isinstance(clean.get(tok), int) or clean[tok] >= clean.get("vocab_size", 0):
            clean[tok] = 0  # ids do not change the count; family defaults may exceed a tiny vocabulary
    hf_cfg = transformers.AutoConfig.for_model(**clean)
    cls = (
        transformers.AutoModelForImageTextToText
        if cfg["model_type"] in WRAPPERS
        else transformers.AutoModelForCausalLM
    )
    with torch.device("meta"):
        return hf_cfg, cls.from_config(hf_cfg)


def _n(module) -> int:
    return sum(p.numel() for p in module.parameters())


def _check_kv(spec: FamilySpec, hf_text_cfg) -> None:
    if spec.family.startswith("deepseek"):
        (g,) = spec.kv_groups
        assert (g.kind, g.layers, g.heads, g.width) == (
            "mla",
            spec.num_layers,
            1,
            hf_text_cfg.kv_lora_rank + hf_text_cfg.qk_rope_head_dim,
        )
        return
    kinds = Counter({"full": 0, "sliding": 0, "chunked": 0})
    for g in spec.kv_groups:
        kinds[g.kind] += g.layers
        assert g.heads == hf_text_cfg.num_key_value_heads and g.width == 2 * spec.head_dim
    types = getattr(hf_text_cfg, "layer_types", None) or ["full_attention"] * spec.num_layers
    if spec.family == "starcoder2" and getattr(hf_text_cfg, "sliding_window", None):
        types = ["sliding_attention"] * spec.num_layers  # every layer slides when a window is set
    if spec.family == "phimoe" and getattr(hf_text_cfg, "sliding_window", None):
        types = ["sliding_attention"] * spec.num_layers
    want = Counter({"full": 0, "sliding": 0, "chunked": 0})
    for t in types:
        want[t.split("_")[0]] += 1
    assert kinds == want


@pytest.mark.parametrize("name,cfg", TINY + _presets("text"), ids=[n for n, _ in TINY + _presets("text")])
def test_text_families_match_transformers(name, cfg):
    hf_cfg, model = _hf(cfg)
    spec = spec_from_config(cfg, name=name)
    assert isinstance(spec, FamilySpec)
    assert spec.params == _n(model)
    assert spec.params_embedding == model.get_input_embeddings().weight.numel()
    experts = [m for n, m in model.named_modules() if n.endswith(".experts")]  # fused (E, ...) tensors
    if experts:  # active = total minus the idle routed experts of each sparse layer
        per_expert = sum(p[0].numel() for p in experts[0].parameters())  # one expert's slice of each tensor
        idle = len(experts) * (spec.num_experts - spec.experts_per_token) * per_expert
        assert spec.params_active == spec.params - idle
    else:
        assert spec.params_active == spec.params
    _check_kv(spec, hf_cfg)


WRAPPED = TINY_WRAPPERS + _presets("wrapper")


@pytest.mark.parametrize("name,cfg", WRAPPED, ids=[n for n, _ in WRAPPED])
def test_multimodal_wrappers_text_and_vision_apart(name, cfg):
    hf_cfg, model = _hf(cfg)
    spec = spec_from_config(cfg, name=name)
    lm = model.model.language_model if hasattr(model, "model") else model.language_model
    out = getattr(model, "lm_head", None) or lm.lm_head
    head = 0 if spec.tie_word_embeddings or lm is out or out in lm.modules() else out.weight.numel()
    assert spec.params == _n(lm) + head
    assert spec.vision_params == _n(model) - _n(lm) - head
    assert spec.model_type == cfg["model_type"]
    _check_kv(spec, hf_cfg.text_config)


def test_mla_cache_is_the_latent_not_full_heads():
    spec = spec_from_config({"model_type": "deepseek_v3", **T, **MLA})
    assert spec.kv_bytes_per_token("bf16") == T["num_hidden_layers"] * (32 + 8) * 2
    assert spec.kv_bytes_per_token("bf16", tp=4) == spec.kv_bytes_per_token("bf16")  # not split by heads
    assert spec.mtp_params == 0
    mtp = spec_from_config({"model_type": "deepseek_v3", **T, **MLA, "num_nextn_predict_layers": 1})
    assert mtp.params == spec.params and mtp.mtp_params > 0


def test_kv_per_layer_type_caps_windows_and_chunks():
    g = spec_from_config(TINY[6][1])  # gemma3_text: 7 layers, 6th global, window 16
    per_layer = 2 * 2 * 32 * 2
    assert g.kv_cache_bytes(100) == (6 * 16 + 1 * 100) * per_layer
    l4 = spec_from_config(TINY[13][1])  # llama4: layers 4, 8 ... NoPE global, the rest chunked at 32
    per_layer = 2 * 2 * 16 * 2
    assert l4.kv_cache_bytes(100) == (3 * 32 + 1 * 100) * per_layer
    assert l4.kv_bytes_per_token("bf16", tp=4) == 4 * 2 * 1 * 16 * 2  # 2 KV heads over 4 ranks: replicated


def test_unknown_model_type_lists_families_and_family_asserts_shape():
    cfg = {"model_type": "my_llama", **T}
    with pytest.raises(SpecError) as e:
        spec_from_config(cfg)
    assert "qwen3_moe" in str(e.value) and "llama" in str(e.value) and "--family" in str(e.value)
    spec = spec_from_config(cfg, family="qwen3")
    assert (
        spec.asserted_family == "qwen3"
        and spec.params == spec_from_config({**cfg, "model_type": "qwen3"}).params
    )
    base = spec_from_config(cfg, family="llama")
    assert base.asserted_family == "llama"
    with pytest.raises(SpecError, match="family"):
        spec_from_config(cfg, family="nope")


@pytest.mark.parametrize("field,value", [("num_experts_per_tok", 9), ("layer_types", ["full_attention"])])
def test_bad_family_fields_are_spec_errors(field, value):
    cfg = {"model_type": "qwen3_moe", **T, **MOE, "num_experts": 6, field: value}
    with pytest.raises(SpecError, match=field):
        spec_from_config(cfg)


def _cli(capsys, *args):
    from aiworkbook.cli import main

    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_models_lists_every_family_and_params_says_family_asserted(capsys, tmp_path):
    from aiworkbook.specs import FAMILIES
    from aiworkbook.specs.families import known

    rc, out, _ = _cli(capsys, "models")
    assert rc == 0
    listed = {line.split()[0] for line in out.split("families")[1].splitlines()[1:] if line.strip()}
    assert listed == set(FAMILIES) | set(known())
    p = tmp_path / "config.json"
    p.write_text(json.dumps({"model_type": "my_qwen", **T}))
    rc, _, err = _cli(capsys, "params", str(p))
    assert rc == 2 and "--family" in err and len(err.strip().splitlines()) == 1
    rc, out, _ = _cli(capsys, "params", str(p), "--family", "qwen3", "--json")
    assert rc == 0 and json.loads(out)["asserted_family"] == "qwen3"
    rc, out, _ = _cli(capsys, "params", "gemma-3-4b-it")
    assert rc == 0 and "vision tower (apart)" in out and "KV group sliding" in out


def test_sizing_engine_sizes_kv_per_layer_group():
    """The estimate's KV follows the layer groups: MLA's latent, Gemma 3's windows, TP replication."""
    from aiworkbook.sizing import Workload, estimate

    ds = load_model("deepseek-v2-lite")
    w = Workload(mode="infer", batch=2, concurrency=2, seq_len=4096, kv_dtype="bf16")
    assert estimate(ds, w).memory.kv_cache == 2 * ds.kv_cache_bytes(4096)  # 27 layers x 576 x 2 B a token
    g = load_model("gemma-3-27b-it")
    kv = estimate(g, Workload(mode="infer", batch=1, seq_len=32768)).memory.kv_cache
    assert kv == g.kv_cache_bytes(32768) == (52 * 1024 + 10 * 32768) * 2 * 16 * 128 * 2
