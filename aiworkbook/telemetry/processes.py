"""GPU compute processes mapped to host process names (psutil), with a small name cache."""

from __future__ import annotations

from typing import Any

import psutil

_names: dict[int, str] = {}


def process_name(pid: int) -> str:
    """The host name of a process, '?' when it is gone or hidden (another container, no permission)."""
    name = _names.get(pid)
    if name is None:
        try:
            name = psutil.Process(pid).name()
        except (psutil.Error, OSError):
            name = "?"
        if len(_names) > 4096:
            _names.clear()
        _names[pid] = name
    return name


def describe(procs: list[Any]) -> list[dict[str, Any]]:
    """[{pid, name, used_bytes}] from NVML process records (used memory None under WDDM/MIG)."""
    out = []
    for p in procs:
        used = getattr(p, "usedGpuMemory", None)
        out.append(
            {
                "pid": int(p.pid),
                "name": process_name(int(p.pid)),
                "used_bytes": None if used is None else int(used),
            }
        )
    return out
