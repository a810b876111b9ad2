"""GPUReader: identity and live metrics of every NVIDIA GPU through NVML, one dict per device.

Every field is a number, a list or a marked NA with its reason; a failing metric never raises and
one failing or lost GPU never stops the others. The capability matrix is probed once when the
devices are opened; unsupported groups are then answered without calling NVML again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from aiworkbook.message import Msg
from aiworkbook.telemetry import nvml_backend
from aiworkbook.telemetry.capabilities import is_permanent, probe, read_group
from aiworkbook.telemetry.gpu_metrics import GROUPS
from aiworkbook.telemetry.na import NA, is_na
from aiworkbook.telemetry.rates import RateTracker

LOST = "GPU is lost"


class GPUReader:
    """Reads all GPUs of this machine. `clock` (monotonic seconds) is injectable for tests."""

    source = "nvml"

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._opened = False
        self._status = ""
        self._handles: list[Any] = []
        self._caps: list[dict[str, str]] = []
        self._static: list[dict[str, Any]] = []
        self._lost: set[int] = set()
        self._rates = RateTracker()
        self._read_lock = threading.Lock()  # the sampler thread and environment() may both read

    # -- opening -------------------------------------------------------------------------------
    def _open(self) -> None:
        with self._lock:
            if self._opened:
                return
            self._opened = True
            why = nvml_backend.ensure()
            if why is not None:
                self._status = Msg("gpu.none_found", why=why)
                return
            n = nvml_backend.call("nvmlDeviceGetCount")
            if is_na(n):
                self._status = Msg("gpu.none_found", why=n.reason)
                return
            if n == 0:
                self._status = Msg("gpu.none_found", why=Msg("gpu.zero_devices"))
                return
            for i in range(int(n)):
                h = nvml_backend.call("nvmlDeviceGetHandleByIndex", i)
                self._handles.append(h)
                if is_na(h):
                    self._caps.append({g.name: h.reason for g in GROUPS})
                    self._static.append({})
                    continue
                self._caps.append(probe(h))
                self._static.append(self._read_groups(i, h, static=True))
            names = [nvml_backend.text(nvml_backend.call("nvmlDeviceGetName", h)) for h in self._handles]
            self._status = Msg("gpu.found", n=int(n), names=", ".join(str(x) for x in names))

    def status(self) -> str:
        """'N NVIDIA GPU(s): <names>' or 'no NVIDIA GPU found (<reason>)'."""
        self._open()
        return self._status

    def count(self) -> int:
        self._open()
        return len(self._handles)

    def capabilities(self) -> list[dict[str, str]]:
        """Per device: {group: "ok" | reason}, as probed when the devices were opened."""
        self._open()
        return [dict(c) for c in self._caps]

    # -- identity ------------------------------------------------------------------------------
    def identity(self, index: int) -> dict[str, Any]:
        """Name, UUID, bus id, driver, CUDA driver, VBIOS, compute capability, MIG mode and instances."""
        self._open()
        h = self._handles[index]
        c = nvml_backend.call
        t = nvml_backend.text
        pci = c("nvmlDeviceGetPciInfo", h)
        cc = c("nvmlDeviceGetCudaComputeCapability", h)
        mig = c("nvmlDeviceGetMigMode", h)
        cuda = c("nvmlSystemGetCudaDriverVersion")
        mem = c("nvmlDeviceGetMemoryInfo", h)
        ident = {
            "index": index,
            "name": t(c("nvmlDeviceGetName", h)),
            "uuid": t(c("nvmlDeviceGetUUID", h)),
            "bus_id": pci if is_na(pci) else t(getattr(pci, "busId", getattr(pci, "busIdLegacy", ""))),
            "driver": t(c("nvmlSystemGetDriverVersion")),
            "cuda_driver": cuda if is_na(cuda) else f"{int(cuda) // 1000}.{int(cuda) % 1000 // 10}",
            "vbios": t(c("nvmlDeviceGetVbiosVersion", h)),
            "compute_capability": cc if is_na(cc) else ".".join(str(x) for x in cc),
            "memory_total_bytes": mem if is_na(mem) else int(mem.total),
            "mig_mode": mig if is_na(mig) else ("enabled" if mig[0] else "disabled"),
        }
        ident["mig_instances"] = self._mig_instances(h) if ident["mig_mode"] == "enabled" else []
        return ident

    def identities(self) -> list[dict[str, Any]]:
        return [self.identity(i) for i in range(self.count())]

    def _mig_instances(self, h) -> Any:
        n = nvml_backend.call("nvmlDeviceGetMaxMigDeviceCount", h)
        if is_na(n):
            return n
        out = []
        for j in range(int(n)):  # n = the most MIG devices this GPU can hold, not how many exist
            mh = nvml_backend.call("nvmlDeviceGetMigDeviceHandleByIndex", h, j)
            if is_na(mh):  # no MIG device at this index: NVML answers "not found"
                if mh.reason == LOST:
                    return mh
                continue
            mem = nvml_backend.call("nvmlDeviceGetMemoryInfo", mh)
            out.append(
                {
                    "index": j,
                    "uuid": nvml_backend.text(nvml_backend.call("nvmlDeviceGetUUID", mh)),
                    "mem_total_bytes": mem if is_na(mem) else int(mem.total),
                    "mem_used_bytes": mem if is_na(mem) else int(mem.used),
                }
            )
        return out

    # -- metrics -------------------------------------------------------------------------------
    def _read_groups(self, index: int, h, static: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        caps = self._caps[index]
        for g in GROUPS:
            if g.per_poll == static:
                continue
            cap = caps.get(g.name, "ok")
            if index in self._lost:
                values, why = None, LOST
            elif cap != "ok" and is_permanent(cap):
                values, why = None, cap
            else:
                values, why = read_group(g, h)
                if why == LOST:
                    self._lost.add(index)
            for k, f in enumerate(g.fields):
                out[f] = values[k] if values is not None else NA(why)
        return out

    def read(self, index: int) -> dict[str, Any]:
        """One device's metrics now: its index and every field of gpu_metrics.FIELDS."""
        self._open()
        h = self._handles[index]
        t = self._clock()
        if is_na(h):
            from aiworkbook.telemetry.gpu_metrics import FIELDS

            return {"index": index, **{f: h for f in FIELDS}}
        out: dict[str, Any] = {"index": index}
        with self._read_lock:
            out.update(self._read_groups(index, h, static=False))
            out.update(self._static[index])
            out["power_avg_w"] = self._rates.rate(f"{index}.energy", out.get("energy_mj"), t, scale=1e-3)
        return out

    def read_all(self) -> list[dict[str, Any]]:
        return [self.read(i) for i in range(self.count())]

    def handles(self) -> list[Any]:
        """The NVML device handles (NA for a device whose handle failed), for the event timeline."""
        self._open()
        return list(self._handles)

    def lost(self) -> set[int]:
        return set(self._lost)

    # -- sub-second history --------------------------------------------------------------------
    def history(self, index: int, kind: str = "gpu_util", since_us: int = 0) -> Any:
        """NVML's own sample buffer (nvmlDeviceGetSamples): [(timestamp_us, value)] since `since_us`.

        kind 'gpu_util' (percent) or 'power' (watts). Gives sub-second history without fast polling.
        """
        self._open()
        if index in self._lost:
            return NA(LOST)
        nv = nvml_backend.module() if nvml_backend.ensure() is None else None
        if nv is None:
            return NA(self._status)
        types = {"gpu_util": "NVML_GPU_UTILIZATION_SAMPLES", "power": "NVML_TOTAL_POWER_SAMPLES"}
        if kind not in types:
            from aiworkbook.errors import SpecError

            raise SpecError("kind", kind, ", ".join(types))
        res = nvml_backend.call(
            "nvmlDeviceGetSamples", self._handles[index], getattr(nv, types[kind]), int(since_us)
        )
        if is_na(res):
            # NVML answers NOT_FOUND when its buffer holds no sample newer than `since_us`
            return [] if res.reason == "not found" else res
        vtype, samples = res  # (nvmlValueType_t, [c_nvmlSample_t(timeStamp, sampleValue union)])
        attr = _VALUE_FIELDS.get(int(vtype), "uiVal")
        scale = 1e-3 if kind == "power" else 1.0  # power samples are milliwatts
        return [(int(s.timeStamp), float(getattr(s.sampleValue, attr)) * scale) for s in samples]


#: nvmlValueType_t (NVML_VALUE_TYPE_*) -> the c_nvmlValue_t union member that holds the value.
#: Utilisation and power samples come as NVML_VALUE_TYPE_UNSIGNED_INT (uiVal): percent, milliwatts.
#: tests/test_telemetry_nvml_api.py checks this against the installed pynvml.
_VALUE_FIELDS = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}
