"""The KV cache's shape and its bytes: the one formula specs, sizing, the vLLM arithmetic and the proofs use.

Every decoder caches K and V per layer group (`KVGroup`): a base-family spec derives its groups from
its fields (`ModelSpec.kv_layer_groups`: full layers, and sliding-window layers capped at the
window), a family with layer types or MLA lists its own (specs/families). `kv_bytes` turns groups,
tokens, the cache dtype's bits and the tensor-parallel size into bytes; nothing else multiplies
heads by head_dim by layers. See docs/architecture.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

KV_KINDS = ("full", "sliding", "chunked", "mla")
WINDOWED_KINDS = ("sliding", "chunked")


@dataclass(frozen=True)
class KVGroup:
    """Layers that cache alike: `heads` KV heads of `width` elements per token (K and V together).

    MLA caches one latent per token (`heads` = 1, `width` = kv_lora_rank + qk_rope_head_dim) that
    tensor parallelism does not split; sliding and chunked layers keep at most `window` tokens.
    """

    kind: str
    layers: int
    heads: int
    width: int
    window: int | None = None

    def tokens_kept(self, tokens: Any) -> Any:
        """Tokens a layer of this group holds of `tokens` (an int or a numpy array)."""
        if self.window and self.kind in WINDOWED_KINDS:
            return tokens.clip(max=self.window) if hasattr(tokens, "clip") else min(tokens, self.window)
        return tokens

    def heads_per_rank(self, tp: int = 1) -> int:
        """KV heads one tensor-parallel rank holds: split, replicated when fewer than ranks; MLA whole."""
        return self.heads if self.kind == "mla" else max(1, -(-self.heads // tp))

    def elems_per_token(self, tp: int = 1) -> int:
        return self.layers * self.heads_per_rank(tp) * self.width


def kv_bytes(groups: Iterable[KVGroup], tokens: Any, bits: int, tp: int = 1, *, windowed: bool = True) -> Any:
    """K and V bytes one sequence of `tokens` tokens holds on one tensor-parallel rank, over `groups`.

    Each group's layers hold `tokens_kept(tokens)` tokens (sliding/chunked layers at most their window;
    `windowed=False`: every token, as in a per-token or per-block figure) of `elems_per_token(tp)`
    elements at `bits` bits. `tokens` may be a numpy array (heatmaps, fit solvers)."""
    elems: Any = 0 * tokens  # an array of zeros for an array: the shape survives an encoder's no groups
    for g in groups:
        elems = elems + (g.tokens_kept(tokens) if windowed else tokens) * g.elems_per_token(tp)
    return elems * bits // 8


def one_layer(g: KVGroup) -> KVGroup:
    """The same group, one layer of it (a paged engine's page is per layer)."""
    return KVGroup(g.kind, 1, g.heads, g.width, g.window)
