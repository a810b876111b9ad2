"""ModelSpec: a transformer architecture read from a Hugging Face config.json, counted exactly.

The parameter count follows each family's Hugging Face implementation layer by layer (tied
weights once, biases and norms included), so it matches `sum(p.numel() for p in model.parameters())`
to the unit. tests/test_params_vs_transformers.py checks that against transformers itself.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from aiworkbook.errors import SpecError
from aiworkbook.specs.kv import KVGroup, kv_bytes
from aiworkbook.specs.mechanisms import Mechanisms
from aiworkbook.specs.quantization import QuantScheme
from aiworkbook.units import KV_DTYPES, dtype_bits


@dataclass(frozen=True)
class ModelSpec:
    """The shape of a transformer: everything sizing needs, nothing about weights' values."""

    name: str
    model_type: str
    num_layers: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int
    tie_word_embeddings: bool
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    norm: str = "rmsnorm"  # rmsnorm (weight) or layernorm (weight + bias)
    norms_per_layer: int = 2
    gated_mlp: bool = True  # SwiGLU/GeGLU (gate, up, down) vs plain (up, down)
    learned_positions: bool = False  # GPT-2/BERT absolute position table
    type_vocab_size: int = 0  # BERT token types
    num_experts: int = 0  # 0 = dense
    experts_per_token: int = 0
    sliding_window: int | None = None
    sliding_window_layers: int = 0  # how many layers use the window
    is_decoder: bool = True
    pooler: bool = False
    source: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    asserted_family: str = ""  # `--family NAME`: an unknown model_type read as this family's shape
    dropout: float | None = None  # the config's largest dropout probability; None: not in the config
    mlm_head: bool = False  # BERT for masked LM: transform (dense + LayerNorm) and a decoder bias
    quant: QuantScheme | None = None  # the checkpoint's own weight quantisation (quantization_config)
    # what the family's forward keeps, declared by its parser (None: refused by sizing, never guessed)
    mechanisms: Mechanisms | None = field(default=None, compare=False, repr=False)

    # ---- counts ---------------------------------------------------------------------------
    @property
    def attention_params_per_layer(self) -> int:
        h, a, k, d = self.hidden_size, self.num_heads, self.num_kv_heads, self.head_dim
        n = h * a * d + 2 * h * k * d + a * d * h
        if self.qkv_bias:
            n += a * d + 2 * k * d
        if self.o_bias:
            n += h
        return n

    @property
    def expert_params(self) -> int:
        """One MLP (an expert, or the dense MLP)."""
        h, i = self.hidden_size, self.intermediate_size
        mats = 3 if self.gated_mlp else 2
        n = mats * h * i
        if self.mlp_bias:
            n += (2 * i if self.gated_mlp else i) + h
        return n

    @property
    def mlp_params_per_layer(self) -> int:
        if self.num_experts:
            return self.num_experts * self.expert_params + self.hidden_size * self.num_experts
        return self.expert_params

    @property
    def norm_params(self) -> int:
        """One norm layer: weight, plus bias for LayerNorm."""
        return self.hidden_size * (2 if self.norm == "layernorm" else 1)

    @property
    def params_per_layer(self) -> int:
        return (
            self.attention_params_per_layer
            + self.mlp_params_per_layer
            + self.norms_per_layer * self.norm_params
        )

    @property
    def params_embedding(self) -> int:
        """Input tables: tokens, plus learned positions and token types where the family has them."""
        h = self.hidden_size
        n = self.vocab_size * h
        if self.learned_positions:
            n += self.max_position_embeddings * h
        n += self.type_vocab_size * h
        return n

    @property
    def params_head(self) -> int:
        """The output projection when it is a separate matrix (untied); 0 when tied or encoder-only."""
        if not self.is_decoder or self.tie_word_embeddings:
            return 0
        return self.vocab_size * self.hidden_size

    @property
    def params_final(self) -> int:
        """Parameters outside the layers and the tables: final norm, an encoder's (BERT's) embedding norm,
        pooler and masked-LM head."""
        h = self.hidden_size
        if not self.is_decoder:
            mlm = (h * h + h + 2 * h + self.vocab_size) if self.mlm_head else 0
            return self.norm_params + ((h * h + h) if self.pooler else 0) + mlm
        return self.norm_params

    @property
    def params(self) -> int:
        """Exact total, tied weights counted once."""
        return (
            self.params_embedding
            + self.num_layers * self.params_per_layer
            + self.params_final
            + self.params_head
        )

    @property
    def params_non_embedding(self) -> int:
        """Kaplan's N: everything but the input tables and a separate output head."""
        return self.params - self.params_embedding - self.params_head

    @property
    def params_active(self) -> int:
        """Parameters touched per token: MoE uses experts_per_token of num_experts."""
        if not self.num_experts:
            return self.params
        idle = self.num_experts - self.experts_per_token
        return self.params - self.num_layers * idle * self.expert_params

    @property
    def params_linear(self) -> int:
        """Weights of the layers' linear projections (what weight quantisation applies to)."""
        h, a, k, d = self.hidden_size, self.num_heads, self.num_kv_heads, self.head_dim
        attn = h * a * d + 2 * h * k * d + a * d * h
        mats = 3 if self.gated_mlp else 2
        mlp = mats * h * self.intermediate_size * max(1, self.num_experts)
        return self.num_layers * (attn + mlp)

    # ---- KV cache ---------------------------------------------------------------------------
    def kv_layer_groups(self) -> tuple[KVGroup, ...]:
        """The layers grouped by how they cache: full layers, and sliding-window layers capped at the
        window; none for an encoder. (A FamilySpec lists its own groups.)"""
        if not self.is_decoder:
            return ()
        L, swl, width = self.num_layers, self.sliding_window_layers, 2 * self.head_dim
        groups = []
        if L - swl:
            groups.append(KVGroup("full", L - swl, self.num_kv_heads, width))
        if swl:
            groups.append(KVGroup("sliding", swl, self.num_kv_heads, width, self.sliding_window))
        return tuple(groups)

    def kv_bytes_per_token(self, kv_dtype: str = "bf16", tp: int = 1) -> int:
        """Cache bytes one token adds on every layer (windows not applied), per tensor-parallel rank:
        2 · L · kv_heads · head_dim · bytes for a base family."""
        bits = dtype_bits(kv_dtype, "kv_dtype", KV_DTYPES)
        return int(kv_bytes(self.kv_layer_groups(), 1, bits, tp, windowed=False))

    def kv_cache_bytes(self, tokens: int, kv_dtype: str = "bf16", tp: int = 1) -> int:
        """Cache bytes of one sequence of `tokens`, with sliding-window layers capped at the window."""
        if tokens < 0:
            raise SpecError("tokens", tokens, ">= 0")
        bits = dtype_bits(kv_dtype, "kv_dtype", KV_DTYPES)
        return int(kv_bytes(self.kv_layer_groups(), tokens, bits, tp))

    # ---- presentation -----------------------------------------------------------------------
    def summary(self, kv_dtype: str = "bf16") -> dict[str, Any]:
        """The stable JSON of `aiworkbook params` (keys other tools script against)."""
        return {
            "name": self.name,
            "model_type": self.model_type,
            "params": self.params,
            "params_non_embedding": self.params_non_embedding,
            "params_active": self.params_active,
            "params_embedding": self.params_embedding,
            "params_head": self.params_head,
            "kv_dtype": kv_dtype,
            "kv_bytes_per_token": self.kv_bytes_per_token(kv_dtype),
            "num_layers": self.num_layers,
            "hidden_size": self.hidden_size,
            "num_heads": self.num_heads,
            "num_kv_heads": self.num_kv_heads,
            "head_dim": self.head_dim,
            "intermediate_size": self.intermediate_size,
            "vocab_size": self.vocab_size,
            "tie_word_embeddings": self.tie_word_embeddings,
            "num_experts": self.num_experts,
            "experts_per_token": self.experts_per_token,
            "sliding_window": self.sliding_window,
        }

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("extra", None)
        d.pop("mechanisms", None)  # the family's, not the model's: `aiworkbook models` lists them
        return d

    def scaled(
        self, *, num_layers: int | None = None, vocab_size: int | None = None, name: str | None = None
    ) -> ModelSpec:
        """A proxy with fewer layers or a smaller vocabulary (proofs that would not fit use one)."""

        changes: dict[str, Any] = {}
        if num_layers is not None:
            if num_layers < 1:
                raise SpecError("num_layers", num_layers, ">= 1")
            changes["num_layers"] = num_layers
            changes["sliding_window_layers"] = min(self.sliding_window_layers, num_layers)
        if vocab_size is not None:
            if vocab_size < 1:
                raise SpecError("vocab_size", vocab_size, ">= 1")
            changes["vocab_size"] = vocab_size
        changes["name"] = (
            name
            or f"{self.name} (proxy: {num_layers or self.num_layers} layers, vocab {vocab_size or self.vocab_size})"
        )
        return replace(self, **changes)
