"""The answer for one workload, computed once: does it fit the chosen GPU, on how many of which GPUs
(tp × dp), at what price and from which price source, and the deployment that realises it.

The sizer's headline, `aiworkbook size`/`fit` (text and JSON) and the report's headline, cost table and
deployment render this object; none of them counts GPUs or picks a price on its own. A set-up that
does not fit carries no price except on the GPUs it needs (aiworkbook.sizing.needs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiworkbook.message import Joined, Msg
from aiworkbook.sizing.cost import per_gpu_hour
from aiworkbook.sizing.needs import Needs, Option, needs
from aiworkbook.sizing.prices import provenance
from aiworkbook.sizing.workload import Workload

if TYPE_CHECKING:
    pass

#: where a price comes from when the user passed none: the GPU catalogue's list price
CATALOGUE = "catalogue list price"
CATALOGUE_WORDS = "list price"


@dataclass(frozen=True)
class Deployment:
    """How the answer runs: the engine that serves it (vLLM for inference), on `gpus` × `gpu` at
    tensor parallel `tp`, as the Kubernetes resource `resource` × `count`. `engine_note`: where the
    deployment's engine needs a different tensor-parallel size than the sizing engine, both named."""

    engine: str
    gpu: str
    tp: int
    resource: str
    count: int
    engine_note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Answer:
    """`fits`: the workload as given fits one `gpu` (per tensor-parallel rank); `option`: the set-up the
    answer recommends and prices (as given when it fits, else what it needs: `needs.priced`), None when
    nothing in the catalogue holds it; `price_source`: where $/GPU-hour comes from."""

    model: str
    mode: str
    fits: bool
    gpu: str
    given: int  # GPUs the workload asks for as given (tp × dp for training, tp for serving)
    needs: Needs
    price_source: str
    deployment: Deployment | None
    #: the price's provenance in words (`provenance`): kind, source, date and basis
    price_words: Msg = Msg("price.catalogue")

    @property
    def option(self) -> Option | None:
        return self.needs.priced

    @property
    def gpus(self) -> int | None:
        """GPUs the answer runs on (tp × dp for training, tp for serving); None: none holds it."""
        return self.option.gpus if self.option is not None else None

    @property
    def on(self) -> str | None:
        """The GPU kind the answer runs on (the chosen one when it fits)."""
        return self.option.gpu if self.option is not None else None

    @property
    def usd_per_mtok(self) -> float | None:
        """The headline price: $ per million output tokens (serving) or tokens trained (training)."""
        o = self.option
        if o is None:
            return None
        return o.usd_per_mtok if self.mode == "infer" else o.usd_per_mtok_trained

    def to_dict(self) -> dict[str, Any]:
        o = self.option
        return {
            "fits": self.fits,
            "gpu": self.gpu,
            "gpus_given": self.given,
            "runs_on": {"gpu": self.on, "gpus": self.gpus, "mig": o.mig or None} if o is not None else None,
            "usd_per_gpu_hour": per_gpu_hour(o.usd_per_hour, o.gpus)
            if o is not None and o.usd_per_hour
            else None,
            "usd_per_hour": o.usd_per_hour if o is not None else None,
            "usd_per_mtok": self.usd_per_mtok,
            "price_source": self.price_source,
            "price_basis": "a lower bound at roofline throughput",
            "price_words": str(self.price_words),
            "deployment": self.deployment.to_dict() if self.deployment is not None else None,
            "options": self.needs.to_dict(),
        }


def price_source(assumptions: Any, gpu: Any = None) -> str:
    """The source of the $/GPU-hour the answer uses: the user's or node's, else the GPU's list price
    with its source and date (the catalogue's, or a --prices file's)."""
    if assumptions is not None and assumptions.price_per_gpu_hour is not None:
        return str(assumptions.source)
    if gpu is not None and gpu.price_source:
        from aiworkbook.specs.gpu import user_priced

        words = "price" if user_priced(gpu.name) else CATALOGUE_WORDS
        return f"{words}, {gpu.price_source}, {gpu.price_date}"
    return CATALOGUE


def _deployment(spec: Any, w: Workload, o: Option) -> Deployment | None:
    """The placement of the answer's option (aiworkbook.sizing.placement); None where it cannot be
    placed (a training set-up that does not fit at the answer's size)."""
    from dataclasses import replace

    from aiworkbook.errors import SpecError
    from aiworkbook.sizing.placement import placement
    from aiworkbook.specs import load_gpu

    tp = o.gpus // (w.dp if w.training else 1)
    at = replace(w, tp=max(1, tp))
    try:
        pl = placement(spec, at, load_gpu(o.gpu))
    except SpecError:
        return None
    note = ""
    if pl.workload.tp != at.tp:
        note = Msg(
            "answer.engine_note", engine=at.engine, tp=at.tp, used=pl.workload.engine, used_tp=pl.workload.tp
        )
    return Deployment(pl.workload.engine, o.gpu, pl.workload.tp, pl.resource, pl.count, note)


def mig_words(gpu: Any, profile: str) -> Msg:
    """ "one MIG 1g.10gb instance: 1/7 of the GPU's compute and price" (placement.mig_share)."""
    p = next(m for m in gpu.mig_profiles if m.name == profile)
    return Msg("price.mig_share", profile=p.name, slices=p.compute_slices, total=gpu.mig_compute_slices)


def answer(
    spec: Any, w: Workload, gpu: Any, assumptions: Any = None, device: str = "cuda", rows: Any = None
) -> Answer:
    """The answer for `w` on the chosen `gpu` (a name or GPUSpec). `assumptions` price the chosen GPU
    only (a node's price never prices another GPU); `rows`: `capacity.per_gpu`'s rows when the caller
    has them, so they are not sized twice."""
    n = needs(spec, w, gpu, assumptions, device, rows)
    from aiworkbook.errors import SpecError
    from aiworkbook.specs import load_gpu

    mine = n.priced is not None and n.priced is n.here
    try:
        on = load_gpu(n.priced.gpu) if n.priced is not None else None
    except SpecError:  # a measured GPU file outside the catalogue: its price has no catalogue source
        on = None
    src = price_source(assumptions if mine else None, on)
    said = provenance(assumptions if mine else None, on)
    if n.priced is not None and n.priced.mig and on is not None:  # a MIG instance's share of the price
        share = mig_words(on, n.priced.mig)
        said, src = Joined(said, "; ", share), f"{src}; {share}"
    dep = _deployment(spec, w, n.priced) if n.priced is not None else None
    given = w.tp * (w.dp if w.training else 1)
    return Answer(spec.name, "train" if w.training else "infer", n.fits, n.gpu, given, n, src, dep, said)
