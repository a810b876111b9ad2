"""Telemetry's view of aiworkbook.nvml: the same process-wide NVML state, with `call` answering a
marked NA instead of (None, reason), so no reader ever sees an NVML exception."""

from __future__ import annotations

from typing import Any

from aiworkbook.nvml import (
    DRIVER_TOO_OLD,
    attempt,
    compute_processes,
    ensure,
    module,
    reason,
    reset,
    shutdown,
    text,
)
from aiworkbook.telemetry.na import NA

__all__ = [
    "DRIVER_TOO_OLD",
    "call",
    "compute_processes",
    "ensure",
    "module",
    "reason",
    "reset",
    "shutdown",
    "text",
]


def call(fn: str, *args: Any, **kwargs: Any) -> Any:
    """pynvml.<fn>(*args) or NA(reason): the only way readers touch NVML."""
    value, why = attempt(fn, *args, **kwargs)
    return NA(why) if why is not None else value
