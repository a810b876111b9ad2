"""What a set-up needs, priced honestly: a workload that does not fit its GPU is never priced on that
one GPU. The answer names the GPUs it needs (tensor parallel on the chosen kind, and the cheapest
catalogue option) and prices the option it recommends, each at its own GPU's list price.

The sizer's headline and the offline report read this; widgets only format it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from aiworkbook.sizing.cost import gpu_usd
from aiworkbook.sizing.workload import Workload


@dataclass(frozen=True)
class Option:
    """`gpus` × `gpu` (tensor parallel) holds the workload; its prices come from that GPU's catalogue
    price (None where the catalogue has none)."""

    gpu: str
    gpus: int
    usd_per_hour: float | None
    usd_per_mtok: float | None  # serving: $ per million output tokens on this set-up
    usd_per_mtok_trained: float | None  # training: $ per million tokens trained on this set-up
    usd_per_run: float | None  # training with a token budget: $ of the whole run
    #: energy per million of the tokens priced (output tokens served, or tokens trained), GPUs at TDP
    #: and the assumed PUE: an upper bound on power at a lower bound on time
    joules_per_mtok: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Needs:
    """`fits`: the workload as given fits `gpu`; `here`: the set-up on the chosen GPU kind (None when no
    tensor-parallel size up to MAX_TP holds it); `cheapest`: the lowest $/hour catalogue option."""

    fits: bool
    gpu: str
    here: Option | None
    cheapest: Option | None

    @property
    def priced(self) -> Option | None:
        """The option whose price a headline quotes: the chosen GPU when it fits as given, else the
        cheapest option that holds the workload (the chosen kind when no catalogue price exists)."""
        if self.fits:
            return self.here
        return self.cheapest or self.here

    def to_dict(self) -> dict[str, Any]:
        return {
            "fits": self.fits,
            "gpu": self.gpu,
            "here": self.here.to_dict() if self.here else None,
            "cheapest": self.cheapest.to_dict() if self.cheapest else None,
            "priced": self.priced.to_dict() if self.priced else None,
        }


def option(spec: Any, w: Workload, gpu: Any, gpus: int, assumptions: Any = None) -> Option:
    """The estimate of `w` split `gpus` ways on `gpu`, priced at that GPU's own price (never a node's
    price for another GPU: pass `assumptions` only when they belong to this GPU)."""
    from aiworkbook.sizing.estimate import estimate
    from aiworkbook.specs import load_gpu

    g = load_gpu(gpu) if isinstance(gpu, str) else gpu
    est = estimate(spec, replace(w, tp=gpus), gpu=g, assumptions=assumptions)
    c = est.to_dict()["cost"]
    price = c.get("price_per_gpu_hour")
    n = int(c.get("gpus") or gpus)
    return Option(
        gpu=g.name,
        gpus=n,
        usd_per_hour=gpu_usd(price, n) if price else None,
        usd_per_mtok=c.get("decode_usd_per_mtok"),
        usd_per_mtok_trained=c.get("usd_per_mtok_trained"),
        usd_per_run=(c.get("run") or {}).get("usd"),
        joules_per_mtok=c.get("joules_per_mtok_trained" if w.training else "decode_joules_per_mtok"),
    )


def needs(
    spec: Any, w: Workload, gpu: Any, assumptions: Any = None, device: str = "cuda", rows: Any = None
) -> Needs:
    """Does `w` fit one `gpu` as given; if not, how many of them (tensor parallel), and which catalogue
    GPU holds it at the lowest $/hour; each option priced on its own GPU. `rows`: `capacity.per_gpu`'s
    rows for this workload when the caller has them (the sizer's table), so they are not sized twice."""
    from aiworkbook.sizing import capacity
    from aiworkbook.specs import load_gpu

    g = load_gpu(gpu) if isinstance(gpu, str) else gpu
    w.check_against(spec)
    ok = bool(capacity.fits(spec, w, g, device)["fits"])
    n_here = w.tp if ok else capacity.gpus_needed(spec, w, g, device)
    here = option(spec, w, g, n_here, assumptions) if n_here is not None else None
    best = capacity.cheapest_of(rows) if rows is not None else capacity.cheapest_gpu(spec, w, device)
    cheapest = None
    if best is not None:
        if here is not None and best["gpu"] == here.gpu and best["gpus"] == here.gpus:
            cheapest = here
        else:
            cheapest = option(spec, w, best["gpu"], best["gpus"])
    return Needs(fits=ok, gpu=g.name, here=here, cheapest=cheapest)
