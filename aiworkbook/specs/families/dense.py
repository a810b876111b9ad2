"""Dense decoders: qwen3, olmo2, granite, smollm3, starcoder2, phi (phi-2), gemma3_text.

Each follows its transformers implementation: q/k norms where the family has them (per head for
Qwen 3 and Gemma 3, over all heads for OLMo 2), LayerNorm with bias for StarCoder2 and Phi, and the
layer types (sliding, full) the config names or the family derives.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.specs.families.blocks import (
    Config,
    Layer,
    assemble,
    attention,
    biases,
    kv_kind,
    mlp,
    read_common,
    std_kv,
    window_of,
)
from aiworkbook.specs.families.spec import FamilySpec
from aiworkbook.specs.mechanisms import Mechanisms, rotary_fraction

# every family here keeps Llama's eager attention: fp32 softmax, RoPE on q and k
FP32_ROPE = Mechanisms(softmax_fp32=True, rope=True)


def _types_qwen(c: Config, L: int) -> list[str]:
    """Qwen: layer i slides when use_sliding_window and i >= max_window_layers."""
    given = c.layer_types(L)
    if given:
        return given
    w = window_of(c)
    if not (c.flag("use_sliding_window", False) and w):
        return ["full_attention"] * L
    first = c.integer("max_window_layers", default=28, minimum=0)
    return ["sliding_attention" if i >= first else "full_attention" for i in range(L)]


def _layers(
    c: Config,
    L: int,
    types: list[str],
    attn: tuple[int, int],
    ffn: tuple[int, int],
    k: int,
    d: int,
    window: int | None,
) -> list[Layer]:
    return [
        Layer(attn[0] + ffn[0], attn[0] + ffn[0], attn[1] + ffn[1], std_kv(kv_kind(t), k, d, window))
        for t in types[:L]
    ]


def qwen3(c: Config, mt: str, name: str) -> FamilySpec:
    read = read_common(c, mt, name=name, tie_default=False, head_dim_default=128)
    L, d = read[1], read[5]
    mech = replace(FP32_ROPE, qk_norm="head")
    return _qk_normed(c, mt, read, d, d, lambda: (_types_qwen(c, L), window_of(c)), mech)


def olmo2(c: Config, mt: str, name: str) -> FamilySpec:
    read = read_common(c, mt, name=name, tie_default=False)
    L, a, k, d = read[1], read[3], read[4], read[5]
    mech = replace(FP32_ROPE, qk_norm="all", norm_fp32_scale=True)  # (weight * x).to(dtype)
    return _qk_normed(c, mt, read, a * d, k * d, lambda: (["full_attention"] * L, None), mech)


def _qk_normed(
    c: Config,
    mt: str,
    read: tuple[Any, ...],
    q_norm: int,
    k_norm: int,
    kinds: Callable[[], tuple[list[str], int | None]],
    mech: Mechanisms,
) -> FamilySpec:
    """A dense decoder with norms on q and k (Qwen 3 per head, OLMo 2 over all heads); `read` is
    read_common's answer, `kinds()` the layer types and the window (read after the sizes)."""
    common, L, h, a, k, d, _ = read
    bias = c.flag("attention_bias", False)
    attn = attention(h, a, k, d, qkv_bias=bias, o_bias=bias, q_norm=q_norm, k_norm=k_norm)
    ffn = mlp(h, c.integer("intermediate_size"))
    types, window = kinds()
    layers = _layers(c, L, types, attn, (ffn[0] + 2 * h, ffn[1]), k, d, window)
    I = c.integer("intermediate_size")
    return assemble(common, layers, family=mt, intermediate_size=I, **biases(bias), mechanisms=mech)


def llama_like(c: Config, mt: str, name: str) -> FamilySpec:
    """granite (its multipliers scale activations, not parameters) and smollm3 (NoPE layers)."""
    common, L, h, a, k, d, V = read_common(c, mt, name=name, tie_default=mt == "smollm3")
    bias = c.flag("attention_bias", False)
    mbias = c.flag("mlp_bias", False)
    I = c.integer("intermediate_size")
    attn = attention(h, a, k, d, qkv_bias=bias, o_bias=bias)
    ffn = mlp(h, I, bias=mbias)
    types = c.layer_types(L) or ["full_attention"] * L
    nope = 0
    if mt == "smollm3":
        rope = c.int_list("no_rope_layers", L) or [
            int((i + 1) % c.integer("no_rope_layer_interval", default=4) != 0) for i in range(L)
        ]
        nope = rope.count(0)
        if not c.has("layer_types") and c.flag("use_sliding_window", False) and window_of(c):
            types = ["sliding_attention" if not r else "full_attention" for r in rope]
    mech = replace(FP32_ROPE, no_rope_layers=nope, multipliers=_scales(c))
    layers = _layers(c, L, types, attn, (ffn[0] + 2 * h, ffn[1]), k, d, window_of(c))
    return assemble(
        common, layers, family=mt, intermediate_size=I, **biases(bias), mlp_bias=mbias, mechanisms=mech
    )


#: the config keys whose constants scale the activations (Granite: the embeddings, each residual branch,
#: the attention scores in place of 1/sqrt(d), the logits divided); 1 scales nothing
MULTIPLIERS = ("embedding_multiplier", "residual_multiplier", "attention_multiplier", "logits_scaling")


def _scales(c: Config) -> bool:
    """Whether the config carries a multiplier other than 1 (a non-number is refused, named)."""
    scaled = False
    for key in MULTIPLIERS:
        v = c.cfg.get(key)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
            raise SpecError(key, v, Msg("allowed.positive"), source=c.source)
        scaled = scaled or v != 1
    return scaled


def starcoder2(c: Config, mt: str, name: str) -> FamilySpec:
    common, L, h, a, k, d, V = read_common(c, mt, name=name, tie_default=True)
    bias = c.flag("use_bias", True)
    I = c.integer("intermediate_size")
    attn = attention(h, a, k, d, qkv_bias=bias, o_bias=bias)
    ffn = mlp(h, I, gated=False, bias=bias)
    w = window_of(c)
    types = c.layer_types(L) or ["sliding_attention" if w else "full_attention"] * L
    layers = _layers(c, L, types, attn, (ffn[0] + 2 * 2 * h, ffn[1]), k, d, w)
    return assemble(
        common,
        layers,
        family=mt,
        final=2 * h,
        intermediate_size=I,
        **biases(bias),
        mlp_bias=bias,
        norm="layernorm",
        gated_mlp=False,
        mechanisms=replace(FP32_ROPE, activation="gelu"),  # gelu_pytorch_tanh: one op
    )


def phi(c: Config, mt: str, name: str) -> FamilySpec:
    """phi-1/1.5/2: parallel attention and MLP after one LayerNorm; lm_head has a bias."""
    common, L, h, a, k, d, V = read_common(c, mt, name=name, tie_default=False)
    I = c.integer("intermediate_size")
    qk_ln = 2 * 2 * d if c.flag("qk_layernorm", False) else 0
    attn = attention(h, a, k, d, qkv_bias=True, o_bias=True)
    ffn = mlp(h, I, gated=False, bias=True)
    layers = _layers(
        c, L, ["full_attention"] * L, (attn[0] + qk_ln, attn[1]), (ffn[0] + 2 * h, ffn[1]), k, d, None
    )
    if common["tie_word_embeddings"]:
        raise SpecError("tie_word_embeddings", True, Msg("allowed.phi_untied"), source=c.source)
    return assemble(
        common,
        layers,
        family=mt,
        head=V * h + V,
        final=2 * h,
        intermediate_size=I,
        qkv_bias=True,
        o_bias=True,
        mlp_bias=True,
        norm="layernorm",
        norms_per_layer=1,
        gated_mlp=False,
        # partial rotary; hidden_act gelu_new (Python composition), q/k LayerNorms when qk_layernorm
        mechanisms=replace(
            FP32_ROPE,
            activation=str(c.cfg.get("hidden_act") or "gelu_new"),
            qk_norm="head" if c.flag("qk_layernorm", False) else "",
            rope_concat=True,  # RoPE on partial_rotary_factor of each head, joined back with torch.cat
            rotary_fraction=rotary_fraction(c.cfg, 0.5, c.source),
        ),
    )


def gemma3_text(c: Config, mt: str, name: str) -> FamilySpec:
    """Gemma 3: four norms per layer, per-head q/k norms, `sliding_window_pattern` - 1 local layers per global."""
    common, L, h, a, k, d, V = read_common(c, mt, name=name, tie_default=True, head_dim_default=256)
    bias = c.flag("attention_bias", False)
    I = c.integer("intermediate_size")
    attn = attention(h, a, k, d, qkv_bias=bias, o_bias=bias, q_norm=d, k_norm=d)
    ffn = mlp(h, I)
    w = c.integer("sliding_window", default=4096)
    pattern = c.integer("sliding_window_pattern", "_sliding_window_pattern", default=6)
    types = c.layer_types(L) or [
        "sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(L)
    ]
    layers = _layers(c, L, types, attn, (ffn[0] + 4 * h, ffn[1]), k, d, w)
    # two rotary tables: the local layers' (rope_local_base_freq, unscaled) and the global layers'
    # (rope_theta with the config's rope_scaling; a linear factor f stretches it to f x the positions)
    scaling = c.cfg.get("rope_scaling") or {}
    linear = isinstance(scaling, dict) and scaling.get("rope_type", scaling.get("type")) == "linear"
    factor = scaling.get("factor", 1) if linear else 1
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or factor < 1:
        raise SpecError("rope_scaling", scaling, Msg("allowed.rope_linear"), source=c.source)
    P = common["max_position_embeddings"]
    return assemble(
        common,
        layers,
        family=mt,
        intermediate_size=I,
        **biases(bias),
        norms_per_layer=4,
        rope_table_positions=(P, int(P * factor)),
        mechanisms=replace(
            FP32_ROPE,
            qk_norm="head",
            activation="gelu",
            norm_fp32_scale=True,  # x.float() * (1 + weight), then back
            post_norms=2,  # post_attention_layernorm, post_feedforward_layernorm -> residual add
            attn_softcap=c.cfg.get("attn_logit_softcapping") is not None,
            final_softcap=c.cfg.get("final_logit_softcapping") is not None,
        ),
    )
