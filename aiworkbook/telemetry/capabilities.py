"""The capability matrix: per device and metric group, "ok" or why not, probed once.

A reason in PERMANENT (not supported, no permission, an old driver) means the group is not asked
again on every poll: the reader answers NA(reason) straight away, which keeps polling cheap on a
MIG or consumer GPU. Anything else (timeout, no data yet) is retried on the next poll.
"""

from __future__ import annotations

from typing import Any

from aiworkbook.telemetry import nvml_backend
from aiworkbook.telemetry.gpu_metrics import GROUPS

PERMANENT = (
    "not supported",
    "no permission",
    "function not found (driver too old)",
    "missing from nvidia-ml-py",
)


def is_permanent(reason: str) -> bool:
    return any(p in reason for p in PERMANENT)


def read_group(group, handle) -> tuple[tuple | None, str]:
    """(values, "ok") or (None, reason), never raising."""
    try:
        return group.read(nvml_backend.module(), handle), "ok"
    except Exception as exc:
        return None, nvml_backend.reason(exc)


def probe(handle) -> dict[str, str]:
    """Every group's status on one device: {"memory": "ok", "utilization": "not supported", ...}."""
    return {g.name: read_group(g, handle)[1] for g in GROUPS}


def format_matrix(matrix: list[dict[str, Any]]) -> str:
    """A plain-text table: one row per group, one column per GPU ("ok" or the reason)."""
    if not matrix:
        return "(no GPUs)"
    groups = [g.name for g in GROUPS]
    width = max(len(g) for g in groups) + 2
    head = "metric".ljust(width) + "  ".join(f"GPU {i}".ljust(24) for i in range(len(matrix)))
    rows = [head]
    for g in groups:
        rows.append(g.ljust(width) + "  ".join(str(m.get(g, "?")).ljust(24) for m in matrix))
    return "\n".join(rows)
