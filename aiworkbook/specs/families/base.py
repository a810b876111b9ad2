"""The ten base families (llama ... bert): one parser each, registered in specs/families like the rest.

Their layers are all alike, so each returns a plain ModelSpec (one layer times the layer count, the
KV groups derived from its fields). The readers keep these families' own error wording ("a positive
integer"), which scripts and tests/test_specs_errors.py read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.specs.families.blocks import Config
from aiworkbook.specs.mechanisms import NO_SDPA, Mechanisms, rotary_fraction
from aiworkbook.specs.model import ModelSpec

# Family defaults where the config may omit a key (values of transformers' config classes).
TIE_DEFAULT = {
    "llama": False,
    "mistral": False,
    "mixtral": False,
    "qwen2": False,
    "gemma": True,
    "gemma2": True,
    "phi3": False,
    "gpt2": True,
    "gpt_neox": False,
    "bert": True,
}


def _get(
    cfg: dict[str, Any],
    keys: tuple[str, ...],
    source: str,
    *,
    default: Any = SpecError,
    positive: bool = True,
) -> Any:
    for k in keys:
        if k in cfg and cfg[k] is not None:
            v = cfg[k]
            if positive:
                if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                    raise SpecError(k, v, Msg("allowed.positive_int"), source=source)
            return v
    if default is SpecError:
        raise SpecError(keys[0], None, Msg("allowed.positive_int_missing"), source=source)
    return default


def _flag(cfg: dict[str, Any], key: str, default: bool, source: str) -> bool:
    """A JSON boolean, strictly: the string "false" is refused, never read as true (null: the default)."""
    v = cfg.get(key)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise SpecError(key, v, Msg("allowed.json_bool"), source=source)
    return v


def _common(cfg: dict[str, Any], mt: str, name: str, source: str) -> dict[str, Any]:
    """The fields every base family has, checked in the order the errors have always come in."""
    L = _get(cfg, ("num_hidden_layers", "n_layer"), source)
    h = _get(cfg, ("hidden_size", "n_embd"), source)
    a = _get(cfg, ("num_attention_heads", "n_head"), source)
    k = _get(cfg, ("num_key_value_heads",), source, default=a)
    V = _get(cfg, ("vocab_size",), source)
    if a % k:
        raise SpecError("num_key_value_heads", k, Msg("allowed.divisor_heads", a=a), source=source)
    head_dim = cfg.get("head_dim")
    if head_dim is None:
        if h % a:
            raise SpecError(
                "head_dim",
                None,
                Msg("allowed.head_dim_explicit", h=h, a=a),
                source=source,
            )
        head_dim = h // a
    elif isinstance(head_dim, bool) or not isinstance(head_dim, int) or head_dim <= 0:
        raise SpecError("head_dim", head_dim, Msg("allowed.positive_int"), source=source)
    return dict(
        name=name or cfg.get("_name_or_path") or mt,
        model_type=mt,
        num_layers=L,
        hidden_size=h,
        num_heads=a,
        num_kv_heads=k,
        head_dim=head_dim,
        vocab_size=V,
        tie_word_embeddings=_flag(cfg, "tie_word_embeddings", TIE_DEFAULT[mt], source),
        source=source,
    )


# GPT-2-era blocks: LayerNorm with bias, a plain (up, down) MLP with bias; GPT-2 and BERT add biased
# attention and a learned position table
_LAYERNORM_MLP: dict[str, Any] = dict(mlp_bias=True, norm="layernorm", gated_mlp=False)
_ABSOLUTE_LAYERNORM: dict[str, Any] = dict(
    qkv_bias=True, o_bias=True, learned_positions=True, **_LAYERNORM_MLP
)

# What each forward keeps (transformers 5: models/<family>/modeling_<family>.py; docs/sizing.md).
# Llama's eager_attention_forward: softmax(dtype=float32) then .to(query.dtype), RoPE on q and k.
LLAMA_LIKE = Mechanisms(softmax_fp32=True, rope=True)
# GPT-2: one Conv1D c_attn, gelu_new composed in Python, softmax in the scores' dtype, dropout 0.1
GPT2 = Mechanisms(fused_qkv=True, activation="gelu_new", dropout_default=0.1, positional_mask=True)
# BERT: separate q/k/v, fused GELU, softmax in the scores' dtype, dropout 0.1
BERT = Mechanisms(activation="gelu", dropout_default=0.1)
# GPT-NeoX: one query_key_value, partial rotary joined back with torch.cat, Llama's fp32 eager softmax
GPT_NEOX = Mechanisms(softmax_fp32=True, rope=True, fused_qkv=True, activation="gelu", rope_concat=True)


def gpt2(c: Config, mt: str, name: str) -> ModelSpec:
    """GPT-2: multi-head attention only (its attention reads no num_key_value_heads)."""
    cfg, source = c.cfg, c.source
    common = _common(cfg, mt, name, source)
    common["num_kv_heads"] = common["num_heads"]
    n_inner = cfg.get("n_inner")
    return ModelSpec(
        **common,
        mechanisms=GPT2,
        intermediate_size=_get({"n_inner": n_inner}, ("n_inner",), source)
        if n_inner is not None
        else 4 * common["hidden_size"],
        max_position_embeddings=_get(cfg, ("n_positions", "max_position_embeddings"), source),
        **_ABSOLUTE_LAYERNORM,
    )


def bert(c: Config, mt: str, name: str) -> ModelSpec:
    """BERT: multi-head attention only (its attention reads no num_key_value_heads)."""
    cfg, source = c.cfg, c.source
    common = _common(cfg, mt, name, source)
    common["num_kv_heads"] = common["num_heads"]
    return ModelSpec(
        **{**common, "tie_word_embeddings": True},
        intermediate_size=_get(cfg, ("intermediate_size",), source),
        max_position_embeddings=_get(cfg, ("max_position_embeddings",), source),
        **_ABSOLUTE_LAYERNORM,
        type_vocab_size=_get(cfg, ("type_vocab_size",), source, default=2),
        is_decoder=False,
        pooler=_flag(cfg, "add_pooling_layer", True, source),
        mechanisms=BERT,
    )


def gpt_neox(c: Config, mt: str, name: str) -> ModelSpec:
    """GPT-NeoX: multi-head attention only (its attention reads no num_key_value_heads), rotary on
    rotary_pct of each head (0.25 by default), attention and MLP in parallel by default."""
    cfg, source = c.cfg, c.source
    common = _common(cfg, mt, name, source)
    common["num_kv_heads"] = common["num_heads"]
    bias = _flag(cfg, "attention_bias", True, source)
    mech = replace(
        GPT_NEOX,
        rotary_fraction=rotary_fraction(cfg, 0.25, source),
        parallel_norms=_flag(cfg, "use_parallel_residual", True, source),
    )
    return ModelSpec(
        **common,
        intermediate_size=_get(cfg, ("intermediate_size",), source),
        max_position_embeddings=_get(cfg, ("max_position_embeddings",), source),
        qkv_bias=bias,
        o_bias=bias,
        **_LAYERNORM_MLP,
        mechanisms=mech,
    )


def _decoder(
    extra: Callable[[dict[str, Any], str, int, int | None], dict[str, Any]],
) -> Callable[[Config, str, str], ModelSpec]:
    """A parser for a gated-MLP decoder: the common fields, intermediate size, positions (default
    4096) and the sliding window checked, then `extra(cfg, source, layers, window)`'s own fields."""

    def parse(c: Config, mt: str, name: str) -> ModelSpec:
        cfg, source = c.cfg, c.source
        common = _common(cfg, mt, name, source)
        kw: dict[str, Any] = dict(
            intermediate_size=_get(cfg, ("intermediate_size",), source),
            max_position_embeddings=_get(cfg, ("max_position_embeddings",), source, default=4096),
        )
        window = cfg.get("sliding_window")
        if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window <= 0):
            raise SpecError("sliding_window", window, Msg("allowed.positive_int_or_null"), source=source)
        kw.update(extra(cfg, source, common["num_layers"], window))
        return ModelSpec(**common, **{"mechanisms": LLAMA_LIKE, **kw})

    return parse


def _llama(cfg: dict[str, Any], source: str, L: int, window: int | None) -> dict[str, Any]:
    return dict(
        qkv_bias=_flag(cfg, "attention_bias", False, source),
        o_bias=_flag(cfg, "attention_bias", False, source),
        mlp_bias=_flag(cfg, "mlp_bias", False, source),
    )


def _every_layer_slides(cfg: dict[str, Any], source: str, L: int, window: int | None) -> dict[str, Any]:
    """mistral, mixtral and phi3: every layer keeps the window when the config gives one."""
    return dict(sliding_window=window, sliding_window_layers=L) if window else {}


def _phi3(cfg: dict[str, Any], source: str, L: int, window: int | None) -> dict[str, Any]:
    """Phi-3: one qkv_proj (and one gate_up_proj), RoPE on a slice joined back with torch.cat (the whole
    head by default), Llama's attention otherwise."""
    fraction = rotary_fraction(cfg, 1.0, source)
    mech = Mechanisms(
        softmax_fp32=True, rope=True, fused_qkv=True, rope_concat=True, rotary_fraction=fraction
    )
    return dict(mechanisms=mech, **_every_layer_slides(cfg, source, L, window))


def _mixtral(cfg: dict[str, Any], source: str, L: int, window: int | None) -> dict[str, Any]:
    E = _get(cfg, ("num_local_experts",), source)
    top = _get(cfg, ("num_experts_per_tok",), source)
    if top > E:
        raise SpecError("num_experts_per_tok", top, f"1..num_local_experts ({E})", source=source)
    mech = Mechanisms(softmax_fp32=True, rope=True, router=True, experts_grouped_mm=True)
    return dict(
        num_experts=E, experts_per_token=top, mechanisms=mech, **_every_layer_slides(cfg, source, L, window)
    )


def _qwen2(cfg: dict[str, Any], source: str, L: int, window: int | None) -> dict[str, Any]:
    kw: dict[str, Any] = dict(qkv_bias=True)
    if cfg.get("use_sliding_window") and window:
        # HF: layer i slides when i >= max_window_layers, so a value >= L means no layer slides
        full = cfg.get("max_window_layers", L)
        if not isinstance(full, int) or isinstance(full, bool) or full < 0:
            raise SpecError("max_window_layers", full, Msg("allowed.int_min", low=0), source=source)
        kw.update(sliding_window=window, sliding_window_layers=max(0, L - full))
    return kw


def _gemma(cfg: dict[str, Any], source: str, L: int, window: int | None) -> dict[str, Any]:
    # Gemma's RMSNorm: x.float() * (1 + weight), cast back after
    return dict(mechanisms=Mechanisms(softmax_fp32=True, rope=True, activation="gelu", norm_fp32_scale=True))


def _gemma2(cfg: dict[str, Any], source: str, L: int, window: int | None) -> dict[str, Any]:
    kw: dict[str, Any] = dict(
        norms_per_layer=4,
        mechanisms=Mechanisms(
            softmax_fp32=True,
            rope=True,
            activation="gelu",
            norm_fp32_scale=True,
            post_norms=2,  # post_attention_layernorm, post_feedforward_layernorm -> residual add
            attn_softcap=cfg.get("attn_logit_softcapping", 50.0) is not None,
            final_softcap=cfg.get("final_logit_softcapping", 30.0) is not None,
            attentions=NO_SDPA,  # Gemma2PreTrainedModel._supports_sdpa = False (soft-capping)
        ),
    )
    if window:  # even layers slide, odd layers attend globally
        kw.update(sliding_window=window, sliding_window_layers=(L + 1) // 2)
    return kw


# model_type -> parser, in the order the families are listed (`aiworkbook models`, error messages)
PARSERS: dict[str, Callable[[Config, str, str], ModelSpec]] = {
    "llama": _decoder(_llama),
    "mistral": _decoder(_every_layer_slides),
    "mixtral": _decoder(_mixtral),
    "qwen2": _decoder(_qwen2),
    "gemma": _decoder(_gemma),
    "gemma2": _decoder(_gemma2),
    "phi3": _decoder(_phi3),
    "gpt2": gpt2,
    "gpt_neox": gpt_neox,
    "bert": bert,
}
