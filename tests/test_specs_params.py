"""Parameter counts: the published figures, and an independent implementation (transformers)."""

from __future__ import annotations

import json

import pytest

from aiworkbook.paths import data_dir
from aiworkbook.specs import families, list_presets, load_model, spec_from_config

# Published exact counts (../shared/REFERENCE.md and the model cards).
PUBLISHED = {
    "gpt2": 124_439_808,
    "llama-2-7b": 6_738_415_616,
    "llama-3-8b": 8_030_261_248,
    "llama-3-70b": 70_553_706_496,
    "mistral-7b-v0.1": 7_241_732_096,
    "mixtral-8x7b": 46_702_792_704,
    "qwen2.5-7b": 7_615_616_512,
}


@pytest.mark.parametrize("name,count", sorted(PUBLISHED.items()))
def test_published_counts(name, count):
    assert load_model(name).params == count


def test_mixtral_active_params():
    assert load_model("mixtral-8x7b").params_active == 12_879_925_248


def test_llama3_kv_bytes_per_token():
    spec = load_model("llama-3-8b")
    assert spec.kv_bytes_per_token("bf16") == 131_072  # 2 * 32 layers * 8 kv heads * 128 * 2 B
    assert spec.kv_bytes_per_token("fp8") == 65_536
    assert spec.kv_bytes_per_token("fp32") == 262_144


def test_gemma_head_dim_from_config_not_hidden_over_heads():
    spec = load_model("gemma-7b")
    assert spec.head_dim == 256 and spec.hidden_size // spec.num_heads == 192
    assert spec.kv_bytes_per_token("bf16") == 2 * 28 * 16 * 256 * 2


def test_sliding_window_caps_cache():
    mistral = load_model("mistral-7b-v0.1")
    per_tok = mistral.kv_bytes_per_token("bf16")
    assert mistral.kv_cache_bytes(1000) == 1000 * per_tok
    assert mistral.kv_cache_bytes(32768) == 4096 * per_tok
    gemma2 = load_model("gemma-2-9b")  # 21 of 42 layers slide over 4096 tokens
    per_layer = 2 * 8 * 256 * 2
    assert gemma2.kv_cache_bytes(8192) == (21 * 8192 + 21 * 4096) * per_layer


def test_non_embedding_and_head():
    spec = load_model("llama-3-8b")
    assert spec.params_embedding == spec.params_head == 128_256 * 4096
    assert spec.params_non_embedding == spec.params - 2 * 128_256 * 4096
    tied = load_model("llama-3.2-1b")
    assert tied.params_head == 0 and tied.params_non_embedding == tied.params - 128_256 * 2048


def test_bert_has_no_kv_cache():
    assert load_model("bert-base-uncased").kv_bytes_per_token() == 0


# ---- independent implementation: Hugging Face transformers on the meta device -----------------


def _variants() -> list[tuple[str, dict]]:
    """Every preset, plus configs that exercise the corner cases each family allows."""
    out = []
    for name in list_presets():
        cfg = json.loads((data_dir() / "models" / name / "config.json").read_text())
        if cfg["model_type"] in families.known():
            continue  # tests/test_specs_families.py checks these per layer type and MoE layer
        out.append((name, cfg))
    tiny = {
        "hidden_size": 96,
        "intermediate_size": 200,
        "num_attention_heads": 6,
        "num_key_value_heads": 2,
        "num_hidden_layers": 2,
        "vocab_size": 1000,
        "max_position_embeddings": 256,
    }
    out += [
        (
            "llama-biased-untied",
            {
                "model_type": "llama",
                **tiny,
                "attention_bias": True,
                "mlp_bias": True,
                "tie_word_embeddings": False,
            },
        ),
        (
            "llama-tied-odd-head-dim",
            {"model_type": "llama", **tiny, "head_dim": 40, "tie_word_embeddings": True},
        ),
        (
            "mistral-tied",
            {"model_type": "mistral", **tiny, "tie_word_embeddings": True, "sliding_window": 64},
        ),
        (
            "mixtral-4-of-3",
            {"model_type": "mixtral", **tiny, "num_local_experts": 4, "num_experts_per_tok": 3},
        ),
        ("qwen2-tied", {"model_type": "qwen2", **tiny, "tie_word_embeddings": True}),
        ("gemma-odd-head", {"model_type": "gemma", **tiny, "head_dim": 48}),
        (
            "gemma2-untied",
            {
                "model_type": "gemma2",
                **tiny,
                "head_dim": 32,
                "tie_word_embeddings": False,
                "sliding_window": 32,
            },
        ),
        ("phi3-gqa", {"model_type": "phi3", **tiny, "pad_token_id": 0}),
        (
            "gpt2-n-inner",
            {
                "model_type": "gpt2",
                "n_embd": 96,
                "n_head": 4,
                "n_layer": 3,
                "n_inner": 300,
                "n_positions": 128,
                "vocab_size": 1000,
            },
        ),
        (
            "gpt2-untied",
            {
                "model_type": "gpt2",
                "n_embd": 64,
                "n_head": 4,
                "n_layer": 2,
                "n_positions": 64,
                "vocab_size": 500,
                "tie_word_embeddings": False,
            },
        ),
        (
            "neox-no-bias",
            {
                "model_type": "gpt_neox",
                "hidden_size": 96,
                "num_attention_heads": 4,
                "num_hidden_layers": 2,
                "intermediate_size": 256,
                "vocab_size": 1000,
                "max_position_embeddings": 128,
                "attention_bias": False,
            },
        ),
        (
            "neox-tied",
            {
                "model_type": "gpt_neox",
                "hidden_size": 96,
                "num_attention_heads": 4,
                "num_hidden_layers": 2,
                "intermediate_size": 256,
                "vocab_size": 1000,
                "max_position_embeddings": 128,
                "tie_word_embeddings": True,
            },
        ),
        (
            "bert-3-types",
            {
                "model_type": "bert",
                "hidden_size": 96,
                "num_attention_heads": 4,
                "num_hidden_layers": 2,
                "intermediate_size": 256,
                "vocab_size": 1000,
                "max_position_embeddings": 128,
                "type_vocab_size": 3,
            },
        ),
    ]
    return out


@pytest.mark.parametrize("name,cfg", _variants(), ids=[n for n, _ in _variants()])
def test_params_match_transformers(name, cfg):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    clean = {k: v for k, v in cfg.items() if not k.startswith("_")}
    for tok in ("bos_token_id", "eos_token_id", "pad_token_id"):
        ids = clean.get(tok)
        if isinstance(ids, int) and ids >= clean.get("vocab_size", 0):
            clean[tok] = 0  # the tiny variants have small vocabularies; ids do not change the count
        elif isinstance(ids, list):  # Llama 3.1 lists several eos ids; they do not change the count
            clean[tok] = [i if i < clean.get("vocab_size", 0) else 0 for i in ids]
    hf_cfg = transformers.AutoConfig.for_model(**clean)
    auto = transformers.AutoModelForCausalLM
    if cfg["model_type"] == "bert":  # the config's architectures decide the head (MLM head vs pooler)
        mlm = any(a.endswith("ForMaskedLM") for a in cfg.get("architectures", []))
        auto = transformers.AutoModelForMaskedLM if mlm else transformers.AutoModel
    with torch.device("meta"):
        model = auto.from_config(hf_cfg)
    reference = sum(p.numel() for p in model.parameters())  # parameters() yields tied weights once
    spec = spec_from_config(cfg, name=name)
    assert spec.params == reference
    if cfg["model_type"] != "bert":
        emb = model.get_input_embeddings().weight.numel()
        assert (
            spec.params_embedding
            - (spec.max_position_embeddings * spec.hidden_size if spec.learned_positions else 0)
            == emb
        )
        if spec.num_experts:  # active = total minus the idle experts' MLPs
            idle = (spec.num_experts - spec.experts_per_token) * spec.num_layers * spec.expert_params
            assert spec.params_active == reference - idle
