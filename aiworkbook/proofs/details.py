"""Typed details of the roofline, vram and kv proofs: frozen sections (one field per entry, its unit in
the field's metadata, None where it does not apply), so a widget reads `r.details.components[0].ratio`
instead of guessing. `to_dict()` gives the JSON the result always saved; `r.details["key"]` still works.

Nested tables whose shape is the measurement's own (the roofline's ceilings and chart rows, the kv grid,
the embedded estimate) stay plain JSON inside their field. Proofs without a class here keep a dict.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from aiworkbook.sizing.sections import Section, figure


@dataclasses.dataclass(frozen=True)
class ComponentRow(Section):
    """One line of the vram proof's side-by-side table."""

    component: str = figure("", "what is compared", default="")
    measured: int = figure("B", "measured bytes", default=0)
    predicted: int = figure("B", "the itemised estimate's bytes", default=0)
    ratio: float | None = figure("ratio", "measured / predicted")


@dataclasses.dataclass(frozen=True)
class VramDetails(Section):
    """The vram proof: the component table, the optimizer state, the 18 B/param rule, the estimate."""

    components: tuple[ComponentRow, ...] | None = figure(
        "", "measured vs predicted per component", omit_none=True
    )
    optimizer_state: dict[str, Any] | None = figure("", "bytes and tensors of AdamW's state", omit_none=True)
    rule_18_bytes_per_param: dict[str, Any] | None = figure(
        "", "the 18 B/param rule of thumb (docs/architecture.md)", omit_none=True
    )
    estimate: dict[str, Any] | None = figure("", "the estimate under test (size --json)", omit_none=True)
    formulas: dict[str, str] | None = figure("", "each component's formula", omit_none=True)
    loss: float | None = figure("", "the last step's loss (a sanity check)", omit_none=True)
    cuda: dict[str, Any] | None = figure("", "allocator and device-level figures (CUDA only)", omit_none=True)
    throttle_share: dict[str, Any] | None = figure(
        "fraction", "throttle reasons while it ran", omit_none=True
    )

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        if self.components is not None:
            d["components"] = [r.to_dict() for r in self.components]
        return d


@dataclasses.dataclass(frozen=True)
class KVCapacity(Section):
    """Sequences whose whole-context cache fits the budget: measured by allocation vs predicted."""

    budget_bytes: int = figure("B", "the budget in allocated bytes", default=0)
    context: int = figure("tokens", "tokens per sequence", default=0)
    measured: int = figure("", "sequences allocated within the budget", default=0)
    predicted: int = figure("", "sequences the estimate fits", default=0)
    ratio: float | None = figure("ratio", "measured / predicted")
    transient_bytes_from_estimate: int = figure("B", "one sequence's prefill transient", default=0)


@dataclasses.dataclass(frozen=True)
class KVDetails(Section):
    """The kv proof: the batch x context grid, where latency climbs, the capacity check."""

    grid: list[dict[str, Any]] | None = figure("", "one row per batch x context point", omit_none=True)
    latency_climb: dict[str, Any] | None = figure(
        "", "first context whose step is 1.2x the shortest", omit_none=True
    )
    capacity: KVCapacity | None = figure("", "sequences in the budget", omit_none=True)
    throttle_share: dict[str, Any] | None = figure(
        "fraction", "throttle reasons while it ran", omit_none=True
    )


@dataclasses.dataclass(frozen=True)
class RooflineDetails(Section):
    """The roofline proof: measured ceilings, the calibrated spec, the chart rows."""

    ceilings: dict[str, Any] | None = figure("", "bandwidth, matmul per dtype, host<->device", omit_none=True)
    calibrated_spec: dict[str, Any] | None = figure(
        "", "GPUSpec JSON of the measured ceilings", omit_none=True
    )
    datasheet_spec: dict[str, Any] | None = figure("", "the catalogue GPUSpec (CUDA; None on the CPU)")
    workload_point: dict[str, Any] | None = figure("", "a model's decode point (FLOPs, bytes, dtype)")
    chart: list[dict[str, Any]] | None = figure("", "rows for roofline_chart", omit_none=True)
    throttle_share: dict[str, Any] | None = figure(
        "fraction", "throttle reasons while it ran", omit_none=True
    )


_TYPES: dict[str, type[Section]] = {"vram": VramDetails, "kv": KVDetails, "roofline": RooflineDetails}


def typed(proof: str, details: Any) -> Any:
    """The typed details of `proof` from their JSON (a dict), or the dict unchanged when the proof has no
    class here or the dict carries keys the class does not know (a newer or foreign file)."""
    cls = _TYPES.get(proof)
    if cls is None or isinstance(details, Section) or not isinstance(details, dict) or not details:
        return details
    names = {f.name for f in dataclasses.fields(cls)}
    if not set(details) <= names:
        return details
    kw = dict(details)
    if cls is VramDetails and isinstance(kw.get("components"), list):
        kw["components"] = tuple(ComponentRow(**r) for r in kw["components"])
    if cls is KVDetails and isinstance(kw.get("capacity"), dict):
        kw["capacity"] = KVCapacity(**kw["capacity"])
    if cls is RooflineDetails:  # both always written by the proof (None on the CPU / without a model)
        kw.setdefault("datasheet_spec", None)
        kw.setdefault("workload_point", None)
    try:
        return cls(**kw)
    except TypeError:
        return details
