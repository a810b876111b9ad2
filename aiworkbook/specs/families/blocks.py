"""Building blocks every family parser shares: reading the config's fields, counting one block's
parameters the way transformers lays them out, and adding the layers up into a FamilySpec."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, overload

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.specs.families.spec import FamilySpec, KVGroup

MISSING = object()


class Config:
    """A config.json dict with typed, error-naming readers."""

    def __init__(self, cfg: dict[str, Any], source: str):
        self.cfg, self.source = cfg, source

    def has(self, key: str) -> bool:
        return self.cfg.get(key) is not None

    @overload
    def integer(self, *keys: str, minimum: int = 1) -> int: ...
    @overload
    def integer(self, *keys: str, default: int, minimum: int = 1) -> int: ...
    @overload
    def integer(self, *keys: str, default: int | None, minimum: int = 1) -> int | None: ...

    def integer(self, *keys: str, default: Any = MISSING, minimum: int = 1) -> Any:
        """The first of `keys` the config gives, an integer >= minimum; else `default` (none: an error)."""
        for k in keys:
            v = self.cfg.get(k)
            if v is not None:
                if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
                    raise SpecError(k, v, Msg("allowed.int_min", low=minimum), source=self.source)
                return v
        if default is MISSING:
            raise SpecError(keys[0], None, Msg("allowed.int_min_missing", low=minimum), source=self.source)
        return default

    def flag(self, key: str, default: bool) -> bool:
        v = self.cfg.get(key)
        if v is None:
            return default
        if not isinstance(v, bool):
            raise SpecError(key, v, Msg("allowed.true_false"), source=self.source)
        return v

    def int_list(self, key: str, length: int | None = None) -> list[int] | None:
        v = self.cfg.get(key)
        if v is None or v == []:
            return None  # transformers reads an empty list as "not given" too
        if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            raise SpecError(key, v, Msg("allowed.int_list_any"), source=self.source)
        if length is not None and len(v) != length:
            raise SpecError(key, f"{len(v)} entries", Msg("allowed.per_layer", n=length), source=self.source)
        return v

    def layer_types(self, n: int) -> list[str] | None:
        """The config's own `layer_types` when it has one (transformers >= 4.53 writes it)."""
        v = self.cfg.get("layer_types")
        if v is None:
            return None
        allowed = ("full_attention", "sliding_attention", "chunked_attention")
        if not isinstance(v, list) or len(v) != n or any(t not in allowed for t in v):
            raise SpecError(
                "layer_types",
                v,
                Msg("allowed.layer_types", n=n, allowed=", ".join(allowed)),
                source=self.source,
            )
        return v


def attention(
    h: int,
    a: int,
    k: int,
    d: int,
    *,
    qkv_bias: bool = False,
    o_bias: bool = False,
    q_norm: int = 0,
    k_norm: int = 0,
    sinks: bool = False,
) -> tuple[int, int]:
    """(params, matrix params) of grouped-query attention; q_norm/k_norm: each norm's weight count."""
    linear = h * a * d + 2 * h * k * d + a * d * h
    n = linear + (a * d + 2 * k * d if qkv_bias else 0) + (h if o_bias else 0) + q_norm + k_norm
    return n + (a if sinks else 0), linear


def mlp(h: int, i: int, *, gated: bool = True, bias: bool = False) -> tuple[int, int]:
    """(params, matrix params) of one MLP or expert."""
    linear = (3 if gated else 2) * h * i
    return linear + (((2 * i if gated else i) + h) if bias else 0), linear


@dataclass
class Layer:
    params: int
    active: int
    linear: int
    kv: KVGroup  # layers=1; grouped when assembled
    experts: int = 0  # the routed experts' matrix params (what MXFP4 checkpoints quantise)


def kv_kind(layer_type: str) -> str:
    return {"full_attention": "full", "sliding_attention": "sliding", "chunked_attention": "chunked"}[
        layer_type
    ]


def biases(bias: bool) -> dict[str, bool]:
    """assemble()'s fields for q/k/v and o projections that both have a bias or both have none."""
    return {"qkv_bias": bias, "o_bias": bias}


def experts(intermediate: int, n: int, top: int) -> dict[str, int]:
    """assemble()'s MoE fields: an expert's intermediate size, the experts, the experts per token."""
    return {"intermediate_size": intermediate, "num_experts": n, "experts_per_token": top}


def assemble(
    common: dict[str, Any],
    layers: list[Layer],
    *,
    family: str,
    embed: int | None = None,
    head: int | None = None,
    final: int | None = None,
    **kw: Any,
) -> FamilySpec:
    """Add the layers up; KV layers that cache alike become one group.

    Defaults: a V x h token table, an untied V x h head, one RMSNorm weight as the final norm."""
    table = common["vocab_size"] * common["hidden_size"]
    embed = table if embed is None else embed
    head = (0 if common["tie_word_embeddings"] else table) if head is None else head
    final = common["hidden_size"] if final is None else final
    counts = Counter((ly.kv.kind, ly.kv.heads, ly.kv.width, ly.kv.window) for ly in layers)
    groups = tuple(
        KVGroup(kind, n, heads, width, window) for (kind, heads, width, window), n in counts.items()
    )
    windowed = [g for g in groups if g.kind in ("sliding", "chunked") and g.window]
    if windowed and "sliding_window" not in kw:
        kw.update(sliding_window=windowed[0].window, sliding_window_layers=sum(g.layers for g in windowed))
    return FamilySpec(
        **{**common, **kw},
        family=family,
        layer_params=sum(ly.params for ly in layers),
        layer_params_active=sum(ly.active for ly in layers),
        layer_params_linear=sum(ly.linear for ly in layers),
        layer_params_experts=sum(ly.experts for ly in layers),
        embed_params=embed,
        head_params=head,
        final_params=final,
        kv_groups=groups,
    )


def read_common(
    c: Config, mt: str, *, name: str, tie_default: bool, head_dim_default: int | None = None
) -> tuple[dict[str, Any], int, int, int, int, int, int]:
    """The fields every decoder has: (common kwargs for ModelSpec, L, h, a, k, d, V)."""
    L = c.integer("num_hidden_layers")
    h = c.integer("hidden_size")
    a = c.integer("num_attention_heads")
    k = c.integer("num_key_value_heads", default=a)
    V = c.integer("vocab_size")
    if a % k:
        raise SpecError("num_key_value_heads", k, Msg("allowed.divisor_heads", a=a), source=c.source)
    d = c.integer("head_dim", default=head_dim_default)
    if d is None:
        if h % a:
            raise SpecError(
                "head_dim",
                None,
                Msg("allowed.head_dim_given", h=h, a=a),
                source=c.source,
            )
        d = h // a
    tie = c.flag("tie_word_embeddings", tie_default)
    common = dict(
        name=name or c.cfg.get("_name_or_path") or mt,
        model_type=mt,
        num_layers=L,
        hidden_size=h,
        num_heads=a,
        num_kv_heads=k,
        head_dim=d,
        vocab_size=V,
        tie_word_embeddings=tie,
        max_position_embeddings=c.integer("max_position_embeddings", default=4096),
        source=c.source,
    )
    return common, L, h, a, k, d, V


def window_of(c: Config) -> int | None:
    return c.integer("sliding_window", default=None)


def std_kv(kind: str, k: int, d: int, window: int | None) -> KVGroup:
    return KVGroup(kind, 1, k, 2 * d, window if kind in ("sliding", "chunked") else None)
