"""NVML through nvidia-ml-py, the one backend every layer uses (specs/detection, telemetry, proofs).

Initialised lazily on first use (never at import), once per process, under a lock, and shut down at
exit. `attempt` turns an NVML exception into (None, readable reason), so no caller sees an NVML
exception; telemetry.nvml_backend.call wraps that into a marked NA. This module sits at the bottom
layer beside units and persist: it imports nothing from aiworkbook, so specs may use it.

Tests swap in a fake by stubbing functions on the `pynvml` module (gpustat's approach, see
tests/fake_nvml.py) and calling `reset()`.
"""

from __future__ import annotations

import atexit
import sys
import threading
from typing import Any

_lock = threading.RLock()
_state: str | None = None  # None: not tried yet; "ok": initialised; else the reason it failed
_atexit_registered = False
#: Set by the atexit hook: a daemon sampler thread still polling while the interpreter exits must
#: not initialise NVML again after it was shut down.
_EXITING = "NVML shut down (interpreter exiting)"

#: NVML return codes as short, user-facing reasons (names kept close to nvidia-smi's wording).
_REASONS = {
    "NVML_ERROR_NOT_SUPPORTED": "not supported",
    "NVML_ERROR_NO_PERMISSION": "no permission",
    "NVML_ERROR_GPU_IS_LOST": "GPU is lost",
    "NVML_ERROR_FUNCTION_NOT_FOUND": "function not found (driver too old)",
    "NVML_ERROR_LIBRARY_NOT_FOUND": "NVIDIA driver/NVML library not found",
    "NVML_ERROR_DRIVER_NOT_LOADED": "NVIDIA driver not loaded",
    "NVML_ERROR_LIB_RM_VERSION_MISMATCH": "NVML library and driver versions do not match",
    "NVML_ERROR_UNINITIALIZED": "NVML not initialised",
    "NVML_ERROR_TIMEOUT": "timeout",
    "NVML_ERROR_NOT_FOUND": "not found",
    "NVML_ERROR_NO_DATA": "no data yet",
    "NVML_ERROR_RESET_REQUIRED": "GPU requires reset",
    "NVML_ERROR_ARGUMENT_VERSION_MISMATCH": "not supported (struct version unknown to this driver)",
    "NVML_ERROR_INVALID_ARGUMENT": "invalid argument",
    "NVML_ERROR_INSUFFICIENT_SIZE": "insufficient size",
    "NVML_ERROR_CORRUPTED_INFOROM": "corrupted infoROM",
    "NVML_ERROR_IN_USE": "in use",
    "NVML_ERROR_MEMORY": "insufficient host memory",
    "NVML_ERROR_NOT_READY": "not ready",
    "NVML_ERROR_GPU_NOT_FOUND": "GPU not found",
    "NVML_ERROR_OPERATING_SYSTEM": "blocked by the operating system",
    "NVML_ERROR_UNKNOWN": "unknown NVML error",
}

#: What an unversioned binding (e.g. nvmlDeviceGetComputeRunningProcesses, wrapped by pynvml's
#: throwOnVersionMismatch) raises on a driver that lacks the versioned symbol: pynvml turns the
#: FunctionNotFound into NVMLLibraryMismatchError, which is NOT an NVMLError subclass.
DRIVER_TOO_OLD = "function not found (driver too old)"


def reason(exc: BaseException) -> str:
    """A short reason for an NVML (or any) exception."""
    try:
        import pynvml
    except ImportError:  # pragma: no cover - nvidia-ml-py is a dependency
        return str(exc) or type(exc).__name__
    # pynvml raises NVMLError(code), whose __new__ returns the NVMLError_<Name> subclass with
    # `.value` = the code; compare codes (works for the subclass and a bare NVMLError alike).
    # Duck-typed on the class name too, so an error from another copy of the module still maps.
    code = getattr(exc, "value", None)
    is_nvml = isinstance(exc, pynvml.NVMLError) or type(exc).__name__.startswith("NVMLError")
    if is_nvml and isinstance(code, int):
        for name, text in _REASONS.items():
            if getattr(pynvml, name, object()) == code:
                return text
        try:
            return f"NVML error {int(code)}: {exc}"
        except Exception:  # str() asks libnvidia-ml for unknown codes
            return f"NVML error {code}"
    mismatch = getattr(pynvml, "NVMLLibraryMismatchError", None)
    if mismatch is not None and isinstance(exc, mismatch):
        return DRIVER_TOO_OLD
    return str(exc) or type(exc).__name__


def _no_library() -> bool:
    """On Linux NVML is libnvidia-ml.so.1 (pynvml loads that name): when it cannot be loaded, NVML
    cannot start, known without importing nvidia-ml-py (~0.25 s of class definitions, paid by every
    dashboard kernel on a machine without a GPU). An imported pynvml (a test's fake) is always asked."""
    if not sys.platform.startswith("linux") or "pynvml" in sys.modules:
        return False
    import ctypes

    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return True
    return False


def ensure() -> str | None:
    """Initialise NVML if not yet tried. None when usable, else why not ("no NVIDIA GPU found (...)")."""
    global _state, _atexit_registered
    with _lock:
        if _state is None:
            if _no_library():
                _state = _REASONS["NVML_ERROR_LIBRARY_NOT_FOUND"]  # what nvmlInit would say
                return _state
            try:
                import pynvml
            except ImportError:
                _state = "nvidia-ml-py is not installed"
            else:
                try:
                    pynvml.nvmlInit()
                    _state = "ok"
                except Exception as exc:  # NVMLError, OSError from a broken library
                    _state = reason(exc)
            if _state == "ok" and not _atexit_registered:
                atexit.register(_shutdown_at_exit)
                _atexit_registered = True
        return None if _state == "ok" else _state


def module() -> Any:
    """The pynvml module (after ensure() returned None)."""
    import pynvml

    return pynvml


def attempt(fn: str, *args: Any, **kwargs: Any) -> tuple[Any, str | None]:
    """(pynvml.<fn>(*args), None), or (None, why) when NVML is unusable or the call failed."""
    why = ensure()
    if why is not None:
        return None, why
    pynvml = module()
    f = getattr(pynvml, fn, None)
    if f is None:
        return None, f"{fn} missing from nvidia-ml-py"
    try:
        return f(*args, **kwargs), None
    except Exception as exc:
        return None, reason(exc)


def compute_processes(nv: Any, handle: Any) -> list[Any]:
    """nvmlDeviceGetComputeRunningProcesses, falling back to the _v2 binding: the unversioned binding
    calls the _v3 symbol and, on a driver without it, raises NVMLLibraryMismatchError (not an
    NVMLError). Raises what NVML raises otherwise."""
    mismatch = getattr(nv, "NVMLLibraryMismatchError", None)
    procs: list[Any]
    try:
        procs = nv.nvmlDeviceGetComputeRunningProcesses(handle)
    except Exception as exc:
        if mismatch is None or not isinstance(exc, mismatch):
            raise
        procs = nv.nvmlDeviceGetComputeRunningProcesses_v2(handle)
    return procs


def shutdown() -> None:
    """Release NVML (idempotent); the next ensure() initialises it again."""
    global _state
    with _lock:
        if _state == "ok":
            try:
                module().nvmlShutdown()
            except Exception:
                pass
        if _state != _EXITING:
            _state = None


def _shutdown_at_exit() -> None:
    """The atexit hook: shut NVML down and refuse to initialise it again in this process."""
    global _state
    with _lock:
        shutdown()
        _state = _EXITING


def reset() -> None:
    """Forget the cached state (tests that install a fake NVML call this)."""
    global _state
    with _lock:
        shutdown()
        _state = None


def text(v: Any) -> Any:
    """NVML strings arrive as bytes on old bindings: decode them; pass anything else through."""
    return v.decode(errors="replace") if isinstance(v, bytes) else v
