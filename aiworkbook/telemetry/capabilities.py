"""The capability matrix: per device and metric group, "ok" or why not, probed once.

A reason in PERMANENT (not supported, no permission, an old driver) means the group is not asked
again on every poll: the reader answers NA(reason) straight away, which keeps polling cheap on a
MIG or consumer GPU. Anything else (timeout, no data yet) is retried on the next poll.
"""

from __future__ import annotations

from typing import Any

from aiworkbook.message import Msg, words
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


def format_matrix(matrix: list[dict[str, Any]], lang: str = "en") -> str:
    """A plain-text table in `lang`: one row per group, one column per GPU ("ok" or the reason). A
    reason NVML gave is a message said in `lang`; one a recording kept as text stays as recorded."""
    if not matrix:
        return Msg("capability.no_gpus").render(lang)
    groups = [g.name for g in GROUPS]
    names = {g: Msg(f"capability.group.{g}").render(lang) for g in groups}
    width = max(len(n) for n in names.values()) + 2
    gpus = (Msg("capability.gpu", index=i).render(lang).ljust(24) for i in range(len(matrix)))
    rows = [Msg("capability.metric").render(lang).ljust(width) + "  ".join(gpus)]
    for g in groups:
        cells = (_cell(m.get(g, "?"), lang).ljust(24) for m in matrix)
        rows.append(names[g].ljust(width) + "  ".join(cells))
    return "\n".join(rows)


def _cell(status: object, lang: str) -> str:
    """ "ok", or why not, in `lang`."""
    return Msg("capability.ok").render(lang) if status == "ok" else words(status, lang)
