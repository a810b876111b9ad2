"""XID and other critical GPU events through an NVML event set, kept as a timeline.

NVML queues events in the driver; `poll()` drains them without blocking (wait 0 ms), so the
sampler can call it on every tick. An XID is the driver's error code for a GPU fault (79: fell off
the bus, 48: double-bit ECC, 13/31/43: application faults); the names below follow NVIDIA's XID
catalogue for the common ones.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from aiworkbook.message import Msg
from aiworkbook.telemetry import nvml_backend
from aiworkbook.telemetry.na import is_na

#: XID -> the message id of what it means (NVIDIA's XID catalogue, the common ones; the words in
#: aiworkbook/locale, `describe()` says them)
XID_NAMES: dict[int, str] = {
    13: "xid.graphics_exception",
    31: "xid.memory_page_fault",
    43: "xid.stopped_processing",
    45: "xid.preemptive_cleanup",
    48: "xid.double_bit_ecc",
    61: "xid.microcontroller_breakpoint",
    62: "xid.microcontroller_halt",
    63: "xid.row_remap_recorded",
    64: "xid.row_remap_failure",
    74: "xid.nvlink",
    79: "xid.fell_off_bus",
    92: "xid.single_bit_ecc_rate",
    94: "xid.contained_ecc",
    95: "xid.uncontained_ecc",
    119: "xid.gsp_timeout",
    120: "xid.gsp_error",
}

#: XIDs NVIDIA's catalogue attributes to the application (its own fault, or its process killed: the
#: GPU is healthy); any other XID is a fault of the GPU, its memory, its links or the driver
#: (`check --passive` fails on it).
APPLICATION_XIDS = frozenset({13, 31, 43, 45})


def describe(xid: int) -> Msg:
    """What XID `xid` means, as a message (an XID not listed points to NVIDIA's catalogue)."""
    return Msg(XID_NAMES.get(xid, "xid.unknown"))


#: pynvml event-type constant -> our name. Registered as (mask & nvmlDeviceGetSupportedEventTypes);
#: constants missing from an older nvidia-ml-py count as 0 (not registered).
_TYPES = {
    "nvmlEventTypeXidCriticalError": "xid",
    "nvmlEventTypeDoubleBitEccError": "double_bit_ecc",
    "nvmlEventTypeSingleBitEccError": "single_bit_ecc",
    "nvmlEventTypeDramRetirementFailure": "dram_retirement_failure",
    "nvmlEventTypeFatalPoisonError": "fatal_poison",
    "nvmlEventTypeGpuUnavailableError": "gpu_unavailable",
}

#: c_nvmlEventData_t.gpuInstanceId / computeInstanceId when the event is not tied to a MIG instance.
_NO_INSTANCE = 0xFFFFFFFF


def _address(handle: Any) -> Any:
    """A device handle's identity: real handles are ctypes pointers (c_nvmlDevice_t), and two
    pointer objects to the same device never compare equal, so compare the addresses."""
    try:
        import ctypes

        return ctypes.cast(handle, ctypes.c_void_p).value
    except Exception:  # not a ctypes pointer
        return handle


class EventTimeline:
    """Registers every device for critical events once; `poll()` appends what arrived to `events`."""

    def __init__(
        self, handles: list[Any], max_events: int = 10_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        """`clock` stamps each event's `t`: the sampler passes its own, so windows filter events on
        the same time base as samples."""
        self.events: list[dict[str, Any]] = []
        self._clock = clock
        self.status = "not started"
        self._handles = handles
        self._max = max_events
        self._set: Any = None
        self._lock = threading.Lock()
        self._open()

    def _open(self) -> None:
        why = nvml_backend.ensure()
        if why is not None:
            self.status = f"unavailable ({why})"
            return
        nv = nvml_backend.module()
        es = nvml_backend.call("nvmlEventSetCreate")
        if is_na(es):
            self.status = f"unavailable ({es.reason})"
            return
        mask = 0
        for name in _TYPES:
            mask |= int(getattr(nv, name, 0))
        registered = []
        for i, h in enumerate(self._handles):
            if is_na(h):
                continue
            supported = nvml_backend.call("nvmlDeviceGetSupportedEventTypes", h)
            m = mask & int(supported) if not is_na(supported) else mask
            if m and not is_na(nvml_backend.call("nvmlDeviceRegisterEvents", h, m, es)):
                registered.append(i)
        self._set = es
        self.status = f"watching GPU(s) {registered}" if registered else "no device supports critical events"

    def _index(self, dev: Any) -> int | None:
        addr = _address(dev)
        for i, h in enumerate(self._handles):
            if not is_na(h) and (h is dev or _address(h) == addr):
                return i
        idx = nvml_backend.call("nvmlDeviceGetIndex", dev)
        return None if is_na(idx) else int(idx)

    def poll(self, max_events: int = 64) -> list[dict[str, Any]]:
        """Drain queued events without blocking; returns the new ones (also kept in `events`)."""
        if self._set is None:
            return []
        nv = nvml_backend.module()
        new = []
        with self._lock:
            for _ in range(max_events):
                data = nvml_backend.call("nvmlEventSetWait_v2", self._set, 0)
                if is_na(data):  # timeout: nothing queued
                    break
                kind = next(
                    (v for k, v in _TYPES.items() if int(getattr(nv, k, -1)) == int(data.eventType)), "other"
                )
                ev = {
                    "wall": time.time(),
                    "t": self._clock(),
                    "gpu": self._index(data.device),
                    "type": kind,
                    "data": int(data.eventData),
                }
                if kind == "xid":  # eventData holds the XID number
                    ev["xid"] = int(data.eventData)
                    ev["description"] = describe(int(data.eventData))
                gi = getattr(data, "gpuInstanceId", _NO_INSTANCE)
                if gi != _NO_INSTANCE:  # an event of one MIG instance
                    ev["gpu_instance"] = int(gi)
                    ci = getattr(data, "computeInstanceId", _NO_INSTANCE)
                    if ci != _NO_INSTANCE:
                        ev["compute_instance"] = int(ci)
                new.append(ev)
            self.events.extend(new)
            del self.events[: max(0, len(self.events) - self._max)]
        return new

    def close(self) -> None:
        if self._set is not None:
            nvml_backend.call("nvmlEventSetFree", self._set)
            self._set = None
