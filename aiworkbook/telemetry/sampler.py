"""The one shared background sampler per process: a worker thread reads the GPUs and the host at a
fixed cadence into a bounded ring buffer, tags samples with the current phase, drains XID events
and, on request, NVML's own sub-second buffers (nvmlDeviceGetSamples).

Widgets, proofs and the CLI all read from the same sampler (`get_sampler()`), so opening three
dashboards does not poll NVML three times. A tick that fails is counted, never fatal.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.telemetry.columns import ColumnWindow, SampleRing
from aiworkbook.telemetry.na import is_na
from aiworkbook.telemetry.ring import Ring
from aiworkbook.telemetry.sample import Sample
from aiworkbook.telemetry.summary import Window

MIN_INTERVAL_S = 0.1
MAX_INTERVAL_S = 3600.0


def check_interval(interval: float) -> float:
    try:
        value = float(interval)
    except (TypeError, ValueError):
        raise SpecError(
            "interval", interval, Msg("allowed.seconds_between", low=MIN_INTERVAL_S, high=MAX_INTERVAL_S)
        ) from None
    if not MIN_INTERVAL_S <= value <= MAX_INTERVAL_S:
        raise SpecError(
            "interval", interval, Msg("allowed.seconds_between", low=MIN_INTERVAL_S, high=MAX_INTERVAL_S)
        )
    return value


class Sampler:
    """Samples `gpu_reader` (GPUReader or ReplayReader) and `host_reader` every `interval` seconds."""

    def __init__(
        self,
        interval: float = 1.0,
        capacity: int = 36_000,
        gpu_reader: Any = None,
        host_reader: Any = None,
        *,
        host: bool = True,
        events: bool = True,
        hires: bool = False,
        sample_on_phase: bool = True,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        from aiworkbook.telemetry.gpu_reader import GPUReader
        from aiworkbook.telemetry.host_reader import HostReader

        self._interval = check_interval(interval)
        self.ring: SampleRing = SampleRing(capacity)  # by sample and by column (telemetry.columns)
        self.gpu_reader = gpu_reader if gpu_reader is not None else GPUReader(clock=clock)
        self.host_reader = (
            host_reader if host_reader is not None else (HostReader(clock=clock) if host else None)
        )
        self.hires: dict[tuple[int, str], Ring[tuple[int, float]]] = {}
        self.errors = 0
        self.last_error = ""
        self._want_events = events
        self._want_hires = hires
        self._sample_on_phase = sample_on_phase
        self._clock = clock
        self._wall = wall
        self._phases: list[str] = []
        self._lock = threading.RLock()
        self._read_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._timeline: Any = None
        self._hires_since: dict[tuple[int, str], int] = {}
        self._subs: list[Any] = []
        self._started_by_subs = False

    # -- settings ------------------------------------------------------------------------------
    @property
    def interval(self) -> float:
        return self._interval

    @interval.setter
    def interval(self, value: float) -> None:
        self._interval = check_interval(value)

    @property
    def read_interval(self) -> float:
        """The cadence the reader runs at: the fastest of the sampler's own and its subscribers'."""
        with self._lock:
            return min([self._interval] + [s.interval for s in self._subs])

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def events(self) -> list[dict[str, Any]]:
        """The XID/critical-event timeline seen so far."""
        return list(self._timeline.events) if self._timeline is not None else []

    def status(self) -> str:
        return self.gpu_reader.status()

    # -- phases --------------------------------------------------------------------------------
    @property
    def current_phase(self) -> str | None:
        with self._lock:
            return self._phases[-1] if self._phases else None

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[Sampler]:
        """Tag samples taken inside with `name` (the innermost phase wins when nested). When the
        sampler runs, a sample is also taken on entry and exit so short phases are not missed."""
        if not isinstance(name, str) or not name:
            raise SpecError("phase", name, "a non-empty string")
        with self._lock:
            self._phases.append(name)
        try:
            if self._sample_on_phase and self.running:
                self.sample_now()
            yield self
        finally:
            if self._sample_on_phase and self.running:
                self.sample_now()
            with self._lock:  # this phase's own entry: the innermost (last) one with its name
                for i in range(len(self._phases) - 1, -1, -1):
                    if self._phases[i] == name:
                        del self._phases[i]
                        break

    # -- sampling ------------------------------------------------------------------------------
    def sample_now(self) -> Sample:
        """Take one sample now (on the caller's thread) and keep it."""
        with self._read_lock:
            phase = self.current_phase
            t, wall = self._clock(), self._wall()
            gpus = tuple(self.gpu_reader.read_all())
            host = self.host_reader.read() if self.host_reader is not None else {}
            if self._want_events:
                self._poll_events()
            if self._want_hires:
                self._poll_hires()
            s = Sample(t=t, wall=wall, phase=phase, gpus=gpus, host=host)
            self.ring.append(s)
        for sub in self.subscribers():
            sub.offer(s)
        return s

    # -- subscribers ---------------------------------------------------------------------------
    def subscribe(self, callback, interval: float | None = None, *, start: bool = True):
        """Push new samples to `callback(list[Sample])` every `interval` seconds (default: the
        sampler's), from the sampler's thread. Starts the sampler when `start` and it is not running;
        a sampler started this way stops when its last subscriber leaves. Returns a Subscription."""
        from aiworkbook.telemetry.subscription import Subscription

        if not callable(callback):
            raise SpecError("callback", callback, "a callable taking a list of samples")
        sub = Subscription(
            self, callback, check_interval(interval if interval is not None else self._interval)
        )
        with self._lock:
            self._subs.append(sub)
        if start and not self.running:
            self.start()
            self._started_by_subs = True
        return sub

    def unsubscribe(self, sub) -> None:
        """End a subscription (idempotent); the last one out stops a sampler that subscribing started."""
        sub.closed = True
        with self._lock:
            if sub in self._subs:
                self._subs.remove(sub)
            last = not self._subs and self._started_by_subs
            if last:
                self._started_by_subs = False
        if last:
            self.stop()

    def subscribers(self) -> list:
        with self._lock:
            return list(self._subs)

    def _poll_events(self) -> None:
        if self._timeline is None:
            handles = getattr(self.gpu_reader, "handles", None)
            if handles is None:
                self._want_events = False
                return
            from aiworkbook.telemetry.events import EventTimeline

            self._timeline = EventTimeline(handles(), clock=self._clock)
        self._timeline.poll()

    def _poll_hires(self) -> None:
        history = getattr(self.gpu_reader, "history", None)
        if history is None:
            return
        for i in range(self.gpu_reader.count()):
            for kind in ("gpu_util", "power"):
                key = (i, kind)
                rows = history(i, kind, self._hires_since.get(key, 0))
                if is_na(rows) or not rows:
                    continue
                ring = self.hires.get(key)
                if ring is None:  # built once per key, not on every tick
                    ring = self.hires[key] = Ring(self.ring.capacity * 10)
                for row in rows:
                    ring.append(row)
                self._hires_since[key] = rows[-1][0]

    def _run(self, stop: threading.Event) -> None:
        # `stop` belongs to this worker alone: a start() racing a stop() from another thread
        # gets a fresh event, so an old worker can never be revived (and orphaned) by it.
        next_t = self._clock()
        while not stop.is_set():
            try:
                self.sample_now()
            except Exception as exc:  # a reader bug must not kill the shared sampler
                self.errors += 1
                self.last_error = f"{type(exc).__name__}: {exc}"
            next_t += self.read_interval
            delay = next_t - self._clock()
            if delay < 0:  # fell behind (slow NVML, suspended laptop): skip, do not burst
                next_t = self._clock()
                delay = 0
            stop.wait(delay)

    def start(self) -> Sampler:
        """Start the worker thread (no-op when already running)."""
        with self._lock:
            if self.running:
                return self
            self._stop = threading.Event()
            self._thread = threading.Thread(
                target=self._run, args=(self._stop,), name="aiworkbook-telemetry", daemon=True
            )
            self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the worker thread (no-op when not running); samples stay in the ring."""
        with self._lock:
            thread, self._thread = self._thread, None
            self._stop.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def __enter__(self) -> Sampler:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- reading -------------------------------------------------------------------------------
    def samples(
        self, since: float | None = None, until: float | None = None, phase: str | None = None
    ) -> list[Sample]:
        return self.ring.items(
            lambda s: (
                (since is None or s.t >= since)
                and (until is None or s.t <= until)
                and (phase is None or s.phase == phase)
            )
        )

    def window(
        self, since: float | None = None, until: float | None = None, phase: str | None = None
    ) -> ColumnWindow:
        """Samples (and events) from monotonic time `since` to `until`, optionally of one phase, read
        from the columns (summary and DataFrame in milliseconds; `.samples` built when asked for)."""
        ev = [
            e
            for e in self.events
            if (since is None or e["t"] >= since) and (until is None or e["t"] <= until)
        ]
        idx = self.ring.columns.rows(since, until, phase)
        return ColumnWindow(self.ring.columns, idx, ev, lambda: self.samples(since, until, phase))

    def row_window(
        self, since: float | None = None, until: float | None = None, phase: str | None = None
    ) -> Window:
        """The row-based window (summary.Window) over the same samples: the reference for the columns."""
        ev = self.window(since, until, phase).events
        return Window(self.samples(since, until, phase), ev)

    def latest(self) -> Sample | None:
        return self.ring.last()


_shared: Sampler | None = None
_shared_lock = threading.Lock()


def get_sampler(interval: float | None = None) -> Sampler:
    """The one shared sampler of this process (created on first call, not started).

    With $AIWORKBOOK_TELEMETRY_REPLAY set to a trace file it replays that trace instead of reading
    NVML: the no-GPU demo mode for dashboards.
    """
    global _shared
    with _shared_lock:
        if _shared is None:
            reader = None
            trace = os.environ.get("AIWORKBOOK_TELEMETRY_REPLAY")
            if trace:
                from aiworkbook.telemetry.replay import ReplayReader

                reader = ReplayReader(trace)
            _shared = Sampler(interval=interval or 1.0, gpu_reader=reader)
        elif interval is not None:
            _shared.interval = interval
        return _shared


def existing_sampler() -> Sampler | None:
    """The shared sampler if one was created, without creating it (readers that only reuse it)."""
    with _shared_lock:
        return _shared


def reset_shared_sampler() -> None:
    """Stop and forget the shared sampler (tests; switching between live and replay)."""
    global _shared
    with _shared_lock:
        if _shared is not None:
            _shared.stop()
        _shared = None
