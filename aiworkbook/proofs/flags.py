"""Honesty flags: the qualifiers a reader needs before trusting a number (docs/architecture.md, "Measuring honestly")."""

from __future__ import annotations

from aiworkbook.errors import SpecError

CPU_FALLBACK = "cpu-fallback"
FSYNCED = "fsynced"
CACHE_COLD = "cache-cold"
L2_RESIDENT = "l2-resident"
LLC_RESIDENT = "llc-resident"
THROTTLED = "throttled"
QUEUE_TIME_INCLUDED = "queue-time-included"
SPREAD_WIDE = "spread-wide"
PROXY_MODEL = "proxy-model"
ACCOUNTED = "accounted"
CONTEXT_EXCLUDED = "context-excluded"
BF16_UNSUPPORTED = "bf16-unsupported"

#: Every flag a ProofResult may carry, with what it means for the figure.
FLAGS: dict[str, str] = {
    CPU_FALLBACK: "ran on the CPU because no CUDA device was available (device='auto')",
    FSYNCED: "writes were fsynced before the clock stopped",
    CACHE_COLD: "reads came from storage, not from the page cache",
    L2_RESIDENT: "the working set fits in the GPU's L2 cache: bandwidth is the cache's, not DRAM's",
    LLC_RESIDENT: "the buffer is smaller than 4x the CPU's last-level cache: bandwidth may be the cache's",
    THROTTLED: "the GPU reported a clock-throttle reason during the measurement",
    QUEUE_TIME_INCLUDED: "latencies count from the scheduled arrival, queueing included",
    SPREAD_WIDE: "IQR/median above 10 %: the median is less certain than its digits suggest",
    PROXY_MODEL: "a smaller proxy (fewer layers or a smaller vocabulary) ran; the prediction was scaled alike",
    ACCOUNTED: "peak memory counted from tensors (parameters, gradients, optimizer state, saved tensors), "
    "not read from an allocator",
    CONTEXT_EXCLUDED: "the device-level delta could not include the CUDA context (no NVML reading before it)",
    BF16_UNSUPPORTED: "the GPU computes no bf16 natively (compute capability < 8): the default 16-bit "
    "dtype fell back to fp16",
}


def check_flags(flags) -> list[str]:
    """The flags, sorted and de-duplicated; an unknown name raises SpecError listing the known ones."""
    out = sorted(set(flags))
    for f in out:
        if f not in FLAGS:
            raise SpecError("flags", f, ", ".join(FLAGS))
    return out
