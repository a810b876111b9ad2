"""A window of samples and its summary: mean/min/max/p95 per metric, energy in joules, the share of
time each throttle reason was active, the phases seen, and the events in the window.

Energy comes from the GPU's total-energy counter (last minus first read) when every read in the
window has it; otherwise the power draw is integrated over the sample times (trapezoid rule),
and `energy_method` says which. Throttle shares are fractions of the samples whose reasons were
readable. The summary is JSON-safe so a ProofResult can store it as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aiworkbook.telemetry.na import NA, is_number, na_reason
from aiworkbook.telemetry.sample import Sample

#: Counters and masks, not levels: their mean means nothing.
_NOT_SUMMARISED = {"energy_mj", "throttle_mask", "index"}


def _stats(values: list[float]) -> dict[str, float]:
    import numpy as np

    a = np.asarray(values, dtype=float)
    return {
        "mean": float(a.mean()),
        "min": float(a.min()),
        "max": float(a.max()),
        "p95": float(np.percentile(a, 95)),
        "n": int(a.size),
    }


class Window:
    """Samples between two monotonic times (and optionally of one phase)."""

    def __init__(self, samples: Sequence[Sample], events: Sequence[dict[str, Any]] = ()) -> None:
        self.samples = list(samples)
        self.events = list(events)

    def __len__(self) -> int:
        return len(self.samples)

    @property
    def duration_s(self) -> float:
        return self.samples[-1].t - self.samples[0].t if len(self.samples) > 1 else 0.0

    def phases(self) -> list[str]:
        """Phases seen, in order of first appearance."""
        seen: dict[str, None] = {}
        for s in self.samples:
            if s.phase:
                seen.setdefault(s.phase)
        return list(seen)

    def _series(self) -> tuple[dict[str, list[float]], dict[str, str]]:
        values: dict[str, list[float]] = {}
        missing: dict[str, str] = {}
        for s in self.samples:
            items = [(f"gpu{g.get('index', 0)}.{k}", v) for g in s.gpus for k, v in g.items()]
            items += [(f"host.{k}", v) for k, v in s.host.items()]
            for key, v in items:
                if key.rsplit(".", 1)[1] in _NOT_SUMMARISED:
                    continue
                if is_number(v):
                    values.setdefault(key, []).append(float(v))
                elif (why := na_reason(v)) is not None:
                    missing[key] = why
        return values, {k: r for k, r in missing.items() if k not in values}

    def energy_j(self) -> dict[str, tuple[float | NA, str]]:
        """Per GPU: (joules, method) over the window."""
        out: dict[str, tuple[float | NA, str]] = {}
        gpu_ids = sorted({g.get("index", 0) for s in self.samples for g in s.gpus})
        for i in gpu_ids:
            rows = [(s.t, next((g for g in s.gpus if g.get("index", 0) == i), {})) for s in self.samples]
            counters: list[Any] = [g.get("energy_mj") for _, g in rows]
            if len(rows) < 2:
                out[f"gpu{i}"] = (NA("fewer than 2 samples"), "none")
                continue
            if all(is_number(c) for c in counters) and all(
                b >= a for a, b in zip(counters, counters[1:], strict=False)
            ):
                out[f"gpu{i}"] = ((counters[-1] - counters[0]) / 1000.0, "energy counter")
                continue
            pts: list[tuple[float, Any]] = [
                (t, g.get("power_w")) for t, g in rows if is_number(g.get("power_w"))
            ]
            if len(pts) < 2:
                out[f"gpu{i}"] = (NA("no energy counter and no power readings"), "none")
                continue
            joules = sum((t1 - t0) * (p0 + p1) / 2 for (t0, p0), (t1, p1) in zip(pts, pts[1:], strict=False))
            out[f"gpu{i}"] = (joules, "power integral")
        return out

    def throttle_share(self) -> dict[str, dict[str, float]]:
        """Per GPU: {reason: fraction of readable samples where it was active}."""
        counts: dict[str, dict[str, int]] = {}
        totals: dict[str, int] = {}
        for s in self.samples:
            for g in s.gpus:
                reasons = g.get("throttle_reasons")
                if not isinstance(reasons, list):
                    continue
                key = f"gpu{g.get('index', 0)}"
                totals[key] = totals.get(key, 0) + 1
                c = counts.setdefault(key, {})
                for r in reasons:
                    c[r] = c.get(r, 0) + 1
        return {k: {r: n / totals[k] for r, n in sorted(counts.get(k, {}).items())} for k in totals}

    @property
    def start_wall(self) -> float | None:
        return self.samples[0].wall if self.samples else None

    def summary(self) -> dict[str, Any]:
        """JSON-safe: n_samples, duration_s, phases, metrics{key: stats}, unavailable{key: reason},
        energy_j{gpu: J or {"na"}}, energy_method, throttle_share{gpu: {reason: share}}, events."""
        return summary_of(self)

    def to_dataframe(self):
        from aiworkbook.telemetry.export import to_dataframe

        return to_dataframe(self.samples)


def summary_of(w: Any) -> dict[str, Any]:
    """The summary of a window, row-based (Window) or columnar (columns.ColumnWindow): both offer
    _series, energy_j, phases, throttle_share, duration_s, start_wall and events."""
    values, missing = w._series()
    energy = w.energy_j()
    return {
        "n_samples": len(w),
        "duration_s": w.duration_s,
        "start_wall": w.start_wall,
        "phases": w.phases(),
        "metrics": {k: _stats(v) for k, v in sorted(values.items())},
        "unavailable": dict(sorted(missing.items())),
        "energy_j": {k: (v.to_json() if isinstance(v, NA) else v) for k, (v, _m) in energy.items()},
        "energy_method": {k: m for k, (_v, m) in energy.items()},
        "throttle_share": w.throttle_share(),
        "events": list(w.events),
    }
