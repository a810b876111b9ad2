"""Mixture-of-experts decoders: qwen2_moe, qwen3_moe, phimoe, gpt_oss, llama4_text.

A token touches the router, its top-k routed experts and any shared expert; the idle experts are
what `params_active` leaves out. Which layers are sparse is the config's to say (Qwen's
`decoder_sparse_step` / `mlp_only_layers`, Llama 4's `moe_layers` / `interleave_moe_layer_step`).
"""

from __future__ import annotations

from aiworkbook.errors import SpecError
from aiworkbook.specs.families.blocks import (
    Config,
    Layer,
    assemble,
    attention,
    biases,
    experts,
    kv_kind,
    mlp,
    read_common,
    std_kv,
    window_of,
)
from aiworkbook.specs.families.dense import _types_qwen
from aiworkbook.specs.families.spec import FamilySpec, KVGroup
from aiworkbook.specs.mechanisms import NO_SDPA, Mechanisms


def _experts(c: Config, *keys: str) -> tuple[int, int]:
    E = c.integer(*keys)
    top = c.integer("num_experts_per_tok")
    if top > E:
        raise SpecError("num_experts_per_tok", top, f"1..{keys[0]} ({E})", source=c.source)
    return E, top


def _moe_layer(
    attn: tuple[int, int],
    norms: int,
    E: int,
    top: int,
    expert: tuple[int, int],
    router: int,
    shared: tuple[int, int],
    kv: KVGroup,
) -> Layer:
    """attn/expert/shared: (params, matrix params); router: params."""
    total = attn[0] + norms + E * expert[0] + router + shared[0]
    active = attn[0] + norms + top * expert[0] + router + shared[0]
    return Layer(total, active, attn[1] + E * expert[1] + shared[1], kv, experts=E * expert[1])


def qwen_moe(c: Config, mt: str, name: str) -> FamilySpec:
    """qwen2_moe (qkv bias, a gated shared expert) and qwen3_moe (q/k norms, no shared expert)."""
    q3 = mt == "qwen3_moe"
    common, L, h, a, k, d, V = read_common(c, mt, name=name, tie_default=False)
    E, top = _experts(c, "num_experts", "num_local_experts")
    Im = c.integer("moe_intermediate_size")
    I = c.integer("intermediate_size")
    step = c.integer("decoder_sparse_step", default=1)
    dense_only = set(c.int_list("mlp_only_layers") or [])
    bias = c.flag("attention_bias", False) if q3 else c.flag("qkv_bias", True)
    attn = attention(
        h, a, k, d, qkv_bias=bias, o_bias=q3 and bias, q_norm=d if q3 else 0, k_norm=d if q3 else 0
    )
    shared, shared_i = (0, 0), 0
    if not q3 and c.integer("shared_expert_intermediate_size", default=0, minimum=0):
        shared_i = c.integer("shared_expert_intermediate_size")
        s = mlp(h, shared_i)
        shared = (s[0] + h, s[1])  # + shared_expert_gate (1 x h)
    types, w = _types_qwen(c, L), window_of(c)
    layers = []
    for i in range(L):
        kv = std_kv(kv_kind(types[i]), k, d, w)
        if i not in dense_only and (i + 1) % step == 0:
            layers.append(_moe_layer(attn, 2 * h, E, top, mlp(h, Im), E * h, shared, kv))
        else:
            f = mlp(h, I)
            layers.append(Layer(attn[0] + 2 * h + f[0], attn[0] + 2 * h + f[0], attn[1] + f[1], kv))
    mech = Mechanisms(
        softmax_fp32=True,
        rope=True,
        qk_norm="head" if q3 else "",
        router=True,
        shared_expert=bool(shared[0]),
        shared_intermediate=shared_i,  # sigmoid(shared_expert_gate(x)) * shared_expert(x)
        shared_gate=bool(shared_i),
        experts_grouped_mm=True,
    )
    return assemble(common, layers, family=mt, **experts(Im, E, top), qkv_bias=bias, mechanisms=mech)


def phimoe(c: Config, mt: str, name: str) -> FamilySpec:
    common, L, h, a, k, d, V = read_common(c, mt, name=name, tie_default=False)
    E, top = _experts(c, "num_local_experts")
    I = c.integer("intermediate_size")
    bias = c.flag("attention_bias", False)
    attn = attention(h, a, k, d, qkv_bias=bias, o_bias=bias)
    w = window_of(c)
    kv = std_kv("sliding" if w else "full", k, d, w)
    layers = [_moe_layer(attn, 4 * h, E, top, mlp(h, I), E * h, (0, 0), kv) for _ in range(L)]
    head = 0 if common["tie_word_embeddings"] else V * h + (V if c.flag("lm_head_bias", False) else 0)
    return assemble(
        common,
        layers,
        family=mt,
        head=head,
        final=2 * h,
        **experts(I, E, top),
        **biases(bias),
        norm="layernorm",
        mechanisms=Mechanisms(softmax_fp32=True, rope=True, router=True, experts_grouped_mm=True),
    )


def gpt_oss(c: Config, mt: str, name: str) -> FamilySpec:
    """Attention sinks, biased q/k/v/o, biased router and experts, sliding and full layers alternating."""
    common, L, h, a, k, d, V = read_common(c, mt, name=name, tie_default=False, head_dim_default=64)
    E, top = _experts(c, "num_local_experts", "num_experts")
    I = c.integer("intermediate_size")
    bias = c.flag("attention_bias", True)
    attn = attention(h, a, k, d, qkv_bias=bias, o_bias=bias, sinks=True)
    w = c.integer("sliding_window", default=128)
    types = c.layer_types(L) or ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(L)]
    expert = mlp(h, I, bias=True)
    layers = [
        _moe_layer(attn, 2 * h, E, top, expert, E * h + E, (0, 0), std_kv(kv_kind(t), k, d, w)) for t in types
    ]
    # eager_attention_forward with sinks: softmax in the scores' dtype; GptOssPreTrainedModel offers no
    # sdpa (_supports_sdpa = False): transformers runs it eagerly unless flash attention is asked for
    mech = Mechanisms(
        rope=True,
        rope_half_tables=True,  # GptOssRotaryEmbedding: emb = freqs, d/2 wide
        router=True,
        router_topk_first=True,  # GptOssTopKRouter: topk(logits), then softmax over the k
        attention_sinks=True,
        norm_fp32_scale=True,  # GptOssRMSNorm: (weight * fp32 normalised).to(input_dtype)
        activation="clamped_swiglu",  # GptOssExperts._apply_gate
        experts_grouped_mm=True,  # @use_experts_implementation: grouped_mm by default
        attentions=NO_SDPA,
    )
    return assemble(
        common, layers, family=mt, **experts(I, E, top), **biases(bias), mlp_bias=True, mechanisms=mech
    )


def llama4_text(c: Config, mt: str, name: str) -> FamilySpec:
    """Interleaved MoE layers with a shared expert; chunked attention on RoPE layers, NoPE layers global."""
    common, L, h, a, k, d, V = read_common(c, mt, name=name, tie_default=False, head_dim_default=128)
    E, top = _experts(c, "num_local_experts")
    I = c.integer("intermediate_size")
    Imlp = c.integer("intermediate_size_mlp", default=16384)
    bias = c.flag("attention_bias", False)
    attn = attention(h, a, k, d, qkv_bias=bias, o_bias=bias)  # its q/k L2 norm has no weights
    step = c.integer("interleave_moe_layer_step", default=1)
    moe = set(c.int_list("moe_layers") or range(step - 1, L, step))
    rope = c.int_list("no_rope_layers", L) or [
        int((i + 1) % c.integer("no_rope_layer_interval", default=4) != 0) for i in range(L)
    ]
    chunk = c.cfg.get("attention_chunk_size", 8192)
    types = c.layer_types(L) or [
        "chunked_attention" if r and chunk is not None else "full_attention" for r in rope
    ]
    layers = []
    for i in range(L):
        kv = std_kv(kv_kind(types[i]), k, d, chunk)
        if i in moe:
            layers.append(_moe_layer(attn, 2 * h, E, top, mlp(h, I), E * h, mlp(h, I), kv))
        else:
            f = mlp(h, Imlp)
            layers.append(Layer(attn[0] + 2 * h + f[0], attn[0] + 2 * h + f[0], attn[1] + f[1], kv))
    # softmax in the scores' dtype; a weightless L2 norm on q and k (use_qk_norm) of the RoPE layers
    mech = Mechanisms(
        rope=True,
        rope_complex=True,  # apply_rotary_emb: q, k viewed as complex, times freqs_cis
        no_rope_layers=rope.count(0),
        qk_norm="l2" if c.flag("use_qk_norm", True) else "",
        qk_norm_rope_only=True,  # Llama4TextAttention: qk_norm when use_qk_norm and use_rope
        nope_temperature=c.flag("attn_temperature_tuning", True),
        router=True,
        experts_dense=True,  # Llama4TextMoe: every expert, every token, scaled by sigmoid(top-k logits)
        shared_expert=True,
        shared_intermediate=I,  # Llama4TextMLP(config): a gated MLP of intermediate_size
        # the layers not in moe_layers (interleave_moe_layer_step > 1) run Llama4TextMLP of
        # intermediate_size_mlp instead
        dense_layers=L - len(moe & set(range(L))),
        dense_intermediate=Imlp if len(moe & set(range(L))) < L else 0,
        attentions=("eager", "sdpa"),  # Llama4PreTrainedModel._supports_flash_attn = False
    )
    return assemble(common, layers, family=mt, **experts(I, E, top), mechanisms=mech)
