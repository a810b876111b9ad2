"""Python's garbage collector during a proof.

A full collection stops every thread of the process while it walks the heap, and a Jupyter kernel's
heap (Altair, pandas, ipywidgets and torch loaded) is large: on the 2-core CI machine the first serving
proof in a fresh kernel met full collections of up to 162 ms, and its continuous-batching p95 TTFT
read up to 328 ms instead of about 50 ms (docs/proofs.md), because the load generator, the server and
the engine share the process. Load generators and engines guard against the same: AIPerf's
timing-critical services collect, `gc.freeze()` and disable the collector; vLLM calls
`freeze_gc_heap()` (vllm/utils/gc_utils.py) after start-up and warm-up "to reduce GC overhead from
static objects during serving time".

Here, around each proof (`quiet_gc`, in the registry): collect, then freeze what survives (moved out
of every later collection, not freed), so the collections during the proof walk only what the proof
allocates; unfreeze afterwards. A proof's measured window (`measuring`: a serving load point) starts
with a collection and runs with automatic collection off, as AIPerf's workers do, so no pause falls
inside it; the collector is back on between windows, so what a window leaves behind (an engine of a
previous step, its KV pool) is freed. The automatic collections that still happen are timed
(`gc.callbacks`) and go into the result's environment, with a note when one was long.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from aiworkbook.message import Msg

#: a pause from this long up gets a note on the result (a latency percentile can move by that much)
NOTE_FROM_S = 0.010


class GcPauses:
    """Collections seen while it is installed: count per generation, total and longest pause."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock  # injectable: tests time a pause without sleeping
        self.counting = True  # off while `measuring` collects on purpose, outside the window
        self.windows = 0  # measured windows run with automatic collection off
        self.counts = [0, 0, 0]
        self.total_s = 0.0
        self.longest_s = 0.0
        self._t0: float | None = None

    def callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._t0 = self._clock()
            return
        if self._t0 is None:  # installed mid-collection
            return
        took = self._clock() - self._t0
        self._t0 = None
        if not self.counting:
            return
        gen = int(info.get("generation", 2))
        self.counts[min(max(gen, 0), 2)] += 1
        self.total_s += took
        self.longest_s = max(self.longest_s, took)

    def summary(self, frozen: int) -> dict[str, Any]:
        return {
            "frozen_objects": frozen,
            "collections": {"gen0": self.counts[0], "gen1": self.counts[1], "gen2": self.counts[2]},
            "pause_s": self.total_s,
            "longest_pause_s": self.longest_s,
            "windows_without_gc": self.windows,
        }

    def note(self) -> str | None:
        """A line for the result's notes when a pause was long enough to show in a timing. None for a
        proof that measured in windows (`measuring`): its pauses fell between them."""
        if self.longest_s < NOTE_FROM_S or self.windows:
            return None
        n = sum(self.counts)
        return Msg(
            "gc.note",
            runs=n,
            total_ms=self.total_s * 1e3,
            longest_ms=self.longest_s * 1e3,
            full=self.counts[2],
        )


_active: GcPauses | None = None  # the running proof's pauses (one proof at a time: the proof lock)


@contextmanager
def quiet_gc() -> Iterator[tuple[GcPauses, int]]:
    """Collect and freeze the heap for the block; yields (the pauses seen in it, objects frozen)."""
    global _active
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    pauses = GcPauses()
    gc.callbacks.append(pauses.callback)
    _active = pauses
    try:
        yield pauses, frozen
    finally:
        _active = None
        gc.callbacks.remove(pauses.callback)
        gc.unfreeze()


@contextmanager
def measuring() -> Iterator[None]:
    """A measured window: a collection first (not counted as a pause: it is outside the window),
    then no automatic collection until the window ends (the collector's state is restored)."""
    pauses = _active
    if pauses is not None:
        pauses.counting = False
        pauses.windows += 1
    try:
        gc.collect()
    finally:
        if pauses is not None:
            pauses.counting = True
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
