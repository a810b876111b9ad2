"""FamilySpec: a ModelSpec whose layers differ from one another (MoE interleaving, MLA, layer types).

The base ModelSpec multiplies one layer by the layer count. The families added since (DeepSeek's
dense-then-MoE stack, Llama 4's interleaved experts, Gemma 3's five local layers per global one)
need per-layer sums and a KV cache per layer group, so their parsers add the layers up here and the
totals replace the base class's products. The representative base fields (hidden size, heads, the
expert's intermediate size) stay filled for the activation and roofline arithmetic that reads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiworkbook.specs.kv import KVGroup
from aiworkbook.specs.model import ModelSpec


@dataclass(frozen=True)
class FamilySpec(ModelSpec):
    """Exact per-layer sums for families whose layers are not all alike (fields added at the end)."""

    family: str = ""
    layer_params: int = 0  # all decoder layers together
    layer_params_active: int = 0  # what one token touches in them (routed experts: top-k only)
    layer_params_linear: int = 0  # the layers' projection and expert matrices
    layer_params_experts: int = 0  # the routed experts' matrices alone
    embed_params: int = 0
    head_params: int = 0
    final_params: int = 0  # final norm and anything else outside the layers and tables
    vision_params: int = 0  # a multimodal wrapper's vision tower and projector, shown apart
    mtp_params: int = 0  # DeepSeek's multi-token-prediction layer(s), shown apart
    kv_groups: tuple[KVGroup, ...] = ()
    # a wrapper's language model tied as its text_config alone says (None: not a wrapper). vLLM builds
    # the language model from text_config, so it may keep a head transformers' wrapper ties (mistral3)
    text_tie_word_embeddings: bool | None = None
    # positions of each distinct rotary cos/sin table the layers use (empty: one table of
    # max_position_embeddings); Gemma 3 keeps a local table and a global one, linear-scaled
    rope_table_positions: tuple[int, ...] = ()
    # Gemma 3's image input as vLLM's profile builds its dummy batch: (channels, image_size, tokens per
    # image); empty for text models and for wrappers whose dummy image this project has not read
    mm_dummy_image: tuple[int, ...] = ()

    @property
    def params_per_layer(self) -> int:
        return self.layer_params // self.num_layers

    @property
    def params_embedding(self) -> int:
        return self.embed_params

    @property
    def params_head(self) -> int:
        return self.head_params

    @property
    def params_final(self) -> int:
        return self.final_params

    @property
    def params(self) -> int:
        return self.embed_params + self.layer_params + self.final_params + self.head_params

    @property
    def params_active(self) -> int:
        return self.params - (self.layer_params - self.layer_params_active)

    @property
    def params_linear(self) -> int:
        return self.layer_params_linear

    def kv_layer_groups(self) -> tuple[KVGroup, ...]:
        return self.kv_groups

    def summary(self, kv_dtype: str = "bf16") -> dict[str, Any]:
        out = super().summary(kv_dtype)
        out.update(
            family=self.family,
            params_vision=self.vision_params,
            params_mtp=self.mtp_params,
            kv_layer_groups=[
                {
                    "kind": g.kind,
                    "layers": g.layers,
                    "kv_heads": g.heads,
                    "width": g.width,
                    "window": g.window,
                }
                for g in self.kv_groups
            ],
        )
        if self.asserted_family:
            out["asserted_family"] = self.asserted_family
        return out


def from_base(spec: ModelSpec, family: str) -> FamilySpec:
    """A FamilySpec with the same counts as a base-family spec (for a wrapper around one)."""
    from dataclasses import fields

    base = {f.name: getattr(spec, f.name) for f in fields(ModelSpec)}
    L = spec.num_layers
    idle = L * (spec.num_experts - spec.experts_per_token) * spec.expert_params if spec.num_experts else 0
    return FamilySpec(
        **base,
        family=family,
        layer_params=L * spec.params_per_layer,
        layer_params_active=L * spec.params_per_layer - idle,
        layer_params_linear=spec.params_linear,
        embed_params=spec.params_embedding,
        head_params=spec.params_head,
        final_params=spec.params_final,
        kv_groups=spec.kv_layer_groups(),
    )


__all__ = ["FamilySpec", "KVGroup", "from_base"]
