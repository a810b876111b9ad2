"""XIDs for `check --passive`: an NVML event set registered for nvmlEventTypeXidCriticalError on every
GPU that supports it, then nvmlEventSetWait_v2 for a short window. NVML delivers only events that
happen after registration (no history: earlier XIDs are in the kernel log, `NVRM: Xid`), so the
check sees XIDs raised while it runs. An XID NVIDIA attributes to the application (13, 31, 43, 45)
is reported, not failed; any other fails the check."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from aiworkbook import nvml
from aiworkbook.message import Msg

#: How long the check waits for XIDs (seconds): short, inside Slurm's 60 s health-check limit.
XID_WAIT_S = 1.0
_MAX_EVENTS = 64


@dataclass
class XidWatch:
    xids: list[tuple[int | None, int]] = field(default_factory=list)  # (GPU index, XID)
    watched: list[int] = field(default_factory=list)  # GPUs registered for XIDs
    status: str = ""  # why no GPU was watched

    def critical(self) -> list[tuple[int | None, int]]:
        from aiworkbook.telemetry.events import APPLICATION_XIDS

        return [(g, x) for g, x in self.xids if x not in APPLICATION_XIDS]


def _index(dev: Any, handles: list[tuple[int, Any]]) -> int | None:
    import ctypes

    try:
        addr = ctypes.cast(dev, ctypes.c_void_p).value
        for i, h in handles:
            if ctypes.cast(h, ctypes.c_void_p).value == addr:
                return i
    except (ctypes.ArgumentError, TypeError):
        pass
    idx, _ = nvml.attempt("nvmlDeviceGetIndex", dev)
    return None if idx is None else int(idx)


def watch(count: int, wait_s: float = XID_WAIT_S) -> XidWatch:
    """Register GPUs 0..count-1 for XIDs and collect those that arrive within `wait_s`."""
    out = XidWatch()
    if count <= 0 or nvml.ensure() is not None:
        out.status = Msg("passive.xid.no_gpu")
        return out
    nv = nvml.module()
    xid = int(nv.nvmlEventTypeXidCriticalError)
    es, why = nvml.attempt("nvmlEventSetCreate")
    if es is None:
        out.status = Msg("passive.xid.no_event_set", why=why)
        return out
    handles: list[tuple[int, Any]] = []
    try:
        for i in range(count):
            h, _ = nvml.attempt("nvmlDeviceGetHandleByIndex", i)
            supported, _ = (
                nvml.attempt("nvmlDeviceGetSupportedEventTypes", h) if h is not None else (None, "")
            )
            if h is None or supported is None or not int(supported) & xid:
                continue
            _, why = nvml.attempt("nvmlDeviceRegisterEvents", h, xid, es)
            if why is None:
                handles.append((i, h))
                out.watched.append(i)
        if not handles:
            out.status = Msg("passive.xid.unsupported")
            return out
        deadline = time.monotonic() + wait_s
        for _ in range(_MAX_EVENTS):
            left_ms = max(0, int((deadline - time.monotonic()) * 1000))
            data, _ = nvml.attempt("nvmlEventSetWait_v2", es, left_ms)
            if data is None:  # the timeout passed with nothing queued (or the wait failed)
                break
            if int(data.eventType) & xid:
                out.xids.append((_index(data.device, handles), int(data.eventData)))
            if left_ms == 0:
                break
    finally:
        nvml.attempt("nvmlEventSetFree", es)
    return out
