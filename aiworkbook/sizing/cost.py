"""Cost: $ per million tokens (prefill and decode apart, with utilisation and idle headroom), $ per
training run including work lost to failures, and energy in joules per million tokens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg

if TYPE_CHECKING:
    from aiworkbook.sizing.expr import Num


def usd_per_million_tokens(
    price_per_gpu_hour: float, gpus: int, tokens_per_s: Num, utilization: float = 1.0
) -> Num:
    """1e6 · price · GPUs / (3600 · tokens/s · utilisation)."""
    if not 0 < utilization <= 1:
        raise SpecError("utilization", utilization, Msg("allowed.fraction_above_0"))
    return 1e6 * price_per_gpu_hour * gpus / (3600 * tokens_per_s * utilization)


def serving_cost(
    price_per_gpu_hour: float,
    gpus: int,
    prefill_tokens_per_s: float,
    decode_tokens_per_s: float | None,
    utilization: float = 0.7,
    headroom: float = 0.3,
) -> dict[str, Any]:
    """$ per million prompt and generated tokens; `headroom` is idle capacity kept for latency (20-40 %: docs/architecture.md).
    decode_tokens_per_s None (an encoder-only model generates nothing): no decode figure."""
    if not 0 <= headroom < 1:
        raise SpecError("headroom", headroom, Msg("allowed.fraction_below_1"))
    eff = utilization * (1 - headroom)
    out = {
        "prefill_usd_per_mtok": usd_per_million_tokens(price_per_gpu_hour, gpus, prefill_tokens_per_s, eff)
    }
    if decode_tokens_per_s:
        out["decode_usd_per_mtok"] = usd_per_million_tokens(
            price_per_gpu_hour, gpus, decode_tokens_per_s, eff
        )
    out["effective_utilization"] = eff
    return out


def joules_per_million_tokens(watts_per_gpu: float, gpus: int, tokens_per_s: Num, pue: float = 1.0) -> Num:
    """Energy per million tokens at the facility: W · GPUs · PUE / (tokens/s) · 1e6."""
    return watts_per_gpu * gpus * pue / tokens_per_s * 1e6


def training_run_cost(
    gpu_hours_ideal: float, price_per_gpu_hour: float, waste_fraction: float = 0.0
) -> dict[str, Any]:
    """$ of a run whose useful work is `gpu_hours_ideal`, inflated by the share lost to failures and checkpoints."""
    if not 0 <= waste_fraction < 1:
        raise SpecError("waste_fraction", waste_fraction, Msg("allowed.fraction_below_1"))
    hours = gpu_hours_ideal / (1 - waste_fraction)
    return {
        "gpu_hours": hours,
        "usd": hours * price_per_gpu_hour,
        "usd_lost": (hours - gpu_hours_ideal) * price_per_gpu_hour,
    }
