"""environment() and gpu_available(): the JSON-safe snapshot every ProofResult records (GPU
identity, clocks vs max, power limit, throttle reasons, temperature; host CPU and RAM), so a
result says what it ran on and whether the GPU was throttled while it ran."""

from __future__ import annotations

import threading
from typing import Any

from aiworkbook.message import Msg, record
from aiworkbook.telemetry.gpu_metrics import is_throttled, throttle_notes
from aiworkbook.telemetry.na import to_json

_reader = None
_lock = threading.Lock()

#: environment key -> GPUReader field (renamed where the contract says so).
_LIVE = {
    "sm_clock_mhz": "sm_clock_mhz",
    "sm_clock_max_mhz": "sm_clock_max_mhz",
    "mem_clock_mhz": "mem_clock_mhz",
    "mem_clock_max_mhz": "mem_clock_max_mhz",
    "power_limit_w": "power_limit_w",
    "power_w": "power_w",
    "throttle_reasons": "throttle_reasons",
    "temperature_c": "temp_gpu_c",
    "pstate": "pstate",
    "util_gpu_pct": "util_gpu_pct",
    "mem_used_bytes": "mem_used_bytes",
    "mem_total_bytes": "mem_total_bytes",
    "ecc_volatile_uncorrected": "ecc_volatile_uncorrected",
    "pcie_gen": "pcie_gen",
    "pcie_width": "pcie_width",
}


def _gpu_reader():
    """The live reader: the shared sampler's when it reads NVML, else one of our own (never a replay)."""
    global _reader
    from aiworkbook.telemetry.sampler import existing_sampler

    shared = existing_sampler()
    if shared is not None and getattr(shared.gpu_reader, "source", "") == "nvml":
        return shared.gpu_reader
    with _lock:
        if _reader is None:
            from aiworkbook.telemetry.gpu_reader import GPUReader

            _reader = GPUReader()
        return _reader


def reset() -> None:
    """Forget the cached reader (tests that swap the NVML backend)."""
    global _reader
    with _lock:
        _reader = None


def gpu_available() -> bool:
    """NVML initialised and at least one device; never raises."""
    try:
        return _gpu_reader().count() > 0
    except Exception:
        return False


def host_info() -> dict[str, Any]:
    """The host (specs.detection.host_facts: the one collector detect and the proofs use too)."""
    from aiworkbook.specs.detection import host_facts

    return host_facts()


def environment() -> dict[str, Any]:
    """{"gpus": [...], "gpu_status": "...", "host": {...}}, JSON-safe; a failed metric is {"na": reason}."""
    try:
        reader = _gpu_reader()
        status = reader.status()
        gpus = []
        for i in range(reader.count()):
            ident = reader.identity(i)
            live = reader.read(i)
            entry = dict(ident)
            entry.update({k: live.get(f) for k, f in _LIVE.items()})
            entry["throttled"] = is_throttled(entry["throttle_reasons"])
            entry["throttle_notes"] = throttle_notes(entry["throttle_reasons"])
            gpus.append(entry)
    except Exception as exc:  # never let a proof fail because telemetry did
        why = Msg("gpu.telemetry_error", error=f"{type(exc).__name__}: {exc}")
        status, gpus = Msg("gpu.none_found", why=why), []
    out = to_json({"gpus": gpus, "gpu_status": status, "host": host_info()})
    if record(status) is not None:  # said in a report's language after the result is read back
        out["messages"] = {"gpu_status": record(status)}
    return out
