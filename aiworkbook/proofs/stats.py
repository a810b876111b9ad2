"""Summary statistics of repeated trials: median and spread, never the best run as typical."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

from pydantic import ConfigDict, Field
from pydantic.dataclasses import dataclass

from aiworkbook.errors import SpecError

SPREAD_LIMIT = 0.10  # IQR/median above this earns a spread warning


@dataclass(frozen=True, config=ConfigDict(strict=True, allow_inf_nan=False))
class Stats:
    """n, median, IQR, p5/p95, min/max/mean and a bootstrap confidence interval for the median. The one
    declaration: proofs build it (`summarize`) and a profile's or result file's `stats` is read as it
    (profile/schema.py), finite numbers only; `spread` in a stored dict is derived, so not read back."""

    n: Annotated[int, Field(ge=0)]
    median: float
    iqr: float
    p5: float
    p95: float
    mean: float
    min: float
    max: float
    ci_low: float
    ci_high: float
    ci_level: float

    @property
    def spread(self) -> float:
        """IQR relative to the median (0 when the median is 0)."""
        return self.iqr / abs(self.median) if self.median else 0.0

    @property
    def wide(self) -> bool:
        return self.spread > SPREAD_LIMIT

    def to_dict(self) -> dict:
        return {**asdict(self), "spread": self.spread}

    @classmethod
    def from_dict(cls, d: dict) -> Stats:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__})


def bootstrap_median_ci(
    samples, level: float = 0.95, n_boot: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap of the median: resample with replacement, take the level's quantiles."""
    import numpy as np  # here, not at import: a dashboard plans a proof before its page is ready

    x = np.asarray(samples, dtype=float)
    if x.size == 1:
        return float(x[0]), float(x[0])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(n_boot, x.size))
    meds = np.median(x[idx], axis=1)
    alpha = (1 - level) / 2
    return float(np.quantile(meds, alpha)), float(np.quantile(meds, 1 - alpha))


def summarize(samples, ci_level: float = 0.95, n_boot: int = 2000, seed: int = 0) -> Stats:
    """Stats of a non-empty sequence of finite numbers; bad input raises SpecError."""
    import numpy as np

    x = np.asarray(list(samples), dtype=float)
    if x.size == 0:
        raise SpecError("samples", [], "at least one sample")
    if not np.all(np.isfinite(x)):
        raise SpecError("samples", "non-finite value", "finite numbers")
    if not 0 < ci_level < 1:
        raise SpecError("ci_level", ci_level, "0 < level < 1")
    q5, q25, q50, q75, q95 = np.quantile(x, [0.05, 0.25, 0.5, 0.75, 0.95])
    lo, hi = bootstrap_median_ci(x, ci_level, n_boot, seed)
    return Stats(
        n=int(x.size),
        median=float(q50),
        iqr=float(q75 - q25),
        p5=float(q5),
        p95=float(q95),
        mean=float(x.mean()),
        min=float(x.min()),
        max=float(x.max()),
        ci_low=lo,
        ci_high=hi,
        ci_level=ci_level,
    )
