"""A fake NVML for tests without a GPU: stubs the pynvml functions per device profile (gpustat's
approach), so the real aiworkbook code paths run against known answers.

    with FakeNVML([DATACENTER, CONSUMER]) as fake:
        reader = GPUReader(clock=fake.clock)
        fake.advance(1.0)          # fake time: energy counters grow by power x dt
        fake.lose(1)               # GPU 1 falls off the bus: every call raises GpuIsLost
        fake.inject_xid(0, 79)     # an XID event for the event set

Profiles are plain dicts; `unsupported` maps a pynvml function name to the error it raises.
Usable by other engineers' tests: `from tests.fake_nvml import FakeNVML, DATACENTER` (or add tests/ to
sys.path). Installing resets aiworkbook.telemetry.nvml_backend so NVML is "initialised" afresh.
"""

from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Any

import pynvml

NS = pynvml.NVML_ERROR_NOT_SUPPORTED
FNF = pynvml.NVML_ERROR_FUNCTION_NOT_FOUND

DATACENTER: dict[str, Any] = {
    "name": "NVIDIA H100 80GB HBM3",
    "uuid": "GPU-00000000-fake-h100",
    "bus_id": "00000000:18:00.0",
    "vbios": "96.00.99.00.01",
    "cc": (9, 0),
    "mem_total": 85_520_809_984,
    "mem_used": 1_048_576_000,
    "mem_reserved": 570_425_344,
    "util": (87, 45),
    "temp": 54,
    "power_mw": 412_000,
    "power_limit_mw": 700_000,
    "energy_mj": 1_000_000,
    "sm_clock": 1755,
    "mem_clock": 2619,
    "sm_clock_max": 1980,
    "mem_clock_max": 2619,
    "pstate": 0,
    "throttle": 0x4,  # sw_power_cap
    "ecc": (3, 0, 12, 0),  # volatile corrected/uncorrected, aggregate corrected/uncorrected
    "remapped": (0, 0, 0, 0),
    "pcie": (5, 16),
    "pcie_kbps": (1000, 2000),  # tx, rx in KB/s
    "nvlinks": 18,
    "mig": None,
    "processes": [(4242, 1_000_000_000)],
    "unsupported": {},
}

MIG: dict[str, Any] = {
    **DATACENTER,
    "name": "NVIDIA A100-SXM4-80GB",
    "uuid": "GPU-00000000-fake-a100-mig",
    "cc": (8, 0),
    "power_limit_mw": 400_000,
    "mig": [(0, "MIG-fake-0", 20_000_000_000, 5_000_000), (2, "MIG-fake-2", 40_000_000_000, 7_000_000)],
    "processes": [(4243, None)],
    "nvlinks": 12,
    "unsupported": {
        "nvmlDeviceGetUtilizationRates": NS,
        "nvmlDeviceGetRemappedRows": NS,
        "nvmlDeviceGetSamples": NS,
    },
}

CONSUMER: dict[str, Any] = {
    **DATACENTER,
    "name": "NVIDIA GeForce RTX 4090",
    "uuid": "GPU-00000000-fake-4090",
    "cc": (8, 9),
    "mem_total": 25_757_220_864,
    "power_limit_mw": 450_000,
    "throttle": 0x1,  # idle
    "nvlinks": 0,
    "unsupported": {
        "nvmlDeviceGetTotalEccErrors": NS,
        "nvmlDeviceGetRemappedRows": NS,
        "nvmlDeviceGetNvLinkState": NS,
    },
}

OLD_DRIVER: dict[str, Any] = {
    **CONSUMER,
    "name": "NVIDIA GeForce GTX 1080",
    "uuid": "GPU-00000000-fake-1080",
    "unsupported": {
        **CONSUMER["unsupported"],
        "nvmlDeviceGetCurrentClocksEventReasons": FNF,
        "nvmlDeviceGetCurrentClocksThrottleReasons": FNF,
        "nvmlDeviceGetTotalEnergyConsumption": FNF,
        "nvmlDeviceGetSamples": FNF,
        "nvmlSystemGetCudaDriverVersion": FNF,
    },
}

#: The stubbed functions (every one the telemetry package calls).
STUBBED = (
    "nvmlInit nvmlShutdown nvmlSystemGetDriverVersion nvmlSystemGetCudaDriverVersion nvmlDeviceGetCount "
    "nvmlDeviceGetHandleByIndex nvmlDeviceGetName nvmlDeviceGetUUID nvmlDeviceGetPciInfo nvmlDeviceGetVbiosVersion "
    "nvmlDeviceGetCudaComputeCapability nvmlDeviceGetMigMode nvmlDeviceGetMaxMigDeviceCount "
    "nvmlDeviceGetMigDeviceHandleByIndex nvmlDeviceGetMemoryInfo nvmlDeviceGetUtilizationRates "
    "nvmlDeviceGetTemperature nvmlDeviceGetPowerUsage nvmlDeviceGetEnforcedPowerLimit "
    "nvmlDeviceGetTotalEnergyConsumption nvmlDeviceGetClockInfo nvmlDeviceGetMaxClockInfo "
    "nvmlDeviceGetPerformanceState nvmlDeviceGetCurrentClocksEventReasons "
    "nvmlDeviceGetCurrentClocksThrottleReasons nvmlDeviceGetTotalEccErrors nvmlDeviceGetRemappedRows "
    "nvmlDeviceGetCurrPcieLinkGeneration nvmlDeviceGetCurrPcieLinkWidth nvmlDeviceGetPcieThroughput "
    "nvmlDeviceGetNvLinkState nvmlDeviceGetComputeRunningProcesses nvmlDeviceGetSamples "
    "nvmlEventSetCreate nvmlDeviceRegisterEvents nvmlEventSetWait_v2 nvmlEventSetWait nvmlEventSetFree "
    "nvmlDeviceGetSupportedEventTypes"
).split()


def _err(code: int) -> pynvml.NVMLError:
    return pynvml.NVMLError(code)


class FakeNVML:
    """Installs stubs for STUBBED on the pynvml module; `driver=False` makes nvmlInit fail."""

    def __init__(
        self, profiles: list[dict[str, Any]], *, driver: bool = True, driver_version: str = "550.54.15"
    ):
        self.profiles = [copy.deepcopy(p) for p in profiles]
        self.driver = driver
        self.driver_version = driver_version
        self.now = 100.0
        self.lost: set[int] = set()
        self.calls = 0
        self.events: list[SimpleNamespace] = []
        self._saved: dict[str, Any] = {}

    # -- control -------------------------------------------------------------------------------
    def clock(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """Move fake time on; each device's energy counter grows by its power draw."""
        self.now += seconds
        for p in self.profiles:
            p["energy_mj"] += int(p["power_mw"] * seconds)  # mW * s = mJ

    def lose(self, index: int) -> None:
        self.lost.add(index)

    def inject_xid(self, index: int, xid: int) -> None:
        self.events.append(
            SimpleNamespace(
                device=("dev", index),
                eventType=pynvml.nvmlEventTypeXidCriticalError,
                eventData=xid,
                gpuInstanceId=0xFFFFFFFF,
                computeInstanceId=0xFFFFFFFF,
            )
        )

    # -- install -------------------------------------------------------------------------------
    def install(self) -> FakeNVML:
        from aiworkbook.telemetry import nvml_backend

        nvml_backend.reset()
        for name in STUBBED:
            self._saved[name] = getattr(pynvml, name, None)
            setattr(pynvml, name, self._stub(name))
        return self

    def uninstall(self) -> None:
        from aiworkbook.telemetry import nvml_backend

        nvml_backend.reset()
        for name, fn in self._saved.items():
            setattr(pynvml, name, fn)
        self._saved.clear()

    def __enter__(self) -> FakeNVML:
        return self.install()

    def __exit__(self, *exc) -> None:
        self.uninstall()

    # -- the stubs -----------------------------------------------------------------------------
    def _stub(self, name: str):
        impl = getattr(self, "_" + name)

        def stub(*args, **kwargs):
            self.calls += 1
            if name not in ("nvmlInit", "nvmlShutdown") and not self.driver:
                raise _err(pynvml.NVML_ERROR_UNINITIALIZED)
            handle = args[0] if args and isinstance(args[0], tuple) and args[0][0] == "dev" else None
            if handle is not None:
                if handle[1] in self.lost:
                    raise _err(pynvml.NVML_ERROR_GPU_IS_LOST)
                code = self.profiles[handle[1]]["unsupported"].get(name)
                if code is not None:
                    raise _err(code)
                return impl(self.profiles[handle[1]], *args[1:], **kwargs)
            return impl(*args, **kwargs)

        return stub

    def _nvmlInit(self):
        if not self.driver:
            raise _err(pynvml.NVML_ERROR_DRIVER_NOT_LOADED)

    def _nvmlShutdown(self):
        return None

    def _nvmlSystemGetDriverVersion(self):
        return self.driver_version

    def _nvmlSystemGetCudaDriverVersion(self):
        return 12040

    def _nvmlDeviceGetCount(self):
        return len(self.profiles)

    def _nvmlDeviceGetHandleByIndex(self, i):
        if not 0 <= i < len(self.profiles):
            raise _err(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return ("dev", i)

    def _nvmlDeviceGetName(self, p):
        return p["name"]

    def _nvmlDeviceGetUUID(self, p):
        return p[1] if isinstance(p, tuple) else p["uuid"]  # a MIG handle carries its own UUID

    def _nvmlDeviceGetPciInfo(self, p):
        return SimpleNamespace(busId=p["bus_id"])

    def _nvmlDeviceGetVbiosVersion(self, p):
        return p["vbios"]

    def _nvmlDeviceGetCudaComputeCapability(self, p):
        return p["cc"]

    def _nvmlDeviceGetMigMode(self, p):
        return (1, 1) if p["mig"] else (0, 0)

    def _nvmlDeviceGetMaxMigDeviceCount(self, p):
        if not p["mig"]:
            raise _err(NS)
        return 7

    def _nvmlDeviceGetMigDeviceHandleByIndex(self, p, j):
        for slot, uuid, total, used in p["mig"] or []:
            if slot == j:
                return ("mig", uuid, total, used)
        raise _err(pynvml.NVML_ERROR_NOT_FOUND)

    def _nvmlDeviceGetMemoryInfo(self, p, version=None):
        if isinstance(p, tuple) and p[0] == "mig":  # a MIG handle (not a ("dev", i) handle)
            return SimpleNamespace(total=p[2], used=p[3], free=p[2] - p[3])
        used, total = p["mem_used"], p["mem_total"]
        reserved = p["mem_reserved"] if version else 0
        return SimpleNamespace(total=total, used=used, free=total - used - reserved, reserved=reserved)

    def _nvmlDeviceGetUtilizationRates(self, p):
        return SimpleNamespace(gpu=p["util"][0], memory=p["util"][1])

    def _nvmlDeviceGetTemperature(self, p, sensor):
        return p["temp"]

    def _nvmlDeviceGetPowerUsage(self, p):
        return p["power_mw"]

    def _nvmlDeviceGetEnforcedPowerLimit(self, p):
        return p["power_limit_mw"]

    def _nvmlDeviceGetTotalEnergyConsumption(self, p):
        return p["energy_mj"]

    def _nvmlDeviceGetClockInfo(self, p, kind):
        return p["sm_clock"] if kind == pynvml.NVML_CLOCK_SM else p["mem_clock"]

    def _nvmlDeviceGetMaxClockInfo(self, p, kind):
        return p["sm_clock_max"] if kind == pynvml.NVML_CLOCK_SM else p["mem_clock_max"]

    def _nvmlDeviceGetPerformanceState(self, p):
        return p["pstate"]

    def _nvmlDeviceGetCurrentClocksEventReasons(self, p):
        return p["throttle"]

    _nvmlDeviceGetCurrentClocksThrottleReasons = _nvmlDeviceGetCurrentClocksEventReasons

    def _nvmlDeviceGetTotalEccErrors(self, p, err_type, counter):
        i = (0 if counter == pynvml.NVML_VOLATILE_ECC else 2) + (
            0 if err_type == pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED else 1
        )
        return p["ecc"][i]

    def _nvmlDeviceGetRemappedRows(self, p):
        return p["remapped"]

    def _nvmlDeviceGetCurrPcieLinkGeneration(self, p):
        return p["pcie"][0]

    def _nvmlDeviceGetCurrPcieLinkWidth(self, p):
        return p["pcie"][1]

    def _nvmlDeviceGetPcieThroughput(self, p, counter):
        return p["pcie_kbps"][0 if counter == pynvml.NVML_PCIE_UTIL_TX_BYTES else 1]

    def _nvmlDeviceGetNvLinkState(self, p, link):
        if link >= p["nvlinks"]:
            raise _err(NS if link == 0 else pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return 1

    def _nvmlDeviceGetComputeRunningProcesses(self, p):
        return [SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in p["processes"]]

    def _nvmlDeviceGetSamples(self, p, kind, since_us):
        """Ten samples 100 ms apart ending at the fake clock, values from util/power."""
        end = int(self.now * 1e6)
        value = p["util"][0] if kind == pynvml.NVML_GPU_UTILIZATION_SAMPLES else p["power_mw"]
        rows = [
            SimpleNamespace(timeStamp=end - k * 100_000, sampleValue=SimpleNamespace(uiVal=value))
            for k in range(9, -1, -1)
        ]
        return 1, [r for r in rows if r.timeStamp > since_us]

    def _nvmlEventSetCreate(self):
        return ("eventset",)

    def _nvmlDeviceRegisterEvents(self, p, types, event_set):
        return None

    def _nvmlDeviceGetSupportedEventTypes(self, p):
        return pynvml.nvmlEventTypeXidCriticalError

    def _nvmlEventSetWait_v2(self, event_set, timeout_ms):
        if not self.events:
            raise _err(pynvml.NVML_ERROR_TIMEOUT)
        return self.events.pop(0)

    _nvmlEventSetWait = _nvmlEventSetWait_v2

    def _nvmlEventSetFree(self, event_set):
        return None
