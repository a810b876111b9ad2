"""DeepSeek V2 / V3: multi-head latent attention (MLA) and a dense-then-MoE stack.

MLA caches per token one latent of `kv_lora_rank` plus the shared RoPE key of `qk_rope_head_dim`,
not `num_key_value_heads` full heads, so its KV group has one "head" that tensor parallelism does
not split. V3's multi-token-prediction layer(s) (`num_nextn_predict_layers`) are not part of the
transformers model: they are counted apart (one MoE decoder layer, two norms, the 2h x h
projection and the shared head's norm; the embedding and head are the main model's).
"""

from __future__ import annotations

from aiworkbook.specs.families.blocks import Config, Layer, assemble, experts, mlp, read_common
from aiworkbook.specs.families.moe import _experts, _moe_layer
from aiworkbook.specs.families.spec import FamilySpec, KVGroup
from aiworkbook.specs.mechanisms import Mechanisms


def _mla(c: Config, h: int, a: int) -> tuple[int, int]:
    q_lora = c.integer("q_lora_rank", default=None)
    kv_lora = c.integer("kv_lora_rank")
    rope = c.integer("qk_rope_head_dim")
    nope = c.integer("qk_nope_head_dim")
    v = c.integer("v_head_dim")
    bias = c.flag("attention_bias", False)
    qk = nope + rope
    if q_lora is None:
        q, q_lin = h * a * qk, h * a * qk
    else:
        q_lin = h * q_lora + q_lora * a * qk
        q = q_lin + q_lora + (q_lora if bias else 0)  # q_a_layernorm, q_a_proj bias
    kv_lin = h * (kv_lora + rope) + kv_lora * a * (nope + v)
    kv = kv_lin + kv_lora + ((kv_lora + rope) if bias else 0)
    o_lin = a * v * h
    return q + kv + o_lin + (h if bias else 0), q_lin + kv_lin + o_lin


def deepseek_v2(c: Config, mt: str, name: str) -> FamilySpec:
    """DeepSeek V2: complex RoPE, a softmax router (group-limited when topk_method says so)."""
    return _deepseek(c, mt, name, v3=False)


def deepseek_v3(c: Config, mt: str, name: str) -> FamilySpec:
    """DeepSeek V3: cos/sin RoPE, a sigmoid group-limited router, three dense layers by default."""
    return _deepseek(c, mt, name, v3=True)


def _deepseek(c: Config, mt: str, name: str, v3: bool) -> FamilySpec:
    common, L, h, a, k, d, V = read_common(c, mt, name=name, tie_default=False, head_dim_default=64)
    E, top = _experts(c, "n_routed_experts")
    Im = c.integer("moe_intermediate_size")
    I = c.integer("intermediate_size")
    first_dense = c.integer("first_k_dense_replace", default=3 if v3 else 0, minimum=0)
    # transformers' defaults when the config is silent: DeepseekV3Config 1 shared expert, V2's 2
    shared_i = Im * c.integer("n_shared_experts", default=1 if v3 else 2, minimum=0)
    shared = mlp(h, shared_i) if shared_i else (0, 0)
    # DeepseekV3TopkRouter: sigmoid scores, group-limited top-k (n_group groups, topk_group kept, each
    # group scored by its top two), renormalised when norm_topk_prob; DeepseekV2TopkRouter: softmax,
    # group-limited (each group scored by its max) when topk_method is group_limited_greedy
    limited = v3 or c.cfg.get("topk_method", "greedy") == "group_limited_greedy"
    groups = c.integer("n_group", default=8, minimum=1) if limited else 0
    topk_groups = c.integer("topk_group", default=4 if v3 else 3, minimum=1) if groups else 0
    renorm = v3 and c.flag("norm_topk_prob", True)
    attn = _mla(c, h, a)
    width = c.integer("kv_lora_rank") + c.integer("qk_rope_head_dim")
    kv = KVGroup("mla", 1, 1, width)
    layers = []
    for i in range(L):
        if i >= first_dense:
            layers.append(_moe_layer(attn, 2 * h, E, top, mlp(h, Im), E * h, shared, kv))
        else:
            f = mlp(h, I)
            layers.append(Layer(attn[0] + 2 * h + f[0], attn[0] + 2 * h + f[0], attn[1] + f[1], kv))
    mtp_layers = c.integer("num_nextn_predict_layers", default=0, minimum=0)
    moe_layer = _moe_layer(attn, 2 * h, E, top, mlp(h, Im), E * h, shared, kv).params
    mtp = mtp_layers * (moe_layer + 2 * h + 2 * h * h + h)
    spec = assemble(
        common,
        layers,
        family=mt,
        **experts(Im, E, top),
        num_kv_heads=a,
        head_dim=c.integer("v_head_dim"),
        mtp_params=mtp,
        # MLA with a rotary part, Llama's fp32 eager softmax, a router and shared experts
        mechanisms=Mechanisms(
            softmax_fp32=True,
            rope=True,
            router=True,
            shared_expert=bool(shared[0]),
            shared_intermediate=shared_i,  # DeepseekV3MoE: one MLP of moe_intermediate_size x n_shared
            experts_grouped_mm=True,  # DeepseekV3NaiveMoe: @use_experts_implementation
            mla_q_lora=c.integer("q_lora_rank", default=None) or 0,
            mla_kv_lora=c.integer("kv_lora_rank"),
            mla_rope=c.integer("qk_rope_head_dim"),
            mla_nope=c.integer("qk_nope_head_dim"),
            rope_complex=not v3,  # DeepseekV2: apply_rotary_emb with freqs_cis; V3: cos and sin
            router_fp32_input=True,  # F.linear(hidden_states.type(torch.float32), ...)
            router_groups=groups,
            router_group_ids=(2 if v3 else 1) if groups else 0,
            router_topk_groups=topk_groups,
            router_renorm=renorm,
            dense_layers=min(first_dense, L),
            dense_intermediate=I,
        ),
    )
    return spec
