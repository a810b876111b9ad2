"""Timing repeated trials honestly: warm-up first, synchronised clocks, explicit CPU threads, spread.

On CUDA each trial is bracketed by CUDA events (the GPU's own clock, after a synchronize); on the
CPU by perf_counter with torch's thread count set explicitly (torch.utils.benchmark.Timer would
quietly use one thread). A spread warning is raised when IQR/median exceeds 10 %.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field

from aiworkbook import hostfacts
from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.proofs.stats import SPREAD_LIMIT, Stats, summarize


@dataclass(frozen=True)
class Timing:
    """Seconds per trial, their statistics, and how they were taken."""

    samples: list[float]
    stats: Stats
    device: str
    method: str  # "cuda-events" or "perf_counter"
    threads: int
    warmup: int
    warnings: list[str] = field(default_factory=list)

    @property
    def median(self) -> float:
        return self.stats.median


@contextmanager
def cpu_threads(n: int | None):
    """Set torch's intra-op threads for the block (None: leave as is), then restore them."""
    import torch

    before = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(bounded_threads(n, warn=False))
    try:
        yield torch.get_num_threads()
    finally:
        torch.set_num_threads(before)


def machine_threads() -> int:
    """Logical CPUs this process may run on (its affinity mask, else the machine's count)."""
    return hostfacts.logical_cpus()


def bounded_threads(n: int, *, warn: bool = True) -> int:
    """`n` threads, at most the logical CPUs of this machine: 100000 threads crash torch's thread pool
    (a segfault), and more threads than CPUs only oversubscribe. Above the count: a warning on stderr."""
    import sys

    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise SpecError("threads", n, ">= 1")
    cores = machine_threads()
    if n > cores:
        if warn:
            print(
                f"warning: threads {n} is above the {cores} logical CPUs of this machine; using {cores}",
                file=sys.stderr,
            )
        return cores
    return n


def default_threads() -> int:
    """Physical cores (what compute-bound kernels scale with), else logical CPUs."""
    return hostfacts.physical_cores()


def time_trials(
    fn: Callable[[], object],
    *,
    device: str = "cpu",
    warmup: int = 2,
    trials: int = 10,
    threads: int | None = None,
    progress: bool = False,
    desc: str = "trials",
    clock: Callable[[], float] = time.perf_counter,
) -> Timing:
    """Run fn `warmup` times untimed, then `trials` times timed; return the samples and their stats.

    `clock` times CPU trials (injectable so tests need no sleeps); CUDA trials use CUDA events."""
    if trials < 1:
        raise SpecError("trials", trials, ">= 1")
    if warmup < 0:
        raise SpecError("warmup", warmup, ">= 0")
    if device not in ("cpu", "cuda"):
        raise SpecError("device", device, "cpu, cuda")
    threads = threads if threads is not None else (default_threads() if device == "cpu" else None)
    from aiworkbook.proofs.control import checkpoint

    samples: list[float] = []
    with cpu_threads(threads) as used:
        for _ in range(warmup):
            checkpoint(desc)
            fn()
        _sync(device)
        from aiworkbook.proofs.progress import bar as progress_bar

        bar = progress_bar(trials, desc, progress)
        try:
            for _ in range(trials):
                checkpoint(desc)  # a cancel lands between trials (each well under a second)
                samples.append(_one(fn, device, clock))
                bar.update(1)
        finally:
            bar.close()
    st = summarize(samples)
    warnings: list[str] = []
    if st.wide:
        warnings.append(Msg("timing.spread", spread=st.spread, limit=SPREAD_LIMIT, trials=st.n))
    method = "cuda-events" if device == "cuda" else "perf_counter"
    return Timing(samples, st, device, method, used, warmup, warnings)


def _one(fn: Callable[[], object], device: str, clock: Callable[[], float] = time.perf_counter) -> float:
    if device == "cuda":
        import torch

        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3
    t0 = clock()
    fn()
    return clock() - t0


def _sync(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()
