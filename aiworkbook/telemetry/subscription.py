"""Push delivery from the shared sampler: each consumer gets new samples at its own interval.

nvitop's collector pattern: a dashboard does not copy the ring every tick, it is handed the samples
taken since its last delivery. The sampler reads at the fastest interval any consumer asked for
(never faster than MIN_INTERVAL_S), so several viewers at 1 s and 2 s share one reader, and a
consumer leaving never changes another's cadence.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import threading
from collections.abc import Callable, Iterator
from typing import Any

from aiworkbook.errors import SpecError
from aiworkbook.telemetry.sample import Sample

Callback = Callable[[list[Sample]], Any]


class Subscription:
    """One consumer of the sampler. `close()` (or the sampler's `unsubscribe`) ends it; a callback that
    raises is counted in `errors` and keeps its subscription.

    Phases are per consumer: `with sub.phase("prefill"):` tags the samples delivered to this consumer
    (and records the span, for `sub.window("prefill")`) without tagging anyone else's."""

    def __init__(self, sampler: Any, callback: Callback, interval: float) -> None:
        self.sampler = sampler
        self.callback = callback
        self.interval = interval
        self.errors = 0
        self.last_error = ""
        self._pending: list[Sample] = []
        self._last: float | None = None
        self._lock = threading.Lock()
        self.closed = False
        self._phases: list[str] = []
        #: (phase, start, end) on the sampler's clock, oldest first; end None while the phase is open
        self.spans: list[tuple[str, float, float | None]] = []

    @property
    def current_phase(self) -> str | None:
        with self._lock:
            return self._phases[-1] if self._phases else None

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[Subscription]:
        """Tag this consumer's samples with `name` inside the block (the innermost phase wins)."""
        if not isinstance(name, str) or not name:
            raise SpecError("phase", name, "a non-empty string")
        clock = self.sampler._clock
        with self._lock:
            self._phases.append(name)
            self.spans.append((name, clock(), None))
            span = len(self.spans) - 1
        try:
            yield self
        finally:
            with self._lock:
                for i in range(len(self._phases) - 1, -1, -1):
                    if self._phases[i] == name:
                        del self._phases[i]
                        break
                self.spans[span] = (name, self.spans[span][1], clock())

    def window(self, phase: str):
        """The sampler's window over this consumer's latest span of `phase`, [start, end) on the sampler's
        clock (SpecError if never entered)."""
        with self._lock:
            spans = [sp for sp in self.spans if sp[0] == phase]
        if not spans:
            raise SpecError(
                "phase", phase, "a phase this subscriber entered: " + ", ".join(self.phase_names())
            )
        _, start, end = spans[-1]
        until = None if end is None else math.nextafter(end, -math.inf)
        return self.sampler.window(since=start, until=until)

    def phase_names(self) -> list[str]:
        with self._lock:
            return list(dict.fromkeys(sp[0] for sp in self.spans))

    def offer(self, sample: Sample) -> None:
        """Called by the sampler after each sample; delivers a batch once `interval` has passed."""
        if self.closed:
            return
        with self._lock:
            if self._phases:  # this consumer's own phase, not the sampler's
                sample = dataclasses.replace(sample, phase=self._phases[-1])
            self._pending.append(sample)
            due = self._last is None or sample.t - self._last >= self.interval - 1e-9
            if not due:
                return
            batch, self._pending = self._pending, []
            self._last = sample.t
        try:
            self.callback(batch)
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
