"""Kimi-VL-style wrapper (model_type kimi_vl): the language model read through its deepseek_v3 text_config
(exact against transformers on the meta device), the MoonViT tower and projector counted apart.

transformers has no kimi_vl class, so the vision count is checked against torch modules built to the
shapes of the published modeling_kimi_vl.py (restated in vLLM's models/moonvit.py and in
NVIDIA-NeMo/Automodel's components/models/kimivl/model.py)."""

from __future__ import annotations

import pytest

from aiworkbook.errors import SpecError
from aiworkbook.specs import spec_from_config

TEXT = {  # a tiny deepseek_v3 text model; model_type left out as in Kimi-VL's published config
    "hidden_size": 64,
    "intermediate_size": 96,
    "moe_intermediate_size": 32,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "vocab_size": 500,
    "max_position_embeddings": 256,
    "kv_lora_rank": 32,
    "q_lora_rank": None,
    "qk_rope_head_dim": 8,
    "qk_nope_head_dim": 16,
    "v_head_dim": 16,
    "n_routed_experts": 4,
    "n_shared_experts": 2,
    "num_experts_per_tok": 2,
    "first_k_dense_replace": 1,
    "n_group": 1,
    "topk_group": 1,
    "tie_word_embeddings": False,
}
VISION = {
    "model_type": "moonvit",
    "hidden_size": 48,
    "intermediate_size": 80,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "patch_size": 7,
    "init_pos_emb_height": 8,
    "init_pos_emb_width": 6,
    "merge_kernel_size": [2, 2],
}
KIMI = {"model_type": "kimi_vl", "text_config": TEXT, "vision_config": VISION}


def _moonvit_and_projector(v: dict, text_hidden: int) -> int:
    torch = pytest.importorskip("torch")
    nn = torch.nn
    h, i, p = v["hidden_size"], v["intermediate_size"], v["patch_size"]
    kh, kw = v["merge_kernel_size"]

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm0, self.norm1 = nn.LayerNorm(h), nn.LayerNorm(h)
            self.fc0, self.fc1 = nn.Linear(h, i), nn.Linear(i, h)
            self.wqkv, self.wo = nn.Linear(h, 3 * h), nn.Linear(h, h)

    with torch.device("meta"):
        parts = [
            nn.Conv2d(3, h, kernel_size=p, stride=p),
            nn.ParameterList(
                [nn.Parameter(torch.empty(v["init_pos_emb_height"], v["init_pos_emb_width"], h))]
            ),
            nn.ModuleList([Layer() for _ in range(v["num_hidden_layers"])]),
            nn.LayerNorm(h),  # encoder.final_layernorm
            nn.LayerNorm(h, eps=1e-5),  # projector.pre_norm
            nn.Linear(h * kh * kw, h * kh * kw),
            nn.Linear(h * kh * kw, text_hidden),
        ]
    return sum(q.numel() for m in parts for q in m.parameters())


def test_kimi_vl_text_exact_and_vision_apart():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    spec = spec_from_config(KIMI, name="kimi-vl-tiny")
    cfg = transformers.DeepseekV3Config(**{**TEXT, "pad_token_id": 0, "bos_token_id": 0, "eos_token_id": 0})
    with torch.device("meta"):
        lm = transformers.DeepseekV3ForCausalLM(cfg)
    assert spec.params == sum(q.numel() for q in lm.parameters())
    assert spec.vision_params == _moonvit_and_projector(VISION, TEXT["hidden_size"]) > 0
    assert spec.model_type == "kimi_vl" and spec.family.startswith("deepseek")
    (g,) = spec.kv_groups  # MLA: the latent plus the rope key, one unsplit "head"
    assert (g.kind, g.heads, g.width) == ("mla", 1, 32 + 8)


def test_kimi_vl_ties_by_its_text_config_and_defaults_moonvit():
    tied = spec_from_config({**KIMI, "text_config": {**TEXT, "tie_word_embeddings": True}})
    untied = spec_from_config(KIMI)
    assert untied.params - tied.params == TEXT["vocab_size"] * TEXT["hidden_size"]
    # an empty vision_config is MoonViT's published default shape (1152 wide, 27 layers, 64 x 64 table)
    default = spec_from_config({**KIMI, "vision_config": {}})
    want = {
        "hidden_size": 1152,
        "intermediate_size": 4304,
        "num_hidden_layers": 27,
        "patch_size": 14,
        "init_pos_emb_height": 64,
        "init_pos_emb_width": 64,
        "merge_kernel_size": [2, 2],
    }
    assert default.vision_params == _moonvit_and_projector(want, TEXT["hidden_size"])


def test_kimi_vl_bad_merge_kernel_is_a_spec_error():
    with pytest.raises(SpecError, match="merge_kernel_size"):
        spec_from_config({**KIMI, "vision_config": {**VISION, "merge_kernel_size": [2]}})


def test_kimi_vl_sizes_through_vllm_with_the_latent_cache():
    from aiworkbook.sizing.vllm import VllmSettings, kv_from_available

    spec = spec_from_config(KIMI)
    kv = kv_from_available(spec, VllmSettings(tensor_parallel_size=2), 1 << 20, 256, 256)
    assert kv["page_bytes"] == 16 * (32 + 8) * 2  # not split over the two ranks
