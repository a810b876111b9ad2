"""Fields of config.json that decide the size over the family's defaults.

- dropout: the config's own probabilities (`attn_pdrop`, `resid_pdrop`, `embd_pdrop`,
  `hidden_dropout_prob`, `attention_dropout`...); the largest one is kept, since a non-zero
  probability anywhere makes the training step keep masks. A GPT-2 config with every dropout at 0 is
  therefore sized without masks (the family default is 0.1).
- architectures: BERT for masked LM carries the MLM transform and decoder bias, not a pooler.
- quantization_config: the checkpoint's weight bytes (aiworkbook.specs.quantization).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from aiworkbook.errors import SpecError
from aiworkbook.specs.quantization import scheme_from_config

if TYPE_CHECKING:
    from aiworkbook.specs.model import ModelSpec

Spec = TypeVar("Spec", bound="ModelSpec")

DROPOUT_KEYS = (
    "attn_pdrop",
    "resid_pdrop",
    "embd_pdrop",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "hidden_dropout",
    "attention_dropout",
    "residual_dropout",
    "embedding_dropout",
    "dropout",
)


def config_dropout(cfg: dict[str, Any], source: str) -> float | None:
    found = []
    for k in DROPOUT_KEYS:
        v = cfg.get(k)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v < 1:
            raise SpecError(k, v, "a probability in [0, 1)", source=source)
        found.append(float(v))
    return max(found) if found else None


def config_field_changes(cfg: dict[str, Any], encoder: bool, hidden: int, source: str) -> dict[str, Any]:
    """The ModelSpec fields these config fields set over a family's reading (none: an empty dict);
    `encoder`: the family is encoder-only (its ForMaskedLM checkpoint has a masked-LM head, no pooler)."""
    changes: dict[str, Any] = {}
    p = config_dropout(cfg, source)
    if p is not None:
        changes["dropout"] = p
    archs = cfg.get("architectures") or []
    if encoder and any(str(a).endswith("ForMaskedLM") for a in archs):
        changes.update(mlm_head=True, pooler=False)
    q = scheme_from_config(cfg.get("quantization_config"), hidden=hidden, source=source)
    if q is not None:
        changes["quant"] = q
    return changes


def with_config_fields(spec: Spec, cfg: dict[str, Any], source: str) -> Spec:
    """`spec` (a family's reading of `cfg`) with the fields config_field_changes finds in `cfg` set."""
    changes = config_field_changes(cfg, not spec.is_decoder, spec.hidden_size, source)
    return replace(spec, **changes) if changes else spec
