"""Where a proof runs and whether it fits: device="auto", a fit check before allocating, OOM survival.

A proof predicts its peak bytes, calls `check_fits` (which refuses with a clear message when that
would not fit the free memory), and runs its allocation-heavy part inside `oom_guard`, which turns
an out-of-memory that still happens into `DoesNotFit("does not fit at ...")` after releasing memory.
"""

from __future__ import annotations

import gc
import os
import sys
import traceback
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from aiworkbook import nvml
from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.proofs.flags import CPU_FALLBACK

DEVICES = ("auto", "cpu", "cuda")


class WouldNotFit(SpecError):
    """Refused before allocating: the predicted peak exceeds the memory free on the device. Bad input
    (a model or size too large for this node: exit 2 on the command line), so a SpecError whose
    message is the whole sentence."""

    def __init__(self, message: str) -> None:
        ValueError.__init__(self, message)
        self.field, self.value, self.allowed, self.source = "memory", None, message, None


class DoesNotFit(RuntimeError):
    """An out-of-memory that happened anyway, caught and released; `at` says which step."""

    def __init__(self, at: str, cause: BaseException) -> None:
        self.at = at
        self.cause: BaseException | None = cause
        first = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
        self.reason = first[:200]  # the allocator's own words (quoted when said in another language)
        super().__init__(f"does not fit at {at}: {self.reason}")


@dataclass(frozen=True)
class DeviceChoice:
    """The device a proof runs on, why, and the flags that qualify its figures."""

    device: str  # "cpu" | "cuda"
    requested: str
    reason: str
    flags: tuple[str, ...] = ()


#: Device nodes a CUDA (or ROCm, which torch also calls "cuda") runtime opens on Linux: NVIDIA's
#: driver, WSL2's GPU paravirtualisation, AMD's kernel driver. A Linux box with none of them has no
#: GPU torch could use, so the answer needs no torch import (a second of a dashboard's start-up).
GPU_DEVICE_NODES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/dxg", "/dev/kfd")


def cuda_available() -> bool:
    """torch.cuda.is_available(), without importing torch on a Linux machine with no GPU device node."""
    if "torch" not in sys.modules and sys.platform == "linux":
        if not any(os.path.exists(p) for p in GPU_DEVICE_NODES):
            return False
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:
        return False


def resolve_device(device: str = "auto") -> DeviceChoice:
    """'auto' picks CUDA when present, else the CPU (flagged cpu-fallback); 'cuda' without one is an error."""
    req = str(device).lower()
    if req not in DEVICES:
        raise SpecError("device", device, ", ".join(DEVICES))
    has_cuda = cuda_available()
    if has_cuda and req in ("auto", "cuda"):
        record_nvml_baseline()  # before _cuda_name() initialises torch.cuda: the reading excludes our context
    if req == "cuda":
        if not has_cuda:
            raise SpecError("device", device, Msg("allowed.no_cuda"))
        return DeviceChoice("cuda", req, Msg("device.cuda_requested", gpu=_cuda_name()))
    if req == "cpu":
        return DeviceChoice("cpu", req, Msg("device.cpu_requested"))
    if has_cuda:
        return DeviceChoice("cuda", req, Msg("device.auto_cuda", gpu=_cuda_name()))
    return DeviceChoice("cpu", req, Msg("device.auto_cpu"), (CPU_FALLBACK,))


def _cuda_name() -> str:
    import torch

    return torch.cuda.get_device_name(torch.cuda.current_device())


def tensor_device(device: str) -> str:
    """Where a proof's tensors live: the device itself. CPU tests substitute "cpu" here to run the CUDA
    bookkeeping (a fake torch.cuda) over real CPU tensors."""
    return device


# ---- NVML: device-level readings that include the CUDA context ----------------------------------
_BASELINE: dict[str, Any] | None = None


def _nvml_target() -> tuple[str, str]:
    """How to find the GPU torch calls device 0: the first device CUDA shows (aiworkbook.cuda_visible:
    CUDA_VISIBLE_DEVICES, else NVIDIA_VISIBLE_DEVICES), an index or a UUID (or a UUID's prefix).

    NVML numbers GPUs in PCI order and CUDA fastest-first unless CUDA_DEVICE_ORDER=PCI_BUS_ID, so an index
    is only a guess on mixed machines: `nvml_reading` reports the UUID and callers compare it with torch's.
    """
    from aiworkbook import cuda_visible

    first = (cuda_visible.read().entries or ("0",))[0]
    return ("uuid", first) if first.startswith(("GPU-", "MIG-")) else ("index", first)


def _handle_by_uuid(key: str) -> tuple[Any, str | None]:
    """NVML's handle for a UUID, or for the one GPU whose UUID starts with `key` (CUDA takes prefixes)."""
    h, why = nvml.attempt("nvmlDeviceGetHandleByUUID", key)
    if why is None or not key.startswith("GPU-"):
        return h, why
    from aiworkbook import cuda_visible

    n, why_n = nvml.attempt("nvmlDeviceGetCount")
    if why_n is not None:
        return None, why_n
    handles = [nvml.attempt("nvmlDeviceGetHandleByIndex", i)[0] for i in range(int(n))]
    uuids = [str(nvml.text(nvml.attempt("nvmlDeviceGetUUID", h)[0] or "")) for h in handles]
    k = cuda_visible.match(key, list(range(len(uuids))), uuids)
    return (handles[k], None) if k is not None else (None, why)


def nvml_reading(pid: int | None = None) -> dict[str, Any] | None:
    """{"used", "free", "total", "uuid"[, "process_used"]} bytes of torch's device 0 from NVML, or None when
    NVML cannot say. `process_used` is this process's usedGpuMemory (CUDA context included) when NVML
    lists the pid (it may not inside a container's PID namespace).

    Goes through aiworkbook.nvml: NVML is initialised once per process (shared with the telemetry),
    not on every call, so a per-step reading costs only the queries."""
    how, key = _nvml_target()
    if how == "uuid":
        h, why = _handle_by_uuid(key)
    else:
        h, why = nvml.attempt("nvmlDeviceGetHandleByIndex", int(key))
    if why is not None:
        return None
    mem, why = nvml.attempt("nvmlDeviceGetMemoryInfo", h)
    uuid, why_uuid = nvml.attempt("nvmlDeviceGetUUID", h)
    if why is not None or why_uuid is not None:
        return None
    out: dict[str, Any] = {
        "used": int(mem.used),
        "free": int(mem.free),
        "total": int(mem.total),
        "uuid": str(nvml.text(uuid)),
    }
    if pid is not None:
        try:
            procs = nvml.compute_processes(nvml.module(), h)
            mine = [p for p in procs if int(p.pid) == pid]
            if mine and mine[0].usedGpuMemory is not None:
                out["process_used"] = int(mine[0].usedGpuMemory)
        except Exception:
            pass
    return out


def record_nvml_baseline() -> dict[str, Any] | None:
    """Take, once per process, an NVML reading before torch initialises CUDA (so before our context).

    Later device-level deltas against it include the CUDA context and every non-torch byte this process
    holds. After torch has initialised CUDA it is too late: returns the earlier reading or None.
    """
    global _BASELINE
    if _BASELINE is not None:
        return _BASELINE
    try:
        import torch

        if torch.cuda.is_initialized():
            return None
    except Exception:
        return None
    _BASELINE = nvml_reading()
    return _BASELINE


def nvml_baseline() -> dict[str, Any] | None:
    """The reading `record_nvml_baseline` took, or None."""
    return _BASELINE


def cuda_uuid() -> str | None:
    """torch's UUID of the current CUDA device in NVML's spelling, to check that NVML reads the same GPU:
    'GPU-...' for a whole GPU, 'MIG-...' for a MIG device (nvmlDeviceGetUUID on a MIG handle; torch's
    `props.uuid` is the bare UUID either way). A MIG device is one whose name carries 'MIG' (CUDA names
    it "NVIDIA A100-SXM4-40GB MIG 1g.5gb") or that CUDA_VISIBLE_DEVICES selected by a 'MIG-' UUID."""
    try:
        import torch

        idx = torch.cuda.current_device()
        props = torch.cuda.get_device_properties(idx)
        u = getattr(props, "uuid", None)
        return None if u is None else nvml_uuid(str(u), str(getattr(props, "name", "")), idx)
    except Exception:
        return None


def half_dtype(device: str) -> tuple[str, str | None]:
    """The 16-bit dtype a proof defaults to on `device` and, when it is not bf16, why: bf16 where the GPU
    computes it natively (`torch.cuda.is_bf16_supported(including_emulation=False)`: compute capability
    >= 8; torch's default also says yes for an emulated bf16, far slower), else fp16. The CPU has bf16 in
    every torch build (its proofs default to fp32 anyway)."""
    if not device.startswith("cuda"):
        return "bf16", None
    import torch

    if torch.cuda.is_bf16_supported(including_emulation=False):
        return "bf16", None
    name = torch.cuda.get_device_name(torch.cuda.current_device())
    return "fp16", f"{name} computes no bf16 natively (compute capability < 8): fp16 instead"


def nvml_uuid(uuid: str, name: str, index: int = 0) -> str:
    """A CUDA device UUID with NVML's prefix (see `cuda_uuid`)."""
    if uuid.startswith(("GPU-", "MIG-")):
        return uuid
    visible = [x.strip() for x in (os.environ.get("CUDA_VISIBLE_DEVICES") or "").split(",")]
    mig = "MIG" in name.split() or (index < len(visible) and visible[index].startswith("MIG-"))
    return ("MIG-" if mig else "GPU-") + uuid


def free_memory(device: str) -> tuple[int, int]:
    """(free, total) bytes: torch.cuda.mem_get_info on CUDA, psutil's available/total RAM on the CPU.

    On CUDA, blocks this process's caching allocator holds but no tensor uses (reserved - allocated)
    count as free: an earlier proof's cache is this proof's to reuse."""
    if device == "cuda":
        import torch

        free, total = torch.cuda.mem_get_info()
        cached = max(0, int(torch.cuda.memory_reserved()) - int(torch.cuda.memory_allocated()))
        return int(free) + cached, int(total)
    import psutil

    vm = psutil.virtual_memory()
    return int(vm.available), int(vm.total)


def check_fits(
    predicted_bytes: int,
    device: str,
    *,
    what: str,
    budget_bytes: int | None = None,
    hint: str | None = None,
) -> int:
    """Refuse (WouldNotFit) when the predicted peak exceeds the budget (default: free memory). Returns it.
    `what` and `hint` (what to do instead) are messages, said in the reader's language."""
    budget = budget_bytes if budget_bytes is not None else free_memory(device)[0]
    if predicted_bytes > budget:
        hint = hint or Msg("fit.hint.default")
        if budget_bytes is not None:
            raise WouldNotFit(
                Msg("fit.over_budget", what=what, need=predicted_bytes, budget=budget, hint=hint)
            )
        raise WouldNotFit(
            Msg("fit.over_free", what=what, need=predicted_bytes, free=budget, device=device, hint=hint)
        )
    return budget


def is_oom(exc: BaseException) -> bool:
    """torch.OutOfMemoryError, MemoryError, or an allocator RuntimeError saying it could not allocate."""
    if isinstance(exc, MemoryError):
        return True
    try:
        import torch

        if isinstance(exc, torch.OutOfMemoryError):
            return True
    except (ImportError, AttributeError):
        pass
    msg = str(exc).lower()
    return isinstance(exc, RuntimeError) and ("out of memory" in msg or "can't allocate memory" in msg)


def release_memory(device: str) -> None:
    """Drop unreachable tensors and hand cached CUDA blocks back to the driver."""
    gc.collect()
    if device == "cuda":
        import torch

        torch.cuda.empty_cache()


@contextmanager
def oom_guard(at: str, device: str):
    """Catch an out-of-memory in the block, release memory, and raise DoesNotFit(at) instead."""
    err: DoesNotFit | None = None
    try:
        yield
    except BaseException as exc:
        if not is_oom(exc):
            raise
        err = DoesNotFit(at, exc)
        err.__traceback__ = None
    if err is not None:
        # raised outside the except block, so the failed frames (and their tensors) can be freed first
        err.cause = None
        release_memory(device)
        raise err


@contextmanager
def interruptible(what: str, device: str):
    """Ctrl-C inside the block: clear the interrupted frames' locals (a notebook keeps the last
    traceback, and with it every tensor those frames held), release memory, and raise a clean
    KeyboardInterrupt that names what stopped. The work itself must run in functions called from the
    block: the frame holding the `with` is still executing and keeps its own locals."""
    stopped = False
    try:
        yield
    except KeyboardInterrupt as exc:
        traceback.clear_frames(exc.__traceback__)
        stopped = True
    if stopped:  # raised outside the except block: no __context__ pointing at the old traceback
        release_memory(device)
        raise KeyboardInterrupt(f"{what} interrupted; memory released")
