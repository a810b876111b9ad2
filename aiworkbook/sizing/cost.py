"""Cost: the one price rule ($/GPU-hour x GPUs x hours, `gpu_usd`; which $/GPU-hour, `gpu_hour_price`), $
per million tokens (prefill and decode apart, with utilisation and idle headroom), $ per training run
including work lost to failures, and energy in joules per million tokens. Every price the project
shows (size and fit JSON, the sizer, the report) is computed here (tests/test_price_rule.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg

if TYPE_CHECKING:
    from aiworkbook.sizing.expr import Num


def gpu_hour_price(given: float | None, gpu: Any) -> float:
    """The $/GPU-hour every figure for `gpu` uses: the price given for it (--price, its node's) when
    there is one, else the GPU's list price (0: it has none)."""
    return float(gpu.price_per_hour_usd) if given is None else given


def gpu_usd(price_per_gpu_hour: float, gpus: float = 1, hours: float = 1.0) -> float:
    """$/GPU-hour x GPUs x hours: the one price rule (by default an hour of `gpus` GPUs, i.e. $/hour;
    `gpus=1` when `hours` already counts GPU-hours)."""
    return price_per_gpu_hour * gpus * hours


def instance_hour_price(price_per_gpu_hour: float, share: float) -> float:
    """The $/hour of one MIG instance: its share of the GPU's compute slices of the GPU's $/hour (the
    other slices serve other instances; aiworkbook.sizing.placement.mig_share)."""
    return price_per_gpu_hour * share


def per_gpu_hour(usd_per_hour: float, gpus: float) -> float:
    """The $/GPU-hour of a set-up that costs `usd_per_hour` on `gpus` GPUs (gpu_usd's inverse)."""
    return usd_per_hour / gpus


def energy_usd(kwh: float, usd_per_kwh: float) -> float:
    """$ for `kwh` of energy at `usd_per_kwh`."""
    return kwh * usd_per_kwh


def usd_for_tokens(usd_per_mtok: float, tokens: float) -> float:
    """$ for `tokens` at `usd_per_mtok`: tokens / 10^6 x $ per million tokens."""
    return tokens / 1e6 * usd_per_mtok


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
        "usd": gpu_usd(price_per_gpu_hour, hours=hours),
        "usd_lost": gpu_usd(price_per_gpu_hour, hours=hours - gpu_hours_ideal),
    }
