"""Recorded traces: a JSONL file (header + one sample per line, schema-versioned) that replays
through the same reader interface as GPUReader, so dashboards and demos run on machines without
a GPU. A trace says where it came from: "recorded on <GPU>, <date>", or synthetic.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.telemetry.export import TRACE_KIND, TRACE_SCHEMA_VERSION
from aiworkbook.telemetry.na import NA, from_json
from aiworkbook.telemetry.sample import Sample


def trace_label(header: dict[str, Any]) -> str:
    """Where a trace came from: recorded on a GPU, synthetic, or a replay of another trace (whose own
    label is carried forward, so a replayed synthetic trace never reads as a measurement)."""
    if header.get("source") == "replay":
        orig = header.get("replay_of")
        if isinstance(orig, dict):
            return f"replay of: {orig.get('label') or trace_label(orig)}"
        return "replay of: an unlabelled trace (not measured here)"
    gpu = header.get("gpu") or "no GPU"
    date = str(header.get("recorded_at", "unknown date"))[:10]
    if header.get("source") == "synthetic":
        return f"synthetic trace (not measured), {gpu}-like, generated {date}"
    return f"recorded on {gpu}, {date}"


def _replay_of(original: dict[str, Any]) -> dict[str, Any]:
    """What a replay's header keeps of the trace it replays: the first trace's source and label
    (a replay of a replay points at the original, not at the intermediate file)."""
    if original.get("source") == "replay" and isinstance(original.get("replay_of"), dict):
        return dict(original["replay_of"])
    return {
        "source": original.get("source"),
        "label": original.get("label") or trace_label(original),
        "gpu": original.get("gpu"),
        "recorded_at": original.get("recorded_at"),
    }


def trace_header(
    gpu_reader: Any, interval_s: float, source: str = "recorded", note: str = ""
) -> dict[str, Any]:
    """The header of a trace recorded from `gpu_reader` (identities, status, host, time). Recording
    from a ReplayReader (source "replay") carries the replayed trace's source and label forward in
    `replay_of`, and the label says "replay of: ..."."""
    from aiworkbook.telemetry.na import to_json

    ids = gpu_reader.identities() if gpu_reader.count() else []
    header = {
        "source": source,
        "gpu": ids[0]["name"] if ids else None,
        "recorded_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "interval_s": interval_s,
        "gpu_status": gpu_reader.status(),
        "gpus": to_json(ids),
        "capabilities": gpu_reader.capabilities() if hasattr(gpu_reader, "capabilities") else [],
        "host": {"hostname": platform.node(), "os": f"{platform.system()} {platform.release()}"},
        "note": note,
    }
    original = getattr(gpu_reader, "header", None)
    if source == "replay" and isinstance(original, dict):
        header["replay_of"] = _replay_of(original)
    header["label"] = trace_label(header)
    return header


def shipped_traces() -> list[Path]:
    """The traces under data/traces/."""
    from aiworkbook.paths import data_dir

    return sorted((data_dir() / "traces").glob("*.jsonl"))


def load_trace(path: str | os.PathLike) -> tuple[dict[str, Any], list[Sample]]:
    """(header, samples) of a trace file, with a clear error naming the file and the line (counted
    from 1, blank lines included) when it is not one."""
    from aiworkbook.persist import read_jsonl

    p = Path(path)
    header, rows = read_jsonl(
        p, kind=TRACE_KIND, max_version=TRACE_SCHEMA_VERSION, what=Msg("file.trace"), numbered=True
    )
    _check_trace_header(header, p)
    samples = []
    for n, row in rows:
        try:
            if not isinstance(row, dict):
                raise TypeError(f"a sample is a JSON object, not {type(row).__name__}")
            if not isinstance(row.get("gpus", []), list) or not all(
                isinstance(g, dict) for g in row.get("gpus", [])
            ):
                raise TypeError("'gpus' must be a list of objects")
            if not isinstance(row.get("host", {}), dict):
                raise TypeError("'host' must be an object")
            sample = Sample.from_json(row)
            if not (math.isfinite(sample.t) and math.isfinite(sample.wall)):
                raise ValueError("'t' and 'wall' must be finite numbers")
            samples.append(sample)
        except (KeyError, TypeError, ValueError) as exc:
            what = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
            raise SpecError(
                "sample", f"line {n}: {what}", "samples with t, wall, gpus, host", source=str(p)
            ) from None
    if not samples:
        raise SpecError("rows", 0, "at least one sample", source=str(p))
    return header, samples


def _check_trace_header(header: dict[str, Any], p: Path) -> None:
    """The header fields a reader relies on have the types it expects (a hand-edited or hostile trace
    fails here, naming the field, not later inside the table or the OpenMetrics endpoint)."""
    gpus = header.get("gpus", [])
    if not isinstance(gpus, list) or not all(isinstance(g, dict) for g in gpus):
        raise SpecError("gpus", gpus, "a list of GPU identity objects (header line)", source=str(p))
    caps = header.get("capabilities")
    if caps is not None and (not isinstance(caps, list) or not all(isinstance(c, dict) for c in caps)):
        raise SpecError("capabilities", caps, "a list of objects (header line)", source=str(p))
    for key in ("label", "source", "gpu_status"):
        if header.get(key) is not None and not isinstance(header[key], str):
            raise SpecError(key, header[key], "a string (header line)", source=str(p))
    iv = header.get("interval_s")
    if iv is not None and (
        isinstance(iv, bool) or not isinstance(iv, int | float) or not math.isfinite(iv) or iv <= 0
    ):
        raise SpecError("interval_s", iv, "a positive, finite number of seconds (header line)", source=str(p))


class ReplayReader:
    """Plays a trace back in real time (looping), answering like GPUReader: status, count,
    identities, capabilities, read, read_all. `speed` > 1 plays faster."""

    source = "replay"

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        loop: bool = True,
        speed: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if speed <= 0:
            raise SpecError("speed", speed, Msg("allowed.positive"))
        self.path = Path(path)
        self.header, self.trace = load_trace(self.path)
        self.label = self.header.get("label") or trace_label(self.header)
        self._loop = loop
        self._speed = speed
        self._clock = clock
        self._t0: float | None = None
        self._span = max(self.trace[-1].t - self.trace[0].t, 1e-9)

    def status(self) -> str:
        return f"replay: {self.label}"

    def count(self) -> int:
        return len(self.trace[0].gpus)

    def identities(self) -> list[dict[str, Any]]:
        return from_json(self.header.get("gpus", []))

    def identity(self, index: int) -> dict[str, Any]:
        return self.identities()[index]

    def capabilities(self) -> list[dict[str, str]]:
        """The recorded matrix, else derived from the first sample (a group is ok when its fields are)."""
        if self.header.get("capabilities"):
            return self.header["capabilities"]
        from aiworkbook.telemetry.gpu_metrics import GROUPS
        from aiworkbook.telemetry.na import na_reason

        out = []
        for g in self.trace[0].gpus:
            reasons = {
                grp.name: next((str(na_reason(g.get(f))) for f in grp.fields if na_reason(g.get(f))), "ok")
                for grp in GROUPS
            }
            out.append(reasons)
        return out

    def current(self) -> Sample:
        """The trace sample for now: elapsed time since the first read, scaled by speed, looped."""
        now = self._clock()
        if self._t0 is None:
            self._t0 = now
        offset = (now - self._t0) * self._speed
        if self._loop:
            offset %= self._span + (self.trace[1].t - self.trace[0].t if len(self.trace) > 1 else 0)
        target = self.trace[0].t + offset
        chosen = self.trace[0]
        for s in self.trace:  # traces are short (minutes): a scan is fine
            if s.t > target:
                break
            chosen = s
        return chosen

    def read(self, index: int) -> dict[str, Any]:
        return dict(self.current().gpus[index])

    def read_all(self) -> list[dict[str, Any]]:
        return [dict(g) for g in self.current().gpus]

    def history(self, index: int, kind: str = "gpu_util", since_us: int = 0) -> NA:
        return NA("a replayed trace has no NVML sample buffer")
