"""Assumptions: the operating figures an estimate needs beyond the model and the GPU (storage speed,
failure rate, price, utilisation, PUE), each with a default that says where it comes from.

An Estimate lists the assumptions it used, so a reader can see which figures are inputs, not results.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.sizing.cost import per_gpu_hour
from aiworkbook.sizing.sections import Section, figure

if TYPE_CHECKING:
    from collections.abc import Callable

    from aiworkbook.specs.node import NodeProfile

#: Llama 3 (Dubey et al. 2024): 419 unexpected interruptions in 54 days on 16,384 GPUs, about
#: 78 % of them hardware: 54 · 24 · 16,384 / 419 ≈ 50,700 GPU-hours between interruptions.
LLAMA3_GPU_MTBF_HOURS = 50_700.0


def _number(field: str, v: Any, allowed: str, ok: Callable[[float], bool]) -> None:
    """A real, finite number (not a bool, not NaN or inf) for which ok(v) holds, else a SpecError."""
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or not ok(v):
        raise SpecError(field, v, allowed)


@dataclass(frozen=True)
class Assumptions(Section):
    """Inputs that are not properties of the model or the GPU; override any of them."""

    storage_write_bps: float = figure("B/s", "checkpoint write speed (one NVMe-class target)", default=2.0e9)
    storage_read_bps: float = figure("B/s", "checkpoint read speed", default=4.0e9)
    gpu_mtbf_hours: float = figure("h", "one GPU's mean time between failures", default=LLAMA3_GPU_MTBF_HOURS)
    restart_s: float = figure("s", "reschedule + reload before training resumes", default=600.0)
    price_per_gpu_hour: float | None = figure("$/h", "None: the GPU catalogue's illustrative price")
    utilization: float = figure("fraction", "share of wall time serving GPUs do useful work", default=0.7)
    headroom: float = figure(
        "fraction", "idle capacity kept for latency (20-40 %: docs/architecture.md)", default=0.3
    )
    pue: float = figure("ratio", "facility power over IT power", default=1.3)
    usd_per_kwh: float = figure("$", "price of one kWh", default=0.15)
    train_tokens: float | None = figure("tokens", "a token budget for the run cost, e.g. 1e12")
    bytes_per_token: int = figure("B", "stored bytes per training token (int32 ids)", default=4)
    source: str = figure("", "where these figures come from", default=Msg("assumptions.defaults"))

    def __post_init__(self) -> None:
        positive = ("storage_write_bps", "storage_read_bps", "gpu_mtbf_hours", "pue", "bytes_per_token")
        for f in positive:
            _number(f, getattr(self, f), "a finite number > 0", lambda v: v > 0)
        for f in ("restart_s", "usd_per_kwh"):
            _number(f, getattr(self, f), Msg("allowed.finite_min", low=0), lambda v: v >= 0)
        _number("utilization", self.utilization, Msg("allowed.fraction_above_0"), lambda v: 0 < v <= 1)
        _number("headroom", self.headroom, Msg("allowed.fraction_below_1"), lambda v: 0 <= v < 1)
        if self.price_per_gpu_hour is not None:
            _number(
                "price_per_gpu_hour",
                self.price_per_gpu_hour,
                "None or a finite number >= 0",
                lambda v: v >= 0,
            )
        if self.train_tokens is not None:
            _number("train_tokens", self.train_tokens, "None or a finite number > 0", lambda v: v > 0)

    @classmethod
    def from_node(cls, node: NodeProfile, **overrides: Any) -> Assumptions:
        """Storage speed and price from a NodeProfile (where it declares them), then the overrides."""
        kw: dict[str, Any] = {"source": Msg("assumptions.node", name=node.name)}
        if node.storage_write_bps:
            kw["storage_write_bps"] = node.storage_write_bps
        if node.storage_read_bps:
            kw["storage_read_bps"] = node.storage_read_bps
        if node.price_per_hour_usd and node.gpu_count:
            kw["price_per_gpu_hour"] = per_gpu_hour(node.price_per_hour_usd, node.gpu_count)
        return replace(cls(**kw), **overrides)
