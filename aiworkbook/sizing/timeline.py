"""When a training step's tensors are alive: its peak is the largest of its phases, not their sum.

Gradients are freed between steps (zero_grad(set_to_none=True), PyTorch's default; not where a framework
keeps them in a buffer, `gradients_resident`) and appear during
backward while the activations are freed layer by layer; a checkpointed layer's recompute exists only
during its own backward. So the step's peak above the resident states (weights, optimizer, master) is

- F, the loss's backward: the kept activations + the saved logits + the loss's transient gradients;
- H, the head's backward: the kept activations + the head's weight gradient + the logits' gradient (with
  loss chunks the saved chunks and one chunk's transient are still there);
- T, the top layer's backward: every kept activation + its recompute + the head's weight gradient;
- B, the bottom layer's backward: its kept input and recompute + every gradient (activations and
  gradients trade linearly in between, so the ends bound the layers);
- S, the optimizer step: every gradient + the step's temporaries (`optimizer_step`: foreach AdamW, torch's
  default on CUDA, holds sqrt(exp_avg_sq) of the whole group; fused and the 8-bit kernels hold none).

Measured on the CPU by counting live storages through a step of a transformers Llama (see
docs/sizing.md): within 0.1 % without checkpointing; with it 3-7 % low (a layer's backward transients
are not counted).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiworkbook.sizing import activations as act
from aiworkbook.sizing.states import recipe_bytes, width
from aiworkbook.sizing.workload import Workload

if TYPE_CHECKING:
    from aiworkbook.sizing.expr import Num
    from aiworkbook.specs.protocol import ModelSpecLike

#: Recipes whose frameworks keep gradients in buffers allocated once (Megatron's fp32 main_grad buffer,
#: DeepSpeed's contiguous gradient partitions): zeroed each step, never freed.
RESIDENT_GRAD_RECIPES = ("megatron-bf16", "zero-mixed")


def gradients_resident(w: Workload) -> bool:
    """Gradients alive through the whole step: a framework buffer (RESIDENT_GRAD_RECIPES) or DDP's and
    ZeRO-1/2's flat gradient buckets (dp > 1 below ZeRO-3). Plain PyTorch on one GPU and FSDP free them
    between steps (zero_grad(set_to_none=True), the default)."""
    return w.recipe in RESIDENT_GRAD_RECIPES or (w.dp > 1 and w.zero < 3)


PHASES = ("loss backward", "head backward", "top layer backward", "bottom layer backward", "optimizer step")


def phase_bytes(spec: ModelSpecLike, w: Workload, b: Num, s: Num, c: dict[str, Any], transient: Num, t: act.ActivationTerms | None = None, step_tmp: Num = 0) -> dict[str, Any]:  # fmt: skip
    """Bytes above the resident states in each phase (see the module docstring); `c` holds the
    gradients, activations and logits components, `transient` the loss's backward transient, `step_tmp`
    the optimizer step's temporaries."""
    t = act.terms(spec, w) if t is None else t
    kept, once = act._layer_split(spec, w, b * s, s, t)
    grads, acts, logits = c["gradients"], c["activations"], c["logits"]
    before_recompute = acts - once // w.tp
    gb = recipe_bytes(w.recipe, w.precision)[1]
    head = spec.vocab_size * spec.hidden_size * gb // w.tp if w.mode == "train" and spec.is_decoder else 0
    head = min(head, grads)  # optimizer in backward, offloaded or sharded gradients
    resident = 0
    if gradients_resident(w):  # every gradient is there already: the head's adds nothing
        resident, head = grads, 0
    chunked = w.loss_chunks is not None or w.chunked_loss
    if chunked or not spec.is_decoder:
        head_grad_in = logits + transient
    else:  # the 16-bit gradient of the logits, the loss's tensors freed
        head_grad_in = width(w.precision) * b * s * spec.vocab_size // w.tp
    bottom = (kept // w.tp if w.checkpointing == "full" else 0) + once // w.tp + grads
    return dict(
        zip(
            PHASES,
            (
                resident + before_recompute + logits + transient,
                resident + before_recompute + head + head_grad_in,
                resident + acts + head,
                bottom + 0 * acts,
                grads + step_tmp + 0 * acts,
            ),
            strict=True,
        )
    )


def step_peak(phases: dict[str, Any]) -> tuple[Num, str]:
    """(the largest phase's bytes, its name) for scalars; bytes only when b or s are arrays."""
    vals = list(phases.values())
    peak = vals[0]
    for v in vals[1:]:
        peak = act._max(peak, v)
    if hasattr(peak, "clip"):
        return peak, ""
    return peak, max(phases, key=lambda k: phases[k])
