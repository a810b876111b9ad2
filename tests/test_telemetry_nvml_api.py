"""Drift guards: the NVML code (aiworkbook/nvml.py, the telemetry package, specs/detection and
proofs/device) and tests/fake_nvml.py against the *installed* nvidia-ml-py.

The NVML code has mostly run against the fake, written alongside the reader, so a wrong belief
about the API could live in both. These tests hold both to the real pynvml.py: every pynvml name
the package uses exists; every function the fake replaces exists with the same parameters; the
fake answers with the real structs and raises the real NVMLError subclasses; the tables the
package keeps (throttle bits, sample value types, error reasons) match the real constants.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import re
import sys
from pathlib import Path

import pynvml
import pytest
from fake_nvml import CONSUMER, DATACENTER, MIG, OLD_DRIVER, STUBBED, FakeNVML

import aiworkbook.telemetry as telemetry_pkg
from aiworkbook import nvml
from aiworkbook.telemetry.events import _TYPES as EVENT_TYPES
from aiworkbook.telemetry.gpu_metrics import THROTTLE_REASONS
from aiworkbook.telemetry.gpu_reader import _VALUE_FIELDS

PKG = Path(telemetry_pkg.__file__).parent
SOURCES = sorted(PKG.glob("*.py")) + [
    PKG.parent / "cli" / "monitor_cmds.py",
    PKG.parent / "nvml.py",
    PKG.parent / "specs" / "detection.py",
    PKG.parent / "proofs" / "device.py",
    PKG.parent / "profile" / "gpu_facts.py",
    PKG.parent / "profile" / "xid_watch.py",
]
_NAME = re.compile(r"^(nvml[A-Z]|NVML_?[A-Z])[A-Za-z0-9_]*$")


@pytest.fixture(scope="module")
def real():
    """A pristine copy of the installed pynvml.py (no fake can have patched it)."""
    spec = importlib.util.spec_from_file_location("pynvml_pristine", pynvml.__file__)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["pynvml_pristine"] = mod  # its error-class generator looks itself up there
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.modules.pop("pynvml_pristine", None)
    return mod


def used_names() -> dict[str, str]:
    """Every pynvml name the telemetry package refers to: `nv.X` / `pynvml.X` attributes and
    string literals naming an NVML function or constant (as passed to nvml.attempt)."""
    names: dict[str, str] = {}
    for path in SOURCES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                if node.value.id in ("nv", "pynvml") and node.attr not in ("__file__",):
                    names.setdefault(node.attr, f"{path.name}:{node.lineno}")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                if _NAME.match(node.value):
                    names.setdefault(node.value, f"{path.name}:{node.lineno}")
    return names


def test_every_pynvml_name_the_package_uses_exists(real):
    names = used_names()
    assert len(names) > 40, sorted(names)  # the scan found the calls (not an empty pass)
    missing = {n: where for n, where in names.items() if not hasattr(real, n)}
    assert not missing, f"not in the installed nvidia-ml-py: {missing}"
    for must in ("nvmlDeviceGetSamples", "nvmlDeviceGetCurrentClocksEventReasons", "nvmlEventSetWait_v2"):
        assert must in names


def test_every_function_the_fake_stubs_exists_with_the_same_parameters(real):
    for name in STUBBED:
        assert callable(getattr(real, name, None)), f"fake stubs {name}, absent from pynvml"
        want = [
            (p.name, p.kind, p.default) for p in inspect.signature(getattr(real, name)).parameters.values()
        ]
        impl = getattr(FakeNVML, "_" + name)
        got = [(p.name, p.kind, p.default) for p in list(inspect.signature(impl).parameters.values())[1:]]
        assert got == want, f"{name}: fake {got} vs pynvml {want}"


def test_the_calls_the_package_makes_are_all_answered_by_the_fake(real):
    """Each pynvml function the package calls is stubbed, or a real wrapper that only delegates
    to a stubbed one (checked by running everything: fake.unstubbed records any leak)."""
    called = {n for n in used_names() if n.startswith("nvml") and callable(getattr(real, n, None))}
    delegating = {
        "nvmlInit",  # -> nvmlInitWithFlags
        "nvmlDeviceGetPciInfo",  # -> nvmlDeviceGetPciInfo_v3
        "nvmlDeviceGetComputeRunningProcesses",  # -> _v3 under throwOnVersionMismatch
    }
    assert called - set(STUBBED) - delegating == set()
    from aiworkbook.telemetry.events import EventTimeline
    from aiworkbook.telemetry.gpu_reader import GPUReader

    with FakeNVML([DATACENTER, MIG, CONSUMER, OLD_DRIVER]) as fake:
        reader = GPUReader(clock=fake.clock)
        reader.read_all()
        reader.identities()
        for i in range(4):
            reader.history(i, "power")
            reader.history(i, "gpu_util")
        tl = EventTimeline(reader.handles())
        fake.inject_xid(0, 79)
        assert tl.poll()[0]["xid"] == 79
        tl.close()
        from aiworkbook.proofs.device import nvml_reading
        from aiworkbook.specs.detection import nvml_gpus

        assert len(nvml_gpus()[0]) == 4
        assert nvml_reading(pid=4242)["process_used"] == DATACENTER["processes"][0][1]
        assert fake.unstubbed == []


def test_the_fake_answers_with_the_real_structs_and_shapes():
    with FakeNVML([DATACENTER, MIG]) as fake:
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        assert isinstance(h, pynvml.c_nvmlDevice_t) and h is not pynvml.nvmlDeviceGetHandleByIndex(0)
        m2 = pynvml.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2)
        assert isinstance(m2, pynvml.c_nvmlMemory_v2_t) and m2.reserved == DATACENTER["mem_reserved"]
        assert isinstance(pynvml.nvmlDeviceGetMemoryInfo(h), pynvml.c_nvmlMemory_t)
        assert isinstance(pynvml.nvmlDeviceGetUtilizationRates(h), pynvml.c_nvmlUtilization_t)
        pci = pynvml.nvmlDeviceGetPciInfo(h)  # the real wrapper, delegating to the stubbed _v3
        assert isinstance(pci, pynvml.nvmlPciInfo_t) and pci.busId == DATACENTER["bus_id"]
        vtype, samples = pynvml.nvmlDeviceGetSamples(h, pynvml.NVML_TOTAL_POWER_SAMPLES, 0)
        assert vtype == pynvml.NVML_VALUE_TYPE_UNSIGNED_INT
        assert isinstance(samples[0], pynvml.c_nvmlSample_t)
        assert samples[-1].sampleValue.uiVal == DATACENTER["power_mw"]  # milliwatts in uiVal
        with pytest.raises(pynvml.NVMLError_NotFound):  # nothing newer than the last timestamp
            pynvml.nvmlDeviceGetSamples(h, pynvml.NVML_TOTAL_POWER_SAMPLES, samples[-1].timeStamp)
        assert pynvml.nvmlDeviceGetMigMode(pynvml.nvmlDeviceGetHandleByIndex(1)) == [1, 1]
        assert len(pynvml.nvmlDeviceGetRemappedRows(h)) == 4
        with pytest.raises(pynvml.NVMLError_NoPermission):  # a MIG parent, not root (issue 23)
            pynvml.nvmlDeviceGetComputeRunningProcesses(pynvml.nvmlDeviceGetHandleByIndex(1))
        fake.root = True
        procs = pynvml.nvmlDeviceGetComputeRunningProcesses(pynvml.nvmlDeviceGetHandleByIndex(1))
        assert isinstance(procs[0], pynvml.nvmlFriendlyObject) and procs[0].usedGpuMemory is None
        es = pynvml.nvmlEventSetCreate()
        assert isinstance(es, pynvml.c_nvmlEventSet_t)
        pynvml.nvmlDeviceRegisterEvents(h, pynvml.nvmlEventTypeXidCriticalError, es)
        fake.inject_xid(0, 48)
        data = pynvml.nvmlEventSetWait(es, 0)  # the real alias of _v2
        assert isinstance(data, pynvml.c_nvmlEventData_t) and data.eventData == 48
        with pytest.raises(pynvml.NVMLError_Timeout):
            pynvml.nvmlEventSetWait_v2(es, 0)


def test_the_fake_raises_the_real_error_subclasses():
    with FakeNVML([MIG, OLD_DRIVER]) as fake:
        mig, old = pynvml.nvmlDeviceGetHandleByIndex(0), pynvml.nvmlDeviceGetHandleByIndex(1)
        with pytest.raises(pynvml.NVMLError_NotSupported) as e:
            pynvml.nvmlDeviceGetUtilizationRates(mig)
        assert type(e.value) is pynvml.NVMLError_NotSupported and e.value.value == 3
        with pytest.raises(pynvml.NVMLError_FunctionNotFound):
            pynvml.nvmlDeviceGetCurrentClocksEventReasons(old)
        with pytest.raises(pynvml.NVMLLibraryMismatchError):  # real decorator over the stubbed _v3
            pynvml.nvmlDeviceGetComputeRunningProcesses(old)
        fake.lose(0)
        with pytest.raises(pynvml.NVMLError_GpuIsLost):
            pynvml.nvmlDeviceGetPowerUsage(mig)
    with FakeNVML([DATACENTER], driver=False), pytest.raises(pynvml.NVMLError_DriverNotLoaded):
        pynvml.nvmlInit()
    with FakeNVML([], init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND):
        with pytest.raises(pynvml.NVMLError_LibraryNotFound):
            pynvml.nvmlInit()


def test_reasons_follow_the_real_error_classes(real):
    """nvml.reason() recognises the real exceptions (checked on the pristine module's
    classes too, since codes, not class identity, decide)."""
    expect = {
        "NVML_ERROR_NOT_SUPPORTED": "not supported",
        "NVML_ERROR_NO_PERMISSION": "no permission",
        "NVML_ERROR_GPU_IS_LOST": "GPU is lost",
        "NVML_ERROR_FUNCTION_NOT_FOUND": "function not found (driver too old)",
        "NVML_ERROR_LIBRARY_NOT_FOUND": "NVIDIA driver/NVML library not found",
        "NVML_ERROR_DRIVER_NOT_LOADED": "NVIDIA driver not loaded",
        "NVML_ERROR_NOT_FOUND": "not found",
        "NVML_ERROR_TIMEOUT": "timeout",
    }
    for const, text in expect.items():
        exc = pynvml.NVMLError(getattr(real, const))
        assert type(exc).__name__.startswith("NVMLError_") and nvml.reason(exc) == text
    for const in nvml._CODES:
        assert hasattr(real, const), const
    mismatch = pynvml.NVMLLibraryMismatchError("Unversioned function called ...")
    assert not isinstance(mismatch, pynvml.NVMLError)
    assert nvml.reason(mismatch) == nvml.DRIVER_TOO_OLD


def test_unversioned_process_binding_raises_a_non_nvml_error_on_an_old_driver(real, monkeypatch):
    """What gpu_metrics._processes guards against, on the real (pristine) code path."""

    def v3(handle):
        raise real.NVMLError(real.NVML_ERROR_FUNCTION_NOT_FOUND)

    monkeypatch.setattr(real, "nvmlDeviceGetComputeRunningProcesses_v3", v3)
    with pytest.raises(real.NVMLLibraryMismatchError):
        real.nvmlDeviceGetComputeRunningProcesses(None)


def test_real_bindings_fail_cleanly_without_a_driver(real):
    """On this machine (no libnvidia-ml) the real nvmlInit raises NVMLError_LibraryNotFound, and a
    call before init NVMLError_Uninitialized: both map to readable reasons."""
    with pytest.raises(real.NVMLError_Uninitialized) as e:
        real.nvmlDeviceGetCount()
    assert nvml.reason(e.value) == "NVML not initialised"
    try:
        real.nvmlInit()
    except real.NVMLError as exc:
        assert nvml.reason(exc) in (
            "NVIDIA driver/NVML library not found",
            "NVIDIA driver not loaded",
            "NVML library and driver versions do not match",
        )
    else:  # a machine with a driver: leave it as we found it
        real.nvmlShutdown()


def test_throttle_table_matches_the_pynvml_constants(real):
    def snake(s: str) -> str:
        return re.sub(r"(?<!^)(?=[A-Z])", "_", s).lower()

    seen = {}
    for prefix in ("nvmlClocksEventReason", "nvmlClocksThrottleReason"):
        for attr in dir(real):
            if not attr.startswith(prefix):
                continue
            suffix = attr[len(prefix) :]
            if suffix in ("None", "All", "UserDefinedClocks"):  # not bits / a deprecated alias
                continue
            bit = getattr(real, attr)
            assert bit and bit & (bit - 1) == 0, attr
            seen[bit] = snake(suffix)
    assert seen == THROTTLE_REASONS


def test_sample_value_union_members_match_pynvml(real):
    members = [f for f, _ in real.c_nvmlValue_t._fields_]
    count = real.NVML_VALUE_TYPE_COUNT
    assert [_VALUE_FIELDS[i] for i in range(count)] == members[:count]
    assert real.NVML_VALUE_TYPE_DOUBLE == 0 and _VALUE_FIELDS[real.NVML_VALUE_TYPE_UNSIGNED_INT] == "uiVal"
    assert [f for f, _ in real.c_nvmlSample_t._fields_] == ["timeStamp", "sampleValue"]


def test_struct_fields_the_readers_read_exist(real):
    def fields(cls):
        return {f for f, _ in cls._fields_}

    assert {"total", "used", "free", "reserved", "version"} <= fields(real.c_nvmlMemory_v2_t)
    assert {"total", "used", "free"} <= fields(real.c_nvmlMemory_t)
    assert {"gpu", "memory"} <= fields(real.c_nvmlUtilization_t)
    assert {"busId", "busIdLegacy"} <= fields(real.nvmlPciInfo_t)
    assert {"pid", "usedGpuMemory", "gpuInstanceId", "computeInstanceId"} <= fields(
        real.c_nvmlProcessInfo_v3_t
    )
    assert fields(real.c_nvmlEventData_t) == {
        "device",
        "eventType",
        "eventData",
        "gpuInstanceId",
        "computeInstanceId",
    }
    for name in EVENT_TYPES:
        assert getattr(real, name) & (getattr(real, name) - 1) == 0, name
    assert real.nvmlEventTypeXidCriticalError == 0x8
    assert real.NVML_TOTAL_POWER_SAMPLES == 0 and real.NVML_GPU_UTILIZATION_SAMPLES == 1
    assert real.NVML_PCIE_UTIL_TX_BYTES == 0 and real.NVML_PCIE_UTIL_RX_BYTES == 1


def test_without_the_nvml_library_nvidia_ml_py_is_not_even_imported():
    """Where libnvidia-ml.so.1 cannot be loaded, ensure() says what nvmlInit would (library not found)
    without importing nvidia-ml-py; where it can, NVML is asked as before."""
    import ctypes
    import subprocess

    try:
        ctypes.CDLL("libnvidia-ml.so.1")
        loadable = True
    except OSError:
        loadable = False
    code = "import sys; from aiworkbook import nvml; print(nvml.ensure()); print('pynvml' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    why, imported = out.stdout.splitlines()
    if loadable or not sys.platform.startswith("linux"):
        assert imported == "True"
    else:
        assert (why, imported) == ("NVIDIA driver/NVML library not found", "False")
