"""One pass over a workload: the model states, the activation terms, the optimizer step's temporaries and
the served weights computed once, and every section of an Estimate derived from them.

`estimate()` builds one `SizingPass`; the memory breakdown, the fit verdict, the roofline, storage and
cost read it instead of returning to states.py and activations.py. Capacity's solvers evaluate other
batches and lengths with `memory.evaluate(pass, b, s)`: the per-token coefficients are reused, but the
breakdown is still evaluated at each shape, not scaled, because it is not linear in b·s (paged KV rounds
to blocks, the chunked loss and the engines' prefill are capped, the loss transient and a training step's
peak are maxima). tools/sizing_call_counts.py counts the calls; tests/test_sizing_onepass.py bounds them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiworkbook.sizing import activations as act
from aiworkbook.sizing import optimizer_step
from aiworkbook.sizing.expr import Term
from aiworkbook.sizing.states import (
    States,
    inference_weight_term,
    model_states,
    trainable_and_optimizer,
    zero3_gather_bytes,
)
from aiworkbook.sizing.workload import Workload

if TYPE_CHECKING:
    from aiworkbook.specs.protocol import ModelSpecLike

#: where the workload runs: cuda carries a CUDA context, workspace and reserve; cpu none of them
DEVICES = ("cuda", "cpu")


def default_device(gpu: Any, node: Any = None) -> str:
    """cpu for a measured host spec (vendor "host") or a node without GPUs (the CPU-only reference node):
    no CUDA context, workspace or reserve; else cuda."""
    if gpu is not None:
        return "cpu" if getattr(gpu, "vendor", "") == "host" else "cuda"
    if (
        node is not None
        and not node.gpu
        and not node.gpu_count
        and node.gpu_calibrated is None
        and not node.pools
    ):
        return "cpu"
    return "cuda"


@dataclass(frozen=True)
class SizingPass:
    """Everything about a workload that does not depend on the batch and length, computed once."""

    spec: Any  # ModelSpecLike
    w: Workload
    device: str
    states: States
    trainable: int
    #: Optimizer-state bytes before sharding (trainable_and_optimizer's second value) and its Term.
    optimizer_bytes: int
    optimizer_term: Term
    #: Training's activation coefficients (None for inference).
    terms: act.ActivationTerms | None
    step: optimizer_step.StepTemporaries
    zero3_gather: int
    #: Inference: the served weights at the workload's weights dtype, with their formula
    #: (inference_weight_term); None for training.
    weight_term: Term | None

    @property
    def weight_bytes(self) -> tuple[int, str] | None:
        """The served weights' (bytes, formula); None for training."""
        t = self.weight_term
        return None if t is None else (t.value, t.text)


def sizing_pass(spec: ModelSpecLike, w: Workload, device: str = "cuda") -> SizingPass:
    """Enter states.py and activations.py once for `w`: the terms every section derives from."""
    trainable, opt, opt_term = trainable_and_optimizer(spec, w)
    served = None if w.training else inference_weight_term(spec, w.weights_dtype)
    return SizingPass(
        spec=spec,
        w=w,
        device=device,
        states=model_states(spec, w, (trainable, opt, opt_term), served),
        trainable=trainable,
        optimizer_bytes=opt,
        optimizer_term=opt_term,
        terms=act.terms(spec, w, device) if w.training else None,
        step=optimizer_step.temporaries(spec, w, device, trainable=trainable),
        zero3_gather=zero3_gather_bytes(spec, w),
        weight_term=served,
    )
