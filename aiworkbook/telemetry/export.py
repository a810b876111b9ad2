"""Export samples: pandas DataFrame, CSV (atomic), JSONL (atomic, the trace format) and a streaming
JSONL log for long `monitor --jsonl` runs (one flushed line per sample, readable by replay)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from aiworkbook.persist import atomic_write_text, write_jsonl
from aiworkbook.telemetry.sample import Sample

TRACE_KIND = "aiworkbook.telemetry.trace"
TRACE_SCHEMA_VERSION = 1


def to_dataframe(samples: Iterable[Sample]):
    """One row per sample, columns 'gpu0.power_w', 'host.cpu_pct', ...; NA becomes NaN."""
    import pandas as pd

    return pd.DataFrame([s.flat() for s in samples])


def to_csv(samples: Iterable[Sample], path: str | os.PathLike) -> Path:
    """A flat table for spreadsheets and pandas, written atomically. It carries no header line (a
    comment would break plain CSV readers): its schema is the column names, `gpu<i>.<field>` and
    `host.<field>` with the unit in the field name, as in trace schema TRACE_SCHEMA_VERSION. For a
    schema-versioned file, record a trace (`to_jsonl`, `monitor --record`)."""
    return atomic_write_text(path, to_dataframe(samples).to_csv(index=False))


def to_jsonl(samples: Iterable[Sample], path: str | os.PathLike, header: dict[str, Any]) -> Path:
    """A trace file: `header` (see replay.trace_header) on the first line, one sample per line."""
    head = {"kind": TRACE_KIND, "schema_version": TRACE_SCHEMA_VERSION, **header}
    return write_jsonl(path, head, (s.to_json() for s in samples))


def check_appendable(path: str | os.PathLike) -> bool:
    """True when `path` is an existing trace log that `JsonlLog` will append to, False when it is
    missing or empty (a new log); a SpecError for anything else, so a config or a CSV given by mistake
    is refused before the recording starts instead of being overwritten."""
    from aiworkbook.errors import SpecError
    from aiworkbook.persist import check_header

    p = Path(path)
    try:
        if not p.is_file() or p.stat().st_size == 0:
            return False
        with p.open("rb") as fh:
            first = fh.readline(1 << 20)
        head = json.loads(first.decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        head = None
    if not isinstance(head, dict) or head.get("kind") != TRACE_KIND:
        raise SpecError(
            "jsonl",
            str(p),
            "a new file, or a trace log to append to (this file is not one; nothing was changed)",
        )
    check_header(head, p, TRACE_KIND, TRACE_SCHEMA_VERSION, line=1)
    return True


class JsonlLog:
    """A live log, deliberately not atomic: samples are appended as they come, one flushed line each,
    in the trace format (header first), so another process can follow the file and a crash or
    Ctrl-C leaves every sample written so far readable by load_trace. An existing trace log is
    appended to (a line cut short by a crash is dropped first); any other existing file is refused.
    Use `to_jsonl` (temp file + rename) for a finished trace."""

    def __init__(self, path: str | os.PathLike, header: dict[str, Any]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.appended = check_appendable(self.path)
        if self.appended:
            _drop_partial_last_line(self.path)
        self._fh = self.path.open("a", encoding="utf-8")
        if not self.appended:
            self._write({"kind": TRACE_KIND, "schema_version": TRACE_SCHEMA_VERSION, **header})
        self.rows = 0

    def _write(self, obj: dict[str, Any]) -> None:
        self._fh.write(json.dumps(obj, allow_nan=False) + "\n")
        self._fh.flush()

    def write(self, sample: Sample) -> None:
        self._write(sample.to_json())
        self.rows += 1

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()


def _drop_partial_last_line(path: Path) -> None:
    """Cut a last line without its newline (the writer was killed mid-line), so appended rows start
    on a line of their own and the log stays readable."""
    with path.open("rb+") as fh:
        fh.seek(0, os.SEEK_END)
        end = fh.tell()
        if end == 0:
            return
        fh.seek(end - 1)
        if fh.read(1) == b"\n":
            return
        pos = end
        while pos > 0:
            step = min(65536, pos)
            fh.seek(pos - step)
            chunk = fh.read(step)
            i = chunk.rfind(b"\n")
            if i >= 0:
                fh.truncate(pos - step + i + 1)
                return
            pos -= step
