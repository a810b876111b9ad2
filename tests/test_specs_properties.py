"""Property-based checks: random configs of every family count the same as transformers does."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aiworkbook.specs import spec_from_config

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


@st.composite
def configs(draw):
    family = draw(
        st.sampled_from(
            ["llama", "mistral", "mixtral", "qwen2", "gemma", "gemma2", "phi3", "gpt2", "gpt_neox", "bert"]
        )
    )
    kv = draw(st.integers(1, 4))
    heads = kv * draw(st.integers(1, 4))
    head_dim = 2 * draw(st.integers(2, 12))  # rotary embeddings need an even head_dim
    # transformers insists on hidden % heads == 0 even where head_dim is explicit; head_dim may still differ
    hidden = heads * (
        head_dim if family in ("gpt2", "gpt_neox", "bert", "phi3") else draw(st.integers(1, 24))
    )
    cfg = {
        "model_type": family,
        "vocab_size": draw(st.integers(16, 300)),
        "num_hidden_layers": draw(st.integers(1, 3)),
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "intermediate_size": draw(st.integers(4, 128)),
        "max_position_embeddings": draw(st.integers(8, 64)),
        "pad_token_id": 0,
        "bos_token_id": 0,
        "eos_token_id": 0,
    }
    if family in ("llama", "mistral", "mixtral", "qwen2", "gemma", "gemma2"):
        cfg["num_key_value_heads"] = kv
        cfg["head_dim"] = head_dim
    if family == "phi3":
        cfg["num_key_value_heads"] = kv
    if family in ("llama", "mistral", "mixtral", "qwen2", "gemma2", "gpt_neox", "gpt2"):
        cfg["tie_word_embeddings"] = draw(st.booleans())
    if family == "llama":
        cfg["attention_bias"] = draw(st.booleans())
        cfg["mlp_bias"] = draw(st.booleans())
    if family == "mixtral":
        cfg["num_local_experts"] = draw(st.integers(1, 4))
        cfg["num_experts_per_tok"] = draw(st.integers(1, cfg["num_local_experts"]))
    if family == "gpt_neox":
        cfg["attention_bias"] = draw(st.booleans())
    if family == "gpt2":
        cfg = {
            "model_type": "gpt2",
            "vocab_size": cfg["vocab_size"],
            "n_layer": cfg["num_hidden_layers"],
            "n_embd": hidden,
            "n_head": heads,
            "n_positions": cfg["max_position_embeddings"],
            "tie_word_embeddings": cfg["tie_word_embeddings"],
            "bos_token_id": 0,
            "eos_token_id": 0,
            "n_inner": draw(st.one_of(st.none(), st.integers(4, 128))),
        }
    if family == "bert":
        cfg["type_vocab_size"] = draw(st.integers(1, 3))
    return cfg


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(configs())
def test_random_configs_match_transformers(cfg):
    hf_cfg = transformers.AutoConfig.for_model(**cfg)
    auto = transformers.AutoModel if cfg["model_type"] == "bert" else transformers.AutoModelForCausalLM
    with torch.device("meta"):
        model = auto.from_config(hf_cfg)
    spec = spec_from_config(cfg)
    assert spec.params == sum(p.numel() for p in model.parameters())
    if spec.is_decoder:
        kv_heads = cfg.get("num_key_value_heads", spec.num_heads)
        assert spec.kv_bytes_per_token("bf16") == 2 * spec.num_layers * kv_heads * spec.head_dim * 2


@given(st.integers(1, 64), st.integers(1, 4096), st.integers(1, 8192))
def test_kv_cache_is_linear_below_the_window_and_flat_above(layers, window, tokens):
    cfg = {
        "model_type": "mistral",
        "num_hidden_layers": layers,
        "hidden_size": 64,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "intermediate_size": 128,
        "vocab_size": 100,
        "sliding_window": window,
    }
    spec = spec_from_config(cfg)
    assert spec.kv_cache_bytes(tokens) == min(tokens, window) * spec.kv_bytes_per_token()
