"""NVML through nvidia-ml-py, the one backend every layer uses (specs/detection, telemetry, proofs).

Initialised lazily on first use (never at import), once per process, under a lock, and shut down at
exit. `attempt` turns an NVML exception into (None, readable reason), so no caller sees an NVML
exception; telemetry.nvml_backend.call wraps that into a marked NA. This module sits at the bottom
layer beside units and persist: it imports only aiworkbook.message (a reason is a message: English
as a str, said in a dashboard's language by its id), so specs may use it.

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

#: NVML return codes a person may read the reason of: message `nvml.<code>` (nvml_id), worded close
#: to nvidia-smi, in every catalogue (aiworkbook/locale)
_CODES = (
    "NVML_ERROR_NOT_SUPPORTED",
    "NVML_ERROR_NO_PERMISSION",
    "NVML_ERROR_GPU_IS_LOST",
    "NVML_ERROR_FUNCTION_NOT_FOUND",
    "NVML_ERROR_LIBRARY_NOT_FOUND",
    "NVML_ERROR_DRIVER_NOT_LOADED",
    "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
    "NVML_ERROR_UNINITIALIZED",
    "NVML_ERROR_TIMEOUT",
    "NVML_ERROR_NOT_FOUND",
    "NVML_ERROR_NO_DATA",
    "NVML_ERROR_RESET_REQUIRED",
    "NVML_ERROR_ARGUMENT_VERSION_MISMATCH",
    "NVML_ERROR_INVALID_ARGUMENT",
    "NVML_ERROR_INSUFFICIENT_SIZE",
    "NVML_ERROR_CORRUPTED_INFOROM",
    "NVML_ERROR_IN_USE",
    "NVML_ERROR_MEMORY",
    "NVML_ERROR_NOT_READY",
    "NVML_ERROR_GPU_NOT_FOUND",
    "NVML_ERROR_OPERATING_SYSTEM",
    "NVML_ERROR_UNKNOWN",
)


def nvml_id(code: str) -> str:
    """The message id of an NVML return code's reason: NVML_ERROR_NO_PERMISSION -> nvml.no_permission."""
    return f"nvml.{code.split('_', 2)[2].lower()}"


def said(code: str) -> str:
    """The reason for NVML return code `code` (a Msg: English as a str)."""
    from aiworkbook.message import Msg

    return Msg(nvml_id(code))


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
        for name in _CODES:
            if getattr(pynvml, name, object()) == code:
                return said(name)
        from aiworkbook.message import Msg, quoted

        try:
            return Msg("nvml.error", code=code, error=quoted(exc))
        except Exception:  # str() asks libnvidia-ml for unknown codes
            return Msg("nvml.error", code=code, error="?")
    mismatch = getattr(pynvml, "NVMLLibraryMismatchError", None)
    if mismatch is not None and isinstance(exc, mismatch):
        return said("NVML_ERROR_FUNCTION_NOT_FOUND")  # == DRIVER_TOO_OLD
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
                _state = said("NVML_ERROR_LIBRARY_NOT_FOUND")  # what nvmlInit would say
                return _state
            try:
                import pynvml
            except ImportError:
                from aiworkbook.message import Msg

                _state = Msg("nvml.no_binding")
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
