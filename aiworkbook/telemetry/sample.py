"""One sample: monotonic and wall timestamps, the phase tag, per-GPU and host metrics."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from aiworkbook.telemetry.na import NA, from_json, is_number, to_json


@dataclass(frozen=True)
class Sample:
    t: float  # time.monotonic(): for windows and rates
    wall: float  # time.time(): for people and exports
    phase: str | None = None
    gpus: tuple[dict[str, Any], ...] = ()
    host: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """JSON-safe (NA becomes {"na": reason}); the row format of JSONL logs and traces."""
        return {
            "t": self.t,
            "wall": self.wall,
            "phase": self.phase,
            "gpus": to_json(list(self.gpus)),
            "host": to_json(self.host),
        }

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> Sample:
        return cls(
            t=float(row["t"]),
            wall=float(row.get("wall", row["t"])),
            phase=row.get("phase"),
            gpus=tuple(from_json(g) for g in row.get("gpus", [])),
            host=from_json(row.get("host", {})),
        )

    def flat(self) -> dict[str, Any]:
        """One level of keys ("gpu0.power_w", "host.cpu_pct") for pandas/CSV: NA becomes NaN,
        throttle reasons a '|'-joined string, process lists a count, per-core CPU is dropped."""
        out: dict[str, Any] = {"t": self.t, "wall": self.wall, "phase": self.phase or ""}
        for g in self.gpus:
            i = g.get("index", 0)
            for k, v in g.items():
                if k == "index":
                    continue
                out[f"gpu{i}.{k}"] = _flat_value(k, v)
        for k, v in self.host.items():
            if k != "cpu_per_core_pct":
                out[f"host.{k}"] = _flat_value(k, v)
        return out


def _flat_value(key: str, v: Any) -> Any:
    if isinstance(v, NA):
        return math.nan
    if key == "throttle_reasons" and isinstance(v, list):
        return "|".join(v)
    if key in ("processes", "mig_instances") and isinstance(v, list):
        return len(v)
    if isinstance(v, bool):
        return int(v)
    return v if is_number(v) or isinstance(v, str) else math.nan
