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


def deepseek(c: Config, mt: str, name: str) -> FamilySpec:
    common, L, h, a, k, d, V = read_common(c, mt, name=name, tie_default=False, head_dim_default=64)
    E, top = _experts(c, "n_routed_experts")
    Im = c.integer("moe_intermediate_size")
    I = c.integer("intermediate_size")
    first_dense = c.integer("first_k_dense_replace", default=3 if mt == "deepseek_v3" else 0, minimum=0)
    shared = (
        mlp(h, Im * c.integer("n_shared_experts", default=1, minimum=0))
        if c.cfg.get("n_shared_experts", 1)
        else (0, 0)
    )
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
        mechanisms=Mechanisms(softmax_fp32=True, rope=True, router=True, shared_expert=bool(shared[0])),
    )
    return spec
