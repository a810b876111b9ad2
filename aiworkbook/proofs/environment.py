"""The environment a proof ran on: telemetry's snapshot plus torch's build and the threads it used."""

from __future__ import annotations

import platform
from typing import Any


def capture(device: str = "cpu") -> dict[str, Any]:
    """JSON-safe snapshot: GPUs, driver, clocks and throttle reasons (telemetry), torch, CUDA, CPU.

    Telemetry failures never stop a proof: they become {"na": reason}.
    """
    env: dict[str, Any] = {}
    try:
        from aiworkbook.telemetry import environment

        env.update(environment())
    except Exception as exc:  # telemetry is optional for a proof; say why it is missing
        env["telemetry"] = {"na": f"{type(exc).__name__}: {exc}"}
        env.setdefault("host", _host())
    import torch

    env["torch"] = {
        "version": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "num_threads": torch.get_num_threads(),
    }
    env["python"] = platform.python_version()
    env["device"] = device
    if device == "cuda" and torch.cuda.is_available():
        p = torch.cuda.get_device_properties(torch.cuda.current_device())
        env["cuda_device"] = {
            "name": p.name,
            "capability": f"{p.major}.{p.minor}",
            "total_memory": int(p.total_memory),
            "multiprocessors": p.multi_processor_count,
        }
    return env


def throttled(env: dict[str, Any]) -> bool:
    """True when any GPU in the snapshot reports a throttle reason other than idle / none."""
    benign = {"none", "gpu_idle", "idle", "applications_clocks_setting", "clocks_event_reason_none"}
    for g in env.get("gpus", []) or []:
        reasons = g.get("throttle_reasons") if isinstance(g, dict) else None
        if isinstance(reasons, list) and any(str(r).lower() not in benign for r in reasons):
            return True
    return False


def _host() -> dict[str, Any]:
    import os

    import psutil

    from aiworkbook.specs.detection import cpu_model

    return {
        "cpu_model": cpu_model(),
        "cores": psutil.cpu_count(logical=False) or os.cpu_count(),
        "threads": os.cpu_count(),
        "ram_bytes": int(psutil.virtual_memory().total),
    }
