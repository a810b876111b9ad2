"""GPU compute processes mapped to host process names (psutil), with a small name cache.

NVML lists host PIDs. Inside a container with its own PID namespace the same numbers name other
processes (or none), so no name is looked up there: "?" rather than a wrong name.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import psutil

_names: dict[int, str] = {}

#: The inode of the initial PID namespace (PROC_PID_INIT_INO, include/linux/proc_ns.h in the kernel:
#: https://github.com/torvalds/linux/blob/master/include/linux/proc_ns.h); any other is a container's.
PROC_PID_INIT_INO = 0xEFFFFFFC


def own_pid_namespace(proc_root: str | os.PathLike = "/proc") -> bool:
    """True inside a container with its own PID namespace, where a host PID from NVML would look up the
    wrong process: /proc/self/ns/pid is not the initial namespace, or (a host /proc mounted in the
    container) /proc/self/status's NSpid lists more than one PID, one per nested namespace."""
    try:
        if os.stat(Path(proc_root) / "self" / "ns" / "pid").st_ino != PROC_PID_INIT_INO:
            return True
    except OSError:
        pass
    try:
        for line in (Path(proc_root) / "self" / "status").read_text(errors="replace").splitlines():
            if line.startswith("NSpid:"):
                return len(line.split()[1:]) > 1
    except OSError:
        pass
    return False


@functools.cache
def _here_is_own_namespace() -> bool:
    return own_pid_namespace()


def process_name(pid: int) -> str:
    """The host name of a process, '?' when it is gone or hidden (another container, no permission) or
    when this process runs in its own PID namespace (the number is a host PID)."""
    if _here_is_own_namespace():
        return "?"
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
