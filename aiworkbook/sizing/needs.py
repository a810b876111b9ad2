"""What a set-up needs, priced honestly: a workload that does not fit its GPU is never priced on that
one GPU. The answer names the GPUs it needs (tensor parallel on the chosen kind, and the cheapest
catalogue option) and prices the option it recommends, each at its own GPU's list price.

The sizer's headline and the offline report read this; widgets only format it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from aiworkbook.sizing.cost import gpu_usd, instance_hour_price
from aiworkbook.sizing.workload import Workload


@dataclass(frozen=True)
class Option:
    """`gpus` × `gpu` (tensor parallel) holds the workload; its prices come from that GPU's catalogue
    price (None where the catalogue has none). `mig`: one MIG instance of that profile holds it, and
    the option is sized and priced on the instance: `share` of the GPU's compute and of its price."""

    gpu: str
    gpus: int
    usd_per_hour: float | None
    usd_per_mtok: float | None  # serving: $ per million output tokens on this set-up
    usd_per_mtok_trained: float | None  # training: $ per million tokens trained on this set-up
    usd_per_run: float | None  # training with a token budget: $ of the whole run
    #: energy per million of the tokens priced (output tokens served, or tokens trained), GPUs at TDP
    #: and the assumed PUE: an upper bound on power at a lower bound on time
    joules_per_mtok: float | None = None
    #: serving: $ per million prompt tokens (prefill) on this set-up
    usd_per_mtok_prefill: float | None = None
    mig: str = ""
    share: float = 1.0

    @property
    def on(self) -> str:
        """What the option runs on, as a deployment names it: `H100-SXM` or `H100-SXM MIG 1g.10gb`."""
        from aiworkbook.sizing.placement import instance_name

        return instance_name(self.gpu, self.mig) if self.mig else self.gpu

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


def option(spec: Any, w: Workload, gpu: Any, gpus: int, assumptions: Any = None, mig: str = "") -> Option:
    """The estimate of `w` split `gpus` ways on `gpu`, priced at that GPU's own price (never a node's
    price for another GPU: pass `assumptions` only when they belong to this GPU). `mig`: on one MIG
    instance of that profile (aiworkbook.sizing.placement.mig_slice), at its share of the price."""
    from aiworkbook.sizing.estimate import estimate
    from aiworkbook.specs import load_gpu

    g = load_gpu(gpu) if isinstance(gpu, str) else gpu
    share = 1.0
    on = g
    if mig:
        from aiworkbook.sizing.placement import mig_share, mig_slice

        share = mig_share(g, mig)[0]
        on = mig_slice(g, mig)
        if assumptions is not None and assumptions.price_per_gpu_hour is not None:
            given = instance_hour_price(assumptions.price_per_gpu_hour, share)
            assumptions = replace(assumptions, price_per_gpu_hour=given)
    est = estimate(spec, replace(w, tp=gpus), gpu=on, assumptions=assumptions)
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
        usd_per_mtok_prefill=c.get("prefill_usd_per_mtok"),
        mig=mig,
        share=share,
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
    pl = None
    if n_here == 1 and device == "cuda" and g.mig_profiles:
        from aiworkbook.sizing.placement import mig_placement

        pl = mig_placement(spec, w, g)
    if pl is not None:  # one MIG instance holds it as deployed (vLLM's arithmetic for serving): sized there
        here: Option | None = option(spec, pl.workload, g, 1, assumptions, pl.mig)
    else:
        here = option(spec, w, g, n_here, assumptions) if n_here is not None else None
    best = capacity.cheapest_of(rows) if rows is not None else capacity.cheapest_gpu(spec, w, device)
    cheapest = None
    if best is not None:
        # a MIG instance is never the catalogue's whole-GPU option
        if here is not None and not here.mig and best["gpu"] == here.gpu and best["gpus"] == here.gpus:
            cheapest = here
        else:
            cheapest = option(spec, w, best["gpu"], best["gpus"])
    return Needs(fits=ok, gpu=g.name, here=here, cheapest=cheapest)


def priced_cost(cost: dict[str, Any], o: Option | None) -> dict[str, Any]:
    """An estimate's cost section as the answer prices it: as stored, or, where the answer's option runs
    on a MIG instance, with that instance's prices (the share of the GPU the deployment pays for) and
    `on` naming the instance; what a cost line or table reads."""
    if o is None or not o.mig:
        return cost
    from aiworkbook.sizing.cost import per_gpu_hour

    run = dict(cost.get("run") or {})
    if o.usd_per_run is not None:
        run["usd"] = o.usd_per_run
    return {
        **cost,
        "price_per_gpu_hour": per_gpu_hour(o.usd_per_hour, o.gpus) if o.usd_per_hour else None,
        "gpus": o.gpus,
        "on": o.on,
        "decode_usd_per_mtok": o.usd_per_mtok,
        "prefill_usd_per_mtok": o.usd_per_mtok_prefill,
        "usd_per_mtok_trained": o.usd_per_mtok_trained,
        "run": run,
    }
