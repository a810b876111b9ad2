"""estimate(spec, workload, gpu): the Estimate (memory, rules of thumb, roofline, fit) for one workload."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aiworkbook.errors import SpecError
from aiworkbook.sizing import capacity, roofline
from aiworkbook.sizing.assumptions import Assumptions
from aiworkbook.sizing.memory import MemoryBreakdown, memory_breakdown
from aiworkbook.sizing.states import trainable_and_optimizer
from aiworkbook.sizing.workload import Workload

DEVICES = ("cuda", "cpu")
#: The seeds' rules of thumb, bytes per parameter (shown beside the itemised total, never instead).
TRAIN_RULE_BYTES = 18
INFER_RULE_BYTES = 6


@dataclass(frozen=True)
class Estimate:
    """What sizing predicts for a workload on a GPU: itemised memory, rules of thumb, roofline, fit."""

    model: str
    workload: Workload
    gpu: Any  # GPUSpec | None
    device: str
    memory: MemoryBreakdown
    params: dict[str, int]
    rules_of_thumb: dict[str, Any]
    roofline: dict[str, Any]
    fits: dict[str, Any] = field(default_factory=dict)
    storage: dict[str, Any] = field(default_factory=dict)
    cost: dict[str, Any] = field(default_factory=dict)
    assumptions: Assumptions = field(default_factory=Assumptions)

    def to_dict(self) -> dict[str, Any]:
        """The JSON of `aiworkbook size --json` (stable keys)."""
        return {
            "model": self.model,
            "gpu": self.gpu.name if self.gpu is not None else None,
            "device": self.device,
            "workload": self.workload.to_dict(),
            "memory": self.memory.as_dict(),
            "formulas": dict(self.memory.formulas),
            "params": dict(self.params),
            "rules_of_thumb": dict(self.rules_of_thumb),
            "roofline": {k: _plain(v) for k, v in self.roofline.items()},
            "fits": dict(self.fits),
            "storage": _plain_tree(self.storage),
            "cost": _plain_tree(self.cost),
            "assumptions": self.assumptions.to_dict(),
        }


def _plain(v):
    return v.item() if hasattr(v, "item") else v


def _plain_tree(d: dict[str, Any]) -> dict[str, Any]:
    return {k: _plain_tree(v) if isinstance(v, dict) else _plain(v) for k, v in d.items()}


def _rules(spec, w: Workload, mem: MemoryBreakdown) -> dict[str, Any]:
    if w.training:
        rule = TRAIN_RULE_BYTES * spec.params // (w.tp * (w.dp if w.zero == 3 else 1)) + mem.activations
        name, txt = "train_18B_per_param", f"18 B · {spec.params:,} params + activations"
    else:
        rule = INFER_RULE_BYTES * spec.params // w.tp + mem.kv_cache
        name, txt = "infer_6B_per_param", f"6 B · {spec.params:,} params + KV cache"
    return {
        "rule": name,
        "formula": txt,
        "bytes": int(rule),
        "itemised_total": mem.total,
        "difference_bytes": int(rule - mem.total),
        "ratio_to_itemised": rule / mem.total if mem.total else None,
    }


def estimate(
    spec, w: Workload, gpu=None, device: str = "cuda", assumptions: Assumptions | None = None, node=None
) -> Estimate:
    """Size `w` for model `spec` (a ModelSpec) on `gpu` (a name, a GPUSpec or None).

    `node` (a NodeProfile) supplies the GPU when `gpu` is None (its calibrated one when it has measured
    ceilings) and the storage speed and price for the storage and cost sections; `assumptions` overrides.
    """
    if node is not None:
        gpu = gpu if gpu is not None else node.gpu_spec()
        assumptions = assumptions or Assumptions.from_node(node)
    assumptions = assumptions or Assumptions()
    if device not in DEVICES:
        raise SpecError("device", device, ", ".join(DEVICES))
    if isinstance(gpu, str):
        from aiworkbook.specs import get_gpu

        gpu = get_gpu(gpu)
    w.check_against(spec)
    mem = memory_breakdown(spec, w, device)
    params = {
        "params": spec.params,
        "params_active": spec.params_active,
        "params_non_embedding": spec.params_non_embedding,
        "trainable": trainable_and_optimizer(spec, w)[0],
    }
    if w.training:
        roof = roofline.train_step(spec, w, gpu)
    else:
        roof = roofline.inference_roofline(spec, w, gpu) if gpu is not None else {}
    fit: dict[str, Any] = {"gpu": None, "fits": None}
    if gpu is not None:
        fit = capacity.fits(spec, w, gpu, device)
    from aiworkbook.sizing.plan import cost_section, storage_section

    store = storage_section(spec, w, roof, assumptions)
    return Estimate(
        spec.name,
        w,
        gpu,
        device,
        mem,
        params,
        _rules(spec, w, mem),
        roof,
        fit,
        store,
        cost_section(spec, w, gpu, roof, assumptions, store),
        assumptions,
    )
