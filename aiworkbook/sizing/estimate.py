"""estimate(spec, workload, gpu): the Estimate (memory, rules of thumb, roofline, fit) for one workload."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.sizing import capacity, roofline
from aiworkbook.sizing.assumptions import Assumptions
from aiworkbook.sizing.expr import Term
from aiworkbook.sizing.memory import MemoryBreakdown, breakdown_of, evaluate, shape
from aiworkbook.sizing.onepass import DEVICES, default_device, sizing_pass
from aiworkbook.sizing.sections import Cost, Fits, Roofline, RulesOfThumb, Storage, from_mapping
from aiworkbook.sizing.workload import Workload

if TYPE_CHECKING:
    from aiworkbook.specs.gpu import GPUSpec
    from aiworkbook.specs.node import NodeProfile
    from aiworkbook.specs.protocol import ModelSpecLike

#: Rules of thumb, bytes per parameter (shown beside the itemised total, never instead; sources in
#: docs/architecture.md, "Rules of thumb").
TRAIN_RULE_BYTES = 18
INFER_RULE_BYTES = 6
#: Fine-tuning's bytes per parameter as LLaMA-Factory's README estimates them ("Hardware Requirement",
#: marked *estimated*: 16-bit LoRA `2x` GB and 4-bit QLoRA `x/2` GB for x billion parameters;
#: hiyouga/LLaMA-Factory README.md at 00409ff2): the 18 B rule would be a full fine-tune's.
ADAPTER_RULE_BYTES = {"lora": 2.0, "qlora": 0.5}


@dataclass(frozen=True)
class Estimate:
    """What sizing predicts for a workload on a GPU: itemised memory, rules of thumb, roofline, fit,
    storage and cost, each a typed section (`est.roofline.tpot_s`, units in `Roofline.unit("tpot_s")`)."""

    model: str
    workload: Workload
    gpu: Any  # GPUSpec | None
    device: str
    memory: MemoryBreakdown
    params: dict[str, int]
    rules_of_thumb: RulesOfThumb
    roofline: Roofline
    fits: Fits = field(default_factory=Fits)
    storage: Storage = field(default_factory=Storage)
    cost: Cost = field(default_factory=Cost)
    assumptions: Assumptions = field(default_factory=Assumptions)

    def to_dict(self) -> dict[str, Any]:
        """The JSON of `aiworkbook size --json` (stable keys)."""
        return {
            "model": self.model,
            "gpu": self.gpu.name if self.gpu is not None else None,
            "device": self.device,
            "workload": self.workload.to_dict(),
            "memory": self.memory.as_dict(),
            "host": {**self.memory.host, "host_bytes": self.memory.host_bytes},
            "formulas": dict(self.memory.formulas),
            "params": dict(self.params),
            "rules_of_thumb": self.rules_of_thumb.to_dict(),
            "roofline": self.roofline.to_dict(),
            "fits": self.fits.to_dict(),
            "storage": self.storage.to_dict(),
            "cost": self.cost.to_dict(),
            "assumptions": self.assumptions.to_dict(),
        }


def _rules(spec: ModelSpecLike, w: Workload, mem: MemoryBreakdown) -> RulesOfThumb:
    params = Term(spec.params, "term.params")
    tp = Term(w.tp, "term.tp")
    note = None
    if w.mode in ADAPTER_RULE_BYTES:
        per = ADAPTER_RULE_BYTES[w.mode]
        states = params_at(Term(per, "term.B_g"), params)
        name = f"{w.mode}_{per:g}B_per_param"
        note = Msg("term.rule.llama_factory", mode=w.mode)
        rest = Term(mem.activations, "term.rule.activations")
    elif w.training:
        states = Term(TRAIN_RULE_BYTES, "term.B") * params
        if w.zero == 3 and w.dp > 1:  # ZeRO-3 shards the states over dp as well
            zero3 = Term(w.dp, "term.zero", stage=3)
            tp = tp * zero3 if w.tp > 1 else zero3
        name, rest = "train_18B_per_param", Term(mem.activations, "term.rule.activations")
    else:
        states = Term(INFER_RULE_BYTES, "term.B") * params
        name, rest = "infer_6B_per_param", Term(mem.kv_cache, "term.rule.kv_cache")
    if tp.value > 1:
        states = states // tp
    rule_t = states + rest if note is None else (states + rest).said(note)
    rule, txt = rule_t.value, rule_t.text
    return RulesOfThumb(
        rule=name,
        formula=txt,
        bytes=int(rule),
        itemised_total=int(mem.total),
        difference_bytes=int(rule - mem.total),
        ratio_to_itemised=rule / mem.total if mem.total else None,
    )


def params_at(per: Term, params: Term) -> Term:
    """params at a fractional rate of bytes each, in whole bytes."""
    t = per * params
    return Term(int(t.value), render=lambda: t.text)


def estimate(
    spec: ModelSpecLike,
    w: Workload,
    gpu: GPUSpec | str | None = None,
    device: str | None = None,
    assumptions: Assumptions | None = None,
    node: NodeProfile | None = None,
) -> Estimate:
    """Size `w` for model `spec` (a ModelSpec) on `gpu` (a catalogue name, a GPU JSON path, a GPUSpec
    or None).

    `node` (a NodeProfile) supplies the GPU when `gpu` is None (its calibrated one when it has measured
    ceilings) and the storage speed and price for the storage and cost sections; `assumptions` overrides.
    `device` None: cpu for a measured host spec (the CPU-only reference node), else cuda.
    """
    if node is not None:
        gpu = gpu if gpu is not None else node.gpu_spec()
        assumptions = assumptions or Assumptions.from_node(node)
    assumptions = assumptions or Assumptions()
    if isinstance(gpu, str):
        from aiworkbook.specs import load_gpu

        gpu = load_gpu(gpu)
    if device is None:
        device = default_device(gpu, node)
    if device not in DEVICES:
        raise SpecError("device", device, ", ".join(DEVICES))
    w.check_against(spec)
    w = w.replace(attention=w.attention_for(spec))  # the implementation that runs, said in the output
    # one pass: the model states and activation terms once, the breakdown at the workload's shape
    # once; every section below reads them (docs/architecture.md, "Sizing in one pass")
    p = sizing_pass(spec, w, device)
    ev = evaluate(p, *shape(w))
    mem = breakdown_of(p, ev)
    params = {
        "params": spec.params,
        "params_active": spec.params_active,
        "params_non_embedding": spec.params_non_embedding,
        "trainable": p.trainable,
    }
    stored = p.weight_term.value if p.weight_term is not None else None
    figures = roofline.of_workload(spec, w, gpu, p.trainable, stored)
    roof = (
        Roofline(mode="none")
        if figures is None
        else from_mapping(Roofline, figures, mode="train" if w.training else "infer")
    )
    fit = (
        from_mapping(Fits, capacity.fits(spec, w, gpu, device, p, ev.components))
        if gpu is not None
        else Fits()
    )
    from aiworkbook.sizing.plan import storage_section

    store = storage_section(spec, w, roof, assumptions, p)
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
        _cost(spec, w, gpu, roof, assumptions, store, fit),
        assumptions,
    )


def _cost(
    spec: ModelSpecLike,
    w: Workload,
    gpu: GPUSpec | None,
    roof: Roofline,
    assumptions: Assumptions,
    store: Storage | None,
    fit: Fits,
) -> Cost:
    """The cost section, or no price at all where the set-up does not fit the GPU (one price rule:
    aiworkbook.sizing.answer prices the GPUs it needs instead)."""
    from aiworkbook.sizing.plan import cost_section

    if fit.gpu is not None and not fit.fits:
        return Cost(
            gpus=w.tp * (w.dp if w.training else 1), note=Msg("cost.not_fit")
        )  # priced only on the GPUs it needs
    return cost_section(spec, w, gpu, roof, assumptions, store)
