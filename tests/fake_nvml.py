"""A fake NVML for tests without a GPU: stubs the pynvml functions per device profile (gpustat's
approach), so the real aiworkbook code paths run against known answers.

    with FakeNVML([DATACENTER, CONSUMER]) as fake:
        reader = GPUReader(clock=fake.clock)
        fake.advance(1.0)          # fake time: energy counters grow by power x dt
        fake.lose(1)               # GPU 1 falls off the bus: every call raises GpuIsLost
        fake.inject_xid(0, 79)     # an XID event for the event set

Profiles are plain dicts; `unsupported` maps a pynvml function name (or a C symbol such as
"nvmlDeviceGetMemoryInfo_v2") to the NVML error code it raises.
Usable by other engineers' tests: `from tests.fake_nvml import FakeNVML, DATACENTER` (or add tests/ to
sys.path). Installing (and uninstalling) resets the process-wide NVML state every layer shares (aiworkbook.nvml,
the environment's cached reader, the shared telemetry sampler) so NVML is
"initialised" afresh.

The fake mirrors nvidia-ml-py (checked by tests/test_telemetry_nvml_api.py against the installed
pynvml.py): it replaces only functions that reach libnvidia-ml, under their real names and with
their real parameters; handles are real `c_nvmlDevice_t` pointers (a fresh pointer object per call,
as the real bindings return); answers are the real ctypes structs (c_nvmlMemory_v2_t, nvmlPciInfo_t,
c_nvmlSample_t with its c_nvmlValue_t union, c_nvmlEventData_t, ...); errors are real
`pynvml.NVMLError(code)` instances, i.e. the NVMLError_<Name> subclasses. Wrappers that only
delegate (nvmlInit -> nvmlInitWithFlags, nvmlDeviceGetPciInfo -> _v3, the unversioned
nvmlDeviceGetComputeRunningProcesses -> _v3 under throwOnVersionMismatch, nvmlEventSetWait -> _v2)
are left real, so their conversions (e.g. FunctionNotFound -> NVMLLibraryMismatchError) run too. A
call that slips through to the real library is recorded in `fake.unstubbed`.

Kinder than the real library no more (issue 23): calls that block in libnvidia-ml block here too
(`LATENCY_S`: nvmlDeviceGetPcieThroughput samples its counters for ~20 ms; `nvmlEventSetWait_v2`
waits its timeout when no event is queued), through an injected `sleep` (time.sleep by default; a test
passes `fake.advance` to spend fake time instead); process lists carry *host* PIDs (`pid_offset`: in a
container they differ from os.getpid() by the namespace, so a process never finds itself by its own
pid); a MIG parent refuses its process list without root (NoPermission: the per-instance lists are
on the MIG device handles); MIG device handles answer what NVML answers for them and fail the rest.

Where the fake still differs from the real library (not verified on hardware unless said):

| behaviour | real NVML | this fake |
|---|---|---|
| latency of other calls | ~10-100 us each; first nvmlInit ~0.1-1 s | instant |
| nvmlDeviceGetSamples | a ring buffer the driver fills at its own rate | ten samples 100 ms apart ending now |
| MIG device names | "NVIDIA A100-SXM4-80GB MIG 1g.10gb" (the profile) | parent name + " MIG <GB>gb" |
| MIG memory info v2 | a v2 struct; its `reserved` not verified here | a v2 struct with `reserved` 0 |
| CUDA driver version | what the installed driver supports | from the driver branch (580 -> 13.0, 550 -> 12.4) |
| MIG handles: parent-only calls | INVALID_ARGUMENT (believed, from the API docs) | INVALID_ARGUMENT |
| MIG handles: other device calls | most NOT_SUPPORTED, some answer per instance | NOT_SUPPORTED |
| process list on a MIG parent as root | aggregated over instances | the profile's list |
| usedGpuMemory | N/A under MIG without permission, and on WDDM | None where the profile says None |
| PID namespaces | host PIDs; the container's own PID is never listed | pid + pid_offset (0: bare metal) |
| energy, clocks, temperature | move on their own | move only with `advance` |
| GPU lost | every call GPU_IS_LOST, then recovery needs a reset | `lose(i)`: GPU_IS_LOST until the fake is rebuilt |
| thread safety | PcieThroughput is not thread safe | calls never interleave badly |
| GPU instances' handles | nvmlDeviceGetGpuInstances fills real handles | fills only the count |
| XID events | only those raised after nvmlDeviceRegisterEvents | `inject_xid` queues one; delivered once registered |
"""

from __future__ import annotations

import collections
import copy
import ctypes
import functools
import time
from collections.abc import Callable
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
    # nvidia-smi's total less what CUDA reports: the catalogue's H100-SXM usable_memory_bytes less its
    # cuda_memory_bytes (data/gpus/gpus.json; tests/test_preflight_visible.py checks they agree)
    "mem_reserved": 458_982_687,
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
    "event_types": (
        pynvml.nvmlEventTypeXidCriticalError
        | pynvml.nvmlEventTypeSingleBitEccError
        | pynvml.nvmlEventTypeDoubleBitEccError
    ),
    "unsupported": {},
}

MIG: dict[str, Any] = {
    **DATACENTER,
    "name": "NVIDIA A100-SXM4-80GB",
    "uuid": "GPU-00000000-fake-a100-mig",
    "cc": (8, 0),
    "power_limit_mw": 400_000,
    # MIG devices (index, uuid, total, used): NVML numbers existing MIG devices 0..n-1 under the parent
    "mig": [(0, "MIG-fake-0", 20_000_000_000, 5_000_000), (1, "MIG-fake-1", 40_000_000_000, 7_000_000)],
    "processes": [(4243, None)],
    "nvlinks": 12,
    # GPU-instance profiles an A100 80GB knows: profile index (NVML_GPU_INSTANCE_PROFILE_*) ->
    # (profile id, name as the v2 struct carries it, most instances); the other indices: NotSupported
    "gi_profiles": {
        0: (19, "MIG 1g.10gb", 7),
        1: (14, "MIG 2g.20gb", 3),
        2: (9, "MIG 3g.40gb", 2),
        3: (5, "MIG 4g.40gb", 1),
        4: (0, "MIG 7g.80gb", 1),
        7: (20, "MIG 1g.10gb+me", 1),
        9: (15, "MIG 1g.20gb", 4),
    },
    # GPU instances present (instance id, profile id): the two MIG devices above, 2g.20gb and 3g.40gb
    "gpu_instances": [(0, 14), (1, 9)],
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
    "event_types": pynvml.nvmlEventTypeXidCriticalError,
    "unsupported": {
        "nvmlDeviceGetTotalEccErrors": NS,
        "nvmlDeviceGetRemappedRows": NS,
        "nvmlDeviceGetNvLinkState": NS,
        "nvmlDeviceGetMigMode": NS,  # GeForce has no MIG: NVML answers NotSupported
    },
}

#: A Pascal card on an R470-era driver with today's nvidia-ml-py: the Python bindings all exist, but
#: the newer C symbols do not (FunctionNotFound at call time): clocks-event reasons (R535), memory
#: info v2, compute processes _v3; Pascal has no energy counter (NotSupported).
OLD_DRIVER: dict[str, Any] = {
    **CONSUMER,
    "name": "NVIDIA GeForce GTX 1080",
    "uuid": "GPU-00000000-fake-1080",
    "cc": (6, 1),
    "throttle": 0x1 | 0x4,  # idle, sw_power_cap: answered by the deprecated ThrottleReasons symbol
    "unsupported": {
        **CONSUMER["unsupported"],
        "nvmlDeviceGetCurrentClocksEventReasons": FNF,
        "nvmlDeviceGetMemoryInfo_v2": FNF,
        "nvmlDeviceGetComputeRunningProcesses_v3": FNF,
        "nvmlDeviceGetTotalEnergyConsumption": NS,
        "nvmlDeviceGetSamples": FNF,
    },
}

#: The stubbed functions: every nvidia-ml-py function on the telemetry's path that reaches the C
#: library (the delegating wrappers named in the module docstring stay real).
STUBBED = (
    "nvmlInitWithFlags nvmlShutdown nvmlSystemGetDriverVersion nvmlSystemGetCudaDriverVersion "
    "nvmlDeviceGetCount nvmlDeviceGetHandleByIndex nvmlDeviceGetHandleByUUID nvmlDeviceGetIndex nvmlDeviceGetName "
    "nvmlDeviceGetUUID nvmlDeviceGetPciInfo_v3 nvmlDeviceGetVbiosVersion "
    "nvmlDeviceGetCudaComputeCapability nvmlDeviceGetMigMode nvmlDeviceGetMaxMigDeviceCount "
    "nvmlDeviceGetMigDeviceHandleByIndex nvmlDeviceGetMemoryInfo nvmlDeviceGetUtilizationRates "
    "nvmlDeviceGetTemperature nvmlDeviceGetPowerUsage nvmlDeviceGetEnforcedPowerLimit "
    "nvmlDeviceGetTotalEnergyConsumption nvmlDeviceGetClockInfo nvmlDeviceGetMaxClockInfo "
    "nvmlDeviceGetPerformanceState nvmlDeviceGetCurrentClocksEventReasons "
    "nvmlDeviceGetCurrentClocksThrottleReasons nvmlDeviceGetTotalEccErrors nvmlDeviceGetRemappedRows "
    "nvmlDeviceGetCurrPcieLinkGeneration nvmlDeviceGetCurrPcieLinkWidth nvmlDeviceGetPcieThroughput "
    "nvmlDeviceGetNvLinkState nvmlDeviceGetComputeRunningProcesses_v3 "
    "nvmlDeviceGetComputeRunningProcesses_v2 nvmlDeviceGetSamples nvmlEventSetCreate "
    "nvmlDeviceGetSupportedEventTypes nvmlDeviceRegisterEvents nvmlEventSetWait_v2 nvmlEventSetFree "
    "nvmlDeviceIsMigDeviceHandle nvmlDeviceGetDeviceHandleFromMigDeviceHandle nvmlDeviceGetGpuInstanceId "
    "nvmlDeviceGetComputeInstanceId nvmlDeviceGetGpuInstanceProfileInfo nvmlDeviceGetGpuInstances"
).split()

#: Functions whose first parameter is a device handle (the stub passes the profile in its place).
_NO_HANDLE = {
    "nvmlInitWithFlags",
    "nvmlShutdown",
    "nvmlSystemGetDriverVersion",
    "nvmlSystemGetCudaDriverVersion",
    "nvmlDeviceGetCount",
    "nvmlDeviceGetHandleByIndex",
    "nvmlDeviceGetHandleByUUID",
    "nvmlEventSetCreate",
    "nvmlEventSetWait_v2",
    "nvmlEventSetFree",
}

#: What a MIG device handle answers (anything else: NotSupported, or InvalidArgument for `_PARENT_ONLY`).
_MIG_DEVICE_FUNCTIONS = {
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetName",
    "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetComputeRunningProcesses_v3",
    "nvmlDeviceGetComputeRunningProcesses_v2",
    "nvmlDeviceIsMigDeviceHandle",
    "nvmlDeviceGetDeviceHandleFromMigDeviceHandle",
    "nvmlDeviceGetGpuInstanceId",
    "nvmlDeviceGetComputeInstanceId",
}
#: Calls about a GPU's MIG set-up: a MIG device handle is the wrong kind of handle for them.
_PARENT_ONLY = {
    "nvmlDeviceGetMigMode",
    "nvmlDeviceGetGpuInstanceProfileInfo",
    "nvmlDeviceGetGpuInstances",
    "nvmlDeviceGetMaxMigDeviceCount",
    "nvmlDeviceGetMigDeviceHandleByIndex",
}
#: Seconds the real call blocks (NVML docs: PCIe throughput is sampled over a 20 ms interval).
LATENCY_S: dict[str, float] = {"nvmlDeviceGetPcieThroughput": 0.020}

_NO_INSTANCE = 0xFFFFFFFF


def _err(code: int) -> pynvml.NVMLError:
    """The real exception: NVMLError(code) is an instance of the NVMLError_<Name> subclass."""
    return pynvml.NVMLError(code)


def _addr(ptr: Any) -> int | None:
    try:
        return ctypes.cast(ptr, ctypes.c_void_p).value
    except (ctypes.ArgumentError, TypeError):
        return None


class FakeNVML:
    """Installs stubs for STUBBED on the pynvml module. `driver=False` makes nvmlInit fail with
    DriverNotLoaded; `init_error=<NVML code>` with any other code (e.g. NVML_ERROR_LIBRARY_NOT_FOUND).
    `latency` (default LATENCY_S) and `sleep` (default time.sleep; `fake.advance` for fake time) make
    blocking calls block; `pid_offset` turns listed PIDs into a host's numbering (a container's process
    is listed as its pid + offset); `root` lets a MIG parent list its processes."""

    def __init__(
        self,
        profiles: list[dict[str, Any]],
        *,
        driver: bool = True,
        driver_version: str = "550.54.15",
        init_error: int | None = None,
        latency: dict[str, float] | None = None,
        sleep: Callable[[float], None] | None = None,
        pid_offset: int = 0,
        root: bool = False,
    ):
        self.profiles = [copy.deepcopy(p) for p in profiles]
        self.driver = driver and init_error is None
        self.init_error = init_error if init_error is not None else pynvml.NVML_ERROR_DRIVER_NOT_LOADED
        self.driver_version = driver_version
        self.latency = dict(LATENCY_S if latency is None else latency)
        self._sleep = time.sleep if sleep is None else sleep
        self.blocked_s = 0.0  # time the fake spent blocking as the real calls do
        self.pid_offset, self.root = pid_offset, root
        self.now = 100.0
        self.lost: set[int] = set()
        self.calls = 0
        self.called: collections.Counter[str] = collections.Counter()  # calls per NVML function
        self.events: list[pynvml.c_nvmlEventData_t] = []
        self.registered: dict[int, int] = {}  # device index -> registered event mask
        self.unstubbed: list[str] = []
        self._saved: dict[str, Any] = {}
        # opaque device structs kept alive; handles are pointers to them, as libnvidia-ml's are
        self._dev_structs = [pynvml.struct_c_nvmlDevice_t() for _ in self.profiles]
        self._devs = {_addr(ctypes.pointer(d)): i for i, d in enumerate(self._dev_structs)}
        self._mig_structs: list[Any] = []
        self._migs: dict[int, tuple[int, tuple, Any]] = {}  # address -> (parent, record, struct)
        for i, p in enumerate(self.profiles):
            for rec in p.get("mig") or []:
                st = pynvml.struct_c_nvmlDevice_t()
                self._mig_structs.append(st)
                self._migs[_addr(ctypes.pointer(st))] = (i, rec, st)
        self._event_set_struct = pynvml.struct_c_nvmlEventSet_t()

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

    def handle(self, index: int) -> Any:
        """A fresh c_nvmlDevice_t pointer to device `index` (a new object each time, as pynvml's)."""
        return pynvml.c_nvmlDevice_t(self._dev_structs[index])

    def inject_xid(self, index: int, xid: int, gpu_instance: int = _NO_INSTANCE) -> None:
        """Queue an XID event, as c_nvmlEventData_t (only if the device registered for XIDs)."""
        self.events.append(
            pynvml.c_nvmlEventData_t(
                device=self.handle(index),
                eventType=pynvml.nvmlEventTypeXidCriticalError,
                eventData=xid,
                gpuInstanceId=gpu_instance,
                computeInstanceId=_NO_INSTANCE,
            )
        )

    # -- install -------------------------------------------------------------------------------
    def install(self) -> FakeNVML:
        _forget_readers()
        for name in STUBBED:
            self._saved[name] = getattr(pynvml, name)  # AttributeError: the real module lacks it
            setattr(pynvml, name, self._stub(name, self._saved[name]))
        self._saved["_nvmlGetFunctionPointer"] = pynvml._nvmlGetFunctionPointer
        pynvml._nvmlGetFunctionPointer = self._unstubbed
        return self

    def uninstall(self) -> None:
        _forget_readers()
        for name, fn in self._saved.items():
            setattr(pynvml, name, fn)
        self._saved.clear()

    def __enter__(self) -> FakeNVML:
        return self.install()

    def __exit__(self, *exc) -> None:
        self.uninstall()

    def _unstubbed(self, name: str):
        """A real binding reached for the C library: the fake is missing a stub."""
        self.unstubbed.append(name)
        raise _err(pynvml.NVML_ERROR_UNINITIALIZED)

    # -- the stubs -----------------------------------------------------------------------------
    def _stub(self, name: str, real: Any):
        impl = getattr(self, "_" + name)
        takes_handle = name not in _NO_HANDLE

        @functools.wraps(real)
        def stub(*args, **kwargs):
            self.calls += 1
            self.called[name] += 1
            if self.latency.get(name):
                self.blocked_s += self.latency[name]
                self._sleep(self.latency[name])
            if name not in ("nvmlInitWithFlags", "nvmlShutdown") and not self.driver:
                raise _err(pynvml.NVML_ERROR_UNINITIALIZED)
            if not takes_handle:
                return impl(*args, **kwargs)
            if not args:
                raise TypeError(f"{name}() missing the device handle")
            if not isinstance(args[0], pynvml.c_nvmlDevice_t):
                raise ctypes.ArgumentError(f"{name}: expected a c_nvmlDevice_t, got {type(args[0]).__name__}")
            addr = _addr(args[0])
            if addr in self._migs:
                parent, rec, _ = self._migs[addr]
                if parent in self.lost:
                    raise _err(pynvml.NVML_ERROR_GPU_IS_LOST)
                if name in _PARENT_ONLY:
                    raise _err(pynvml.NVML_ERROR_INVALID_ARGUMENT)
                if name not in _MIG_DEVICE_FUNCTIONS:
                    raise _err(NS)
                target: Any = {"mig_device": rec, "parent": self.profiles[parent]}
            elif addr in self._devs:
                i = self._devs[addr]
                if i in self.lost:
                    raise _err(pynvml.NVML_ERROR_GPU_IS_LOST)
                code = self.profiles[i]["unsupported"].get(name)
                if code is not None:
                    raise _err(code)
                target = self.profiles[i]
            else:
                raise _err(pynvml.NVML_ERROR_INVALID_ARGUMENT)
            return impl(target, *args[1:], **kwargs)

        return stub

    # Device functions receive the profile (or {"mig": record} for a MIG handle) as `handle`.
    def _nvmlInitWithFlags(self, flags):
        if not self.driver:
            raise _err(self.init_error)

    def _nvmlShutdown(self):
        return None

    def _nvmlSystemGetDriverVersion(self):
        return self.driver_version

    def _nvmlSystemGetCudaDriverVersion(self):
        """The CUDA version the driver's branch supports, as NVIDIA's release notes pair them (a
        580-series driver is CUDA 13.0): 1000 x major + 10 x minor, as NVML answers."""
        branch = int(self.driver_version.split(".")[0])
        pairs = ((580, 13000), (575, 12090), (570, 12080), (560, 12060), (555, 12050), (550, 12040))
        pairs += ((545, 12030), (535, 12020), (530, 12010), (525, 12000), (520, 11080), (470, 11040))
        return next((cuda for first, cuda in pairs if branch >= first), 11000)

    def _nvmlDeviceGetCount(self):
        return len(self.profiles)

    def _nvmlDeviceGetHandleByIndex(self, index):
        if not 0 <= index < len(self.profiles):
            raise _err(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return self.handle(index)

    def _index_of(self, profile: dict[str, Any]) -> int:
        return next(i for i, p in enumerate(self.profiles) if p is profile)

    def _nvmlDeviceGetIndex(self, handle):
        return self._index_of(handle)

    def _nvmlDeviceGetName(self, handle):
        if "mig_device" in handle:
            return f"{handle['parent']['name']} MIG {round(handle['mig_device'][2] / 1e9)}gb"
        return handle["name"]

    def _nvmlDeviceIsMigDeviceHandle(self, device):
        return ctypes.c_uint(1 if "mig_device" in device else 0)  # pynvml returns the c_uint

    def _nvmlDeviceGetDeviceHandleFromMigDeviceHandle(self, migDevice):  # noqa: N803
        if "mig_device" not in migDevice:
            raise _err(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return self.handle(self._index_of(migDevice["parent"]))

    def _nvmlDeviceGetGpuInstanceId(self, device):
        if "mig_device" not in device:
            raise _err(NS)
        return device["mig_device"][0]

    def _nvmlDeviceGetComputeInstanceId(self, device):
        if "mig_device" not in device:
            raise _err(NS)
        return 0

    def _nvmlDeviceGetHandleByUUID(self, uuid):
        want = uuid.decode() if isinstance(uuid, bytes) else uuid
        for i, p in enumerate(self.profiles):
            if p["uuid"] == want:
                return self.handle(i)
        raise _err(pynvml.NVML_ERROR_NOT_FOUND)

    def _nvmlDeviceGetUUID(self, handle):
        return handle["mig_device"][1] if "mig_device" in handle else handle["uuid"]

    def _nvmlDeviceGetPciInfo_v3(self, handle):
        info = pynvml.nvmlPciInfo_t()
        info.busId = handle["bus_id"]
        info.busIdLegacy = handle["bus_id"]
        return info

    def _nvmlDeviceGetVbiosVersion(self, handle):
        return handle["vbios"]

    def _nvmlDeviceGetCudaComputeCapability(self, handle):
        return tuple(handle["cc"])

    def _nvmlDeviceGetMigMode(self, device):
        on = pynvml.NVML_DEVICE_MIG_ENABLE if device["mig"] else pynvml.NVML_DEVICE_MIG_DISABLE
        return [on, on]  # [current, pending], a list as pynvml returns it

    def _nvmlDeviceGetMaxMigDeviceCount(self, device):
        if not device["mig"]:
            raise _err(NS)
        return 7

    def _nvmlDeviceGetMigDeviceHandleByIndex(self, device, index):
        for parent, rec, struct in self._migs.values():
            if self.profiles[parent] is device and rec[0] == index:
                return pynvml.c_nvmlDevice_t(struct)
        raise _err(pynvml.NVML_ERROR_NOT_FOUND)

    def _nvmlDeviceGetGpuInstanceProfileInfo(self, device, profile, version=2):
        """The profile's info struct (v2 with its name; v1 without); NotSupported when MIG is off or
        the GPU lacks the profile, InvalidArgument past the profile count (NVML's documented codes)."""
        if not 0 <= profile < pynvml.NVML_GPU_INSTANCE_PROFILE_COUNT:
            raise _err(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        known = device.get("gi_profiles") or {}
        if not device["mig"] or profile not in known:
            raise _err(NS)
        pid, name, most = known[profile]
        if version == 1:
            return pynvml.c_nvmlGpuInstanceProfileInfo_t(id=pid, sliceCount=int(name[4]), instanceCount=most)
        if version != 2:
            raise _err(FNF)  # what the binding raises for another version
        info = pynvml.c_nvmlGpuInstanceProfileInfo_v2_t()
        info.id, info.sliceCount, info.instanceCount, info.name = pid, int(name[4]), most, name.encode()
        return info

    def _nvmlDeviceGetGpuInstances(self, device, profileId, gpuInstancesRef, countRef):  # noqa: N803
        """Fills countRef (a byref c_uint) with the instances of the profile; needs root (or the MIG
        monitor capability), else NoPermission, as nvidia-smi mig -lgi shows an unprivileged user."""
        if not device["mig"]:
            raise _err(NS)
        if not self.root:
            raise _err(pynvml.NVML_ERROR_NO_PERMISSION)
        if profileId not in {pid for pid, _, _ in (device.get("gi_profiles") or {}).values()}:
            raise _err(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        n = sum(1 for _, pid in device.get("gpu_instances") or [] if pid == profileId)
        if n > len(gpuInstancesRef):
            raise _err(pynvml.NVML_ERROR_INSUFFICIENT_SIZE)
        getattr(countRef, "_obj", countRef).value = n
        return pynvml.NVML_SUCCESS

    def _nvmlDeviceGetMemoryInfo(self, handle, version=None):
        if "mig_device" in handle:  # a MIG device handle
            _, _, total, used = handle["mig_device"][:4]  # a fifth item lists its processes
            if not version:
                return pynvml.c_nvmlMemory_t(total=total, free=total - used, used=used)
            if version != pynvml.nvmlMemory_v2:
                raise _err(pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
            # the v2 struct, as the real library answers a versioned call on a MIG handle; the slice
            # reports no reserved memory of its own here (not verified on hardware)
            return pynvml.c_nvmlMemory_v2_t(
                version=version, total=total, reserved=0, free=total - used, used=used
            )
        used, total, reserved = handle["mem_used"], handle["mem_total"], handle["mem_reserved"]
        if not version:  # v1: no `reserved` field; the driver counts it as used
            return pynvml.c_nvmlMemory_t(total=total, free=total - used - reserved, used=used + reserved)
        code = handle["unsupported"].get("nvmlDeviceGetMemoryInfo_v2")
        if code is not None:
            raise _err(code)
        if version != pynvml.nvmlMemory_v2:
            raise _err(pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
        return pynvml.c_nvmlMemory_v2_t(
            version=version, total=total, reserved=reserved, free=total - used - reserved, used=used
        )

    def _nvmlDeviceGetUtilizationRates(self, handle):
        return pynvml.c_nvmlUtilization_t(gpu=handle["util"][0], memory=handle["util"][1])

    def _nvmlDeviceGetTemperature(self, handle, sensor):
        if sensor != pynvml.NVML_TEMPERATURE_GPU:
            raise _err(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return handle["temp"]

    def _nvmlDeviceGetPowerUsage(self, handle):
        return handle["power_mw"]  # milliwatts

    def _nvmlDeviceGetEnforcedPowerLimit(self, handle):
        return handle["power_limit_mw"]  # milliwatts

    def _nvmlDeviceGetTotalEnergyConsumption(self, handle):
        return handle["energy_mj"]  # millijoules since the driver was loaded

    def _nvmlDeviceGetClockInfo(self, handle, type):  # noqa: A002 - pynvml's parameter name
        return handle["sm_clock"] if type == pynvml.NVML_CLOCK_SM else handle["mem_clock"]

    def _nvmlDeviceGetMaxClockInfo(self, handle, type):  # noqa: A002 - pynvml's parameter name
        return handle["sm_clock_max"] if type == pynvml.NVML_CLOCK_SM else handle["mem_clock_max"]

    def _nvmlDeviceGetPerformanceState(self, handle):
        return handle["pstate"]

    def _nvmlDeviceGetCurrentClocksEventReasons(self, handle):
        return handle["throttle"]

    def _nvmlDeviceGetCurrentClocksThrottleReasons(self, handle):
        return handle["throttle"]

    def _nvmlDeviceGetTotalEccErrors(self, handle, errorType, counterType):  # noqa: N803
        i = (0 if counterType == pynvml.NVML_VOLATILE_ECC else 2) + (
            0 if errorType == pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED else 1
        )
        return handle["ecc"][i]

    def _nvmlDeviceGetRemappedRows(self, device):
        corr, unc, pending, failure = device["remapped"]
        return (corr, unc, pending, failure)  # a 4-tuple of ints, as pynvml returns

    def _nvmlDeviceGetCurrPcieLinkGeneration(self, handle):
        return handle["pcie"][0]

    def _nvmlDeviceGetCurrPcieLinkWidth(self, handle):
        return handle["pcie"][1]

    def _nvmlDeviceGetPcieThroughput(self, device, counter):
        return device["pcie_kbps"][0 if counter == pynvml.NVML_PCIE_UTIL_TX_BYTES else 1]  # KB/s

    def _nvmlDeviceGetNvLinkState(self, device, link):
        if link >= device["nvlinks"]:
            raise _err(NS if device["nvlinks"] == 0 else pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return pynvml.NVML_FEATURE_ENABLED

    def _procs(self, handle) -> list:
        """Host PIDs (pid + pid_offset); a MIG parent refuses without root, a MIG device handle lists
        its instance's processes (the record's fifth item, else none)."""
        if "mig_device" in handle:
            rows = handle["mig_device"][4] if len(handle["mig_device"]) > 4 else []
        elif handle.get("mig") and not self.root:
            raise _err(pynvml.NVML_ERROR_NO_PERMISSION)
        else:
            rows = handle["processes"]
        out = []
        for pid0, used in rows:
            pid = pid0 + self.pid_offset
            info = pynvml.c_nvmlProcessInfo_v3_t(
                pid=pid,
                usedGpuMemory=pynvml.NVML_VALUE_NOT_AVAILABLE_ulonglong.value if used is None else used,
                gpuInstanceId=_NO_INSTANCE,
                computeInstanceId=_NO_INSTANCE,
            )
            obj = pynvml.nvmlStructToFriendlyObject(info)
            if obj.usedGpuMemory == pynvml.NVML_VALUE_NOT_AVAILABLE_ulonglong.value:
                obj.usedGpuMemory = None  # what pynvml does (WDDM, MIG without permission)
            out.append(obj)
        return out

    def _nvmlDeviceGetComputeRunningProcesses_v3(self, handle):
        return self._procs(handle)

    def _nvmlDeviceGetComputeRunningProcesses_v2(self, handle):
        return self._procs(handle)

    def _nvmlDeviceGetSamples(self, device, sampling_type, timeStamp):  # noqa: N803
        """Ten samples 100 ms apart ending at the fake clock (CPU timestamps in microseconds), as
        (NVML_VALUE_TYPE_UNSIGNED_INT, [c_nvmlSample_t]); NotFound when none is newer than timeStamp."""
        end = int(self.now * 1e6)
        if sampling_type == pynvml.NVML_GPU_UTILIZATION_SAMPLES:
            value = device["util"][0]
        elif sampling_type == pynvml.NVML_TOTAL_POWER_SAMPLES:
            value = device["power_mw"]
        else:
            raise _err(NS)
        rows = [
            pynvml.c_nvmlSample_t(timeStamp=end - k * 100_000, sampleValue=pynvml.c_nvmlValue_t(uiVal=value))
            for k in range(9, -1, -1)
        ]
        rows = [r for r in rows if r.timeStamp > timeStamp]
        if not rows:
            raise _err(pynvml.NVML_ERROR_NOT_FOUND)
        return (pynvml.NVML_VALUE_TYPE_UNSIGNED_INT, rows)

    def _nvmlEventSetCreate(self):
        return pynvml.c_nvmlEventSet_t(self._event_set_struct)

    def _nvmlDeviceRegisterEvents(self, handle, eventTypes, eventSet):  # noqa: N803
        if eventTypes & ~handle["event_types"]:
            raise _err(NS)
        self.registered[self._index_of(handle)] = eventTypes

    def _nvmlDeviceGetSupportedEventTypes(self, handle):
        return handle["event_types"]

    def _nvmlEventSetWait_v2(self, eventSet, timeoutms):  # noqa: N803
        while self.events:
            data = self.events.pop(0)
            i = self._devs.get(_addr(data.device))
            if i is not None and self.registered.get(i, 0) & data.eventType:
                return data
        self._sleep(timeoutms / 1000)  # the real call blocks for its timeout when nothing comes
        raise _err(pynvml.NVML_ERROR_TIMEOUT)

    def _nvmlEventSetFree(self, eventSet):  # noqa: N803
        return None


def _forget_readers() -> None:
    """Forget the process-wide NVML state every layer shares: the NVML session, the environment's cached
    reader and the shared telemetry sampler, which would otherwise keep reading the NVML (or the none)
    that was there before the fake was swapped in or out."""
    from aiworkbook import nvml
    from aiworkbook.telemetry.environment import reset as reset_environment
    from aiworkbook.telemetry.sampler import reset_shared_sampler

    reset_shared_sampler()
    reset_environment()
    nvml.reset()
