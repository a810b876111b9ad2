"""Live telemetry: NVML and host readers, one shared sampler per process, windows and summaries,
export, recorded-trace replay and an OpenMetrics endpoint.

    from aiworkbook.telemetry import environment, get_sampler, gpu_available
    s = get_sampler(); s.start()
    with s.phase("decode"): ...
    s.window(since=t0).summary()

Importing this package is cheap: NVML is initialised on first use, never at import.
"""

from __future__ import annotations

from aiworkbook.telemetry.environment import environment, gpu_available
from aiworkbook.telemetry.na import NA, is_na
from aiworkbook.telemetry.sampler import Sampler, get_sampler

__all__ = ["NA", "Sampler", "environment", "get_sampler", "gpu_available", "is_na"]
