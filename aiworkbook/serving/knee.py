"""Where the tail bends, and the most load that still meets an SLO.

Knee: the first load whose tail latency has grown `factor` times faster per unit of load than it did
between the two lightest loads (a flat-then-steep curve's elbow). With the lightest points flat
(slope near zero), the fallback is the first load whose tail exceeds `factor` x the lightest load's.
Throughput at a target latency: bisection on the load while the measured tail meets the SLO.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

KNEE_FACTOR = 2.0


def find_knee(
    rows: list[dict[str, Any]], key: str = "p99_ttft_s", factor: float = KNEE_FACTOR
) -> float | None:
    """The load at the start of the steep part of `key` vs load, or None when the tail never bends."""
    pts = sorted((float(r["load"]), float(r[key])) for r in rows if r.get(key) is not None)
    if len(pts) < 3:
        return None
    (l0, y0), (l1, y1) = pts[0], pts[1]
    base_slope = max((y1 - y0) / (l1 - l0), 0.0) if l1 > l0 else 0.0
    floor = max(y0, 1e-9)
    for (la, ya), (lb, yb) in zip(pts[1:], pts[2:], strict=False):
        slope = (yb - ya) / (lb - la) if lb > la else 0.0
        steep = slope > factor * base_slope if base_slope > 0 else False
        if (steep and yb > factor * floor) or (base_slope == 0 and yb > factor * floor):
            return la
    return None


def bisect_load(
    meets: Callable[[float], bool], low: float, high: float, *, steps: int = 6, integer: bool = False
) -> tuple[float | None, list[tuple[float, bool]]]:
    """The largest load in [low, high] for which `meets(load)` holds, by bisection (`steps` probes
    after the two ends); None when even `low` fails. Returns it and every (load, met) probe."""
    probes: list[tuple[float, bool]] = []

    def probe(x: float) -> bool:
        ok = meets(x)
        probes.append((x, ok))
        return ok

    if not probe(low):
        return None, probes
    if probe(high):
        return high, probes
    lo, hi = low, high
    for _ in range(steps):
        mid = (lo + hi) / 2
        if integer:
            mid = float(int(mid))
            if mid <= lo:
                break
        if probe(mid):
            lo = mid
        else:
            hi = mid
    return lo, probes
