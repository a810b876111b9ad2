"""Push delivery from the shared sampler: each consumer gets new samples at its own interval.

nvitop's collector pattern: a dashboard does not copy the ring every tick, it is handed the samples
taken since its last delivery. The sampler reads at the fastest interval any consumer asked for
(never faster than MIN_INTERVAL_S), so several viewers at 1 s and 2 s share one reader, and a
consumer leaving never changes another's cadence.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from aiworkbook.telemetry.sample import Sample

Callback = Callable[[list[Sample]], Any]


class Subscription:
    """One consumer of the sampler. `close()` (or the sampler's `unsubscribe`) ends it; a callback that
    raises is counted in `errors` and keeps its subscription."""

    def __init__(self, sampler: Any, callback: Callback, interval: float) -> None:
        self.sampler = sampler
        self.callback = callback
        self.interval = interval
        self.errors = 0
        self.last_error = ""
        self.delivered = 0
        self._pending: list[Sample] = []
        self._last: float | None = None
        self._lock = threading.Lock()
        self.closed = False

    def offer(self, sample: Sample) -> None:
        """Called by the sampler after each sample; delivers a batch once `interval` has passed."""
        if self.closed:
            return
        with self._lock:
            self._pending.append(sample)
            due = self._last is None or sample.t - self._last >= self.interval - 1e-9
            if not due:
                return
            batch, self._pending = self._pending, []
            self._last = sample.t
        try:
            self.callback(batch)
            self.delivered += len(batch)
        except Exception as exc:  # a broken viewer must not stop the sampler or the other viewers
            self.errors += 1
            self.last_error = f"{type(exc).__name__}: {exc}"

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.sampler.unsubscribe(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
