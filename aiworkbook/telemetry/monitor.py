"""The monitor's recording loop as a library call: poll the shared sampler, append each new sample to a
live JSONL log, and at the end (duration reached, `stop` set, Ctrl-C or SIGTERM) write the recorded
trace and the CSV. The end is written under `signals.deferred`, so a second Ctrl-C while the files are
being written cannot lose them. The CLI (`aiworkbook monitor`) and notebooks call this."""

from __future__ import annotations

import math
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiworkbook import signals
from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.telemetry.sample import Sample


@dataclass
class MonitorRun:
    """What a run gathered and kept: `written` names each file with what it holds; `stopped_by` is
    the signal number that ended the run early (None: duration reached or `stop` set)."""

    samples: list[Sample]
    written: list[str] = field(default_factory=list)
    stopped_by: int | None = None


def check_outputs(jsonl: Path | None = None, record: Path | None = None, csv: Path | None = None) -> None:
    """Before any work: every output can be written, and an existing --jsonl file is a trace log to
    append to (anything else is refused, never truncated)."""
    from aiworkbook.persist import check_writable
    from aiworkbook.telemetry.export import check_appendable

    for name, path in (("jsonl", jsonl), ("record", record), ("csv", csv)):
        if path is not None:
            check_writable(path, name)
    if jsonl is not None:
        check_appendable(jsonl)
    outs = [Path(p).resolve() for p in (jsonl, record, csv) if p is not None]
    if len(set(outs)) != len(outs):
        raise SpecError("outputs", [str(p) for p in outs], Msg("allowed.monitor_outputs"))


def check_duration(duration: float | None) -> None:
    if duration is not None and (
        isinstance(duration, bool) or not math.isfinite(duration) or not 0 < duration <= 366 * 86400
    ):
        raise SpecError("duration", duration, Msg("allowed.duration"))


def run_monitor(
    sampler: Any,
    *,
    interval: float,
    header: dict[str, Any],
    duration: float | None = None,
    jsonl: Path | None = None,
    record: Path | None = None,
    csv: Path | None = None,
    on_sample: Callable[[Sample], None] | None = None,
    stop: threading.Event | None = None,
) -> MonitorRun:
    """Run until `duration` seconds pass, `stop` is set, or Ctrl-C/SIGTERM (caught here: the run ends
    and its files are written; `stopped_by` says which signal). `on_sample` sees the newest sample of
    each poll (the live table)."""
    from aiworkbook.telemetry.export import JsonlLog, to_csv, to_jsonl

    check_duration(duration)
    check_outputs(jsonl, record, csv)
    run = MonitorRun(samples=[])
    log = JsonlLog(jsonl, header) if jsonl else None
    t_start = time.monotonic()
    last_t: float | None = None

    def fresh() -> list[Sample]:
        got = sampler.samples(since=last_t)
        return got if last_t is None else [s for s in got if s.t > last_t]

    try:
        sampler.start()
        while stop is None or not stop.is_set():
            left = None if duration is None else t_start + duration - time.monotonic()
            time.sleep(min(interval, 0.25) if left is None else max(0.0, min(interval, 0.25, left)))
            new = fresh()
            for s in new:
                if log:
                    log.write(s)
            if new:
                last_t = new[-1].t
                if on_sample is not None:
                    on_sample(new[-1])
            if left is not None and time.monotonic() - t_start >= duration:  # type: ignore[operator]
                break
    except KeyboardInterrupt as exc:
        run.stopped_by = signal.SIGTERM if isinstance(exc, signals.Terminated) else signal.SIGINT
    finally:
        with signals.deferred("stopping the monitor"):
            sampler.stop()
            if log:
                for s in fresh():  # the samples the loop had not written yet
                    log.write(s)
                log.close()
                rows = {"path": str(log.path), "rows": log.rows}
                appended, wrote = (
                    Msg("monitor.written.appended", **rows),
                    Msg("monitor.written.wrote", **rows),
                )
                run.written.append(appended if log.appended else wrote)
            run.samples = list(sampler.samples())
            if record:
                to_jsonl(run.samples, record, header)
                label = header.get("label") or header.get("gpu_status") or ""
                run.written.append(
                    Msg("monitor.written.trace", path=str(record), rows=len(run.samples), label=label)
                )
            if csv:
                to_csv(run.samples, csv)
                run.written.append(Msg("monitor.written.csv", path=str(csv), rows=len(run.samples)))
    return run
