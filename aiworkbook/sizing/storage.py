"""Storage: checkpoint sizes per recipe, write/restore time, Young and Daly intervals, goodput lost to
checkpoints and failures, and the data-loader rate that keeps the GPUs fed.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from aiworkbook.errors import SpecError
from aiworkbook.sizing.states import recipe_bytes

if TYPE_CHECKING:
    from aiworkbook.specs.protocol import ModelSpecLike


def checkpoint_bytes(
    spec: ModelSpecLike,
    recipe: str = "megatron-bf16",
    precision: str = "bf16-mixed",
    trainable: int | None = None,
    optimizer_bytes: int | None = None,
) -> dict[str, Any]:
    """Weights-only and resumable (weights + master + optimizer, no gradients) checkpoint bytes.

    `trainable` (default: every parameter) is what is saved: a LoRA run saves its adapters, not the
    frozen base. `optimizer_bytes` overrides trainable · the recipe's optimizer bytes (adafactor).
    """
    wb, _gb, ob, mb = recipe_bytes(recipe, precision)
    p = spec.params if trainable is None else trainable
    opt = p * ob if optimizer_bytes is None else optimizer_bytes
    return {"weights_only": p * wb, "resumable": p * (wb + mb) + opt}


def transfer_time(nbytes: int, throughput_bps: float) -> float:
    """Seconds to write or read `nbytes` at `throughput_bps` (decimal bytes/s)."""
    if throughput_bps <= 0:
        raise SpecError("throughput_bps", throughput_bps, "> 0")
    return nbytes / throughput_bps


def system_mtbf(gpu_mtbf_s: float, gpus: int) -> float:
    """Mean time between failures of the job: one GPU's MTBF over the GPU count."""
    if gpus < 1 or gpu_mtbf_s <= 0:
        raise SpecError("gpus", gpus, ">= 1 with gpu_mtbf_s > 0")
    return gpu_mtbf_s / gpus


def young_interval(delta_s: float, mtbf_s: float) -> float:
    """Young (1974): τ = √(2·δ·M)."""
    return math.sqrt(2 * delta_s * mtbf_s)


def daly_interval(delta_s: float, mtbf_s: float) -> float:
    """Daly (2006): τ = √(2δM)·(1 + ⅓√(δ/2M) + δ/(18M)) − δ for δ < 2M, else M."""
    if delta_s >= 2 * mtbf_s:
        return mtbf_s
    r = delta_s / (2 * mtbf_s)
    return math.sqrt(2 * delta_s * mtbf_s) * (1 + math.sqrt(r) / 3 + delta_s / (18 * mtbf_s)) - delta_s


def waste_fraction(delta_s: float, interval_s: float, mtbf_s: float, restart_s: float = 0.0) -> float:
    """Share of wall time lost: δ/τ for writing plus (τ/2 + R)/M for rework and restarts after failures."""
    return min(1.0, delta_s / interval_s + (interval_s / 2 + restart_s) / mtbf_s)


def checkpoint_plan(
    spec: ModelSpecLike,
    recipe: str,
    precision: str,
    write_bps: float,
    read_bps: float,
    gpu_mtbf_s: float,
    gpus: int,
    restart_s: float = 0.0,
    trainable: int | None = None,
    optimizer_bytes: int | None = None,
) -> dict[str, Any]:
    """Sizes, times, Young/Daly intervals and goodput for one training job."""
    size = checkpoint_bytes(spec, recipe, precision, trainable, optimizer_bytes)
    delta = transfer_time(size["resumable"], write_bps)
    restore = transfer_time(size["resumable"], read_bps)
    m = system_mtbf(gpu_mtbf_s, gpus)
    tau = daly_interval(delta, m)
    waste = waste_fraction(delta, tau, m, restart_s + restore)
    return {
        **{f"{k}_bytes": v for k, v in size.items()},
        "write_s": delta,
        "restore_s": restore,
        "system_mtbf_s": m,
        "young_interval_s": young_interval(delta, m),
        "daly_interval_s": tau,
        "waste_fraction": waste,
        "goodput": 1 - waste,
    }


def dataloader_rate(global_batch: int, step_time_s: float, bytes_per_sample: int) -> dict[str, Any]:
    """Samples/s and bytes/s the input pipeline must sustain so the GPUs never wait."""
    if step_time_s <= 0:
        raise SpecError("step_time_s", step_time_s, "> 0")
    sps = global_batch / step_time_s
    return {"samples_per_s": sps, "bytes_per_s": sps * bytes_per_sample}
