"""The checkpoint's own weight quantisation, read from config.json's `quantization_config`.

A quantised checkpoint's weights are its stored bytes, not bf16: gpt-oss ships its routed experts in
MXFP4 (4-bit values, one 8-bit E8M0 scale per 32), DeepSeek-V3 its linear layers in FP8 with one fp32
scale per 128x128 block, GPTQ/AWQ 4- or 8-bit groups with an fp16 scale and a packed zero point per
group, compressed-tensors int8 per channel (w8a8) or 4-bit groups (w4a16), bitsandbytes NF4/int8.
Embeddings, the output head, norms and routers stay 16-bit (every scheme here leaves them out).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from aiworkbook.errors import SpecError


class _Counted(Protocol):
    """What a checkpoint's weight bytes read from a spec (ModelSpecLike, specs/protocol.py, offers it; a
    protocol of its own here, since protocol.py names QuantScheme)."""

    @property
    def params(self) -> int: ...

    @property
    def params_linear(self) -> int: ...


METHODS = ("mxfp4", "fp8", "gptq", "awq", "compressed-tensors", "bitsandbytes")


@dataclass(frozen=True)
class QuantScheme:
    method: str
    bits: float  # stored bits per quantised weight, scales and zero points included
    scope: str  # "linear": every projection in the layers; "experts": the routed experts only
    label: str

    def weight_bytes(self, spec: _Counted) -> int:
        """Bytes of the whole checkpoint's weights: quantised matrices at `bits`, the rest at 2 B."""
        q = getattr(spec, "layer_params_experts", 0) if self.scope == "experts" else spec.params_linear
        return int(q * self.bits / 8) + 2 * (spec.params - q)


def _group_bits(bits: int, group: int, scale_bits: int, zero_bits: int, row: int) -> float:
    g = row if group in (-1, 0, None) else group
    return bits + (scale_bits + zero_bits) / g


def scheme_from_config(qc: Any, *, hidden: int, source: str) -> QuantScheme | None:
    """None when there is no quantization_config; a SpecError for a method not modelled here."""
    if qc is None:
        return None
    if not isinstance(qc, dict):
        raise SpecError("quantization_config", qc, "a JSON object", source=source)
    m = qc.get("quant_method")
    if m == "mxfp4":
        skip = " ".join(qc.get("modules_to_not_convert") or [])
        scope = "experts" if "self_attn" in skip else "linear"
        return QuantScheme(m, 4 + 8 / 32, scope, "MXFP4 (4-bit, E8M0 scale per 32)")
    if m == "fp8":
        block = qc.get("weight_block_size") or [hidden, hidden]
        n = int(block[0]) * int(block[1])
        return QuantScheme(m, 8 + 32 / n, "linear", f"FP8 e4m3, fp32 scale per {block[0]}x{block[1]} block")
    if m in ("gptq", "awq"):
        bits = int(qc.get("bits") or qc.get("w_bit") or 4)
        group = int(qc.get("group_size") or qc.get("q_group_size") or 128)
        return QuantScheme(
            m, _group_bits(bits, group, 16, bits, hidden), "linear", f"{m} {bits}-bit g{group}"
        )
    if m == "compressed-tensors":
        groups = qc.get("config_groups") or {}
        w = next(
            (g.get("weights") for g in groups.values() if isinstance(g, dict) and g.get("weights")), None
        )
        if not w:
            raise SpecError(
                "quantization_config.config_groups", groups, "a group with weights", source=source
            )
        bits = int(w.get("num_bits", 8))
        group = w.get("group_size") if w.get("strategy") == "group" else -1
        zero = 0 if w.get("symmetric", True) else bits
        if w.get("type") == "float" and bits == 8:
            label = "compressed-tensors fp8"
        else:
            label = f"compressed-tensors w{bits}a{16 if bits < 8 else 8} ({w.get('strategy', 'channel')})"
        return QuantScheme(m, _group_bits(bits, group, 16, zero, hidden), "linear", label)
    if m == "bitsandbytes":
        if qc.get("load_in_4bit"):
            double = qc.get("bnb_4bit_use_double_quant", False)
            nf4_bits = 4 + (8 / 64 + 32 / (64 * 256) if double else 32 / 64)
            return QuantScheme(m, nf4_bits, "linear", f"bitsandbytes {qc.get('bnb_4bit_quant_type', 'fp4')}")
        return QuantScheme(m, 8 + 32 / hidden, "linear", "bitsandbytes int8 (LLM.int8)")
    raise SpecError("quantization_config.quant_method", m, ", ".join(METHODS), source=source)
