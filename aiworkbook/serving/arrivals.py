"""Load shapes: arrival schedules (Poisson, gamma with a burstiness factor, all at once) and
prompt/output lengths (fixed, uniform or lognormal), all from one seeded generator.

Gamma with shape = burstiness and mean 1/rate is vLLM's `--burstiness`: 1 is Poisson, below 1
burstier, above 1 more regular.
"""

from __future__ import annotations

import numpy as np

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg

LENGTHS = ("fixed", "uniform", "lognormal")


def schedule(n: int, rate: float | None, *, burstiness: float = 1.0, seed: int = 0) -> list[float]:
    """Offsets in seconds of n arrivals from the start. rate None or inf: all at 0 (a burst)."""
    if n < 0:
        raise SpecError("requests", n, ">= 0")
    if rate is None or rate == float("inf"):
        return [0.0] * n
    if not rate > 0:
        raise SpecError("rate", rate, Msg("allowed.rate"))
    if not burstiness > 0:
        raise SpecError("burstiness", burstiness, Msg("allowed.burstiness"))
    rng = np.random.default_rng(seed)
    gaps = rng.gamma(shape=burstiness, scale=1.0 / (rate * burstiness), size=n)
    gaps[0] = 0.0
    return [float(x) for x in np.cumsum(gaps)]


def lengths(n: int, mean: int, *, dist: str = "fixed", spread: float = 0.5, seed: int = 0) -> list[int]:
    """n lengths around `mean`: fixed, uniform in mean*(1 +- spread), or lognormal (sigma = spread)."""
    if mean < 1:
        raise SpecError("length", mean, ">= 1 token")
    if dist not in LENGTHS:
        raise SpecError("length_dist", dist, ", ".join(LENGTHS))
    if dist == "fixed":
        return [int(mean)] * n
    rng = np.random.default_rng(seed + 7919)
    if dist == "uniform":
        lo, hi = max(1, round(mean * (1 - spread))), max(1, round(mean * (1 + spread)))
        return [int(x) for x in rng.integers(lo, hi + 1, size=n)]
    x = rng.lognormal(np.log(mean) - spread**2 / 2, spread, size=n)
    return [max(1, round(float(v))) for v in x]
