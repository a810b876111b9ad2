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


class JsonlLog:
    """A live log, deliberately not atomic: samples are appended as they come, one flushed line each,
    in the trace format (header first), so another process can follow the file and a crash or
    Ctrl-C leaves every sample written so far readable by load_trace. Use `to_jsonl` (temp file +
    rename) for a finished trace."""

    def __init__(self, path: str | os.PathLike, header: dict[str, Any]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("w", encoding="utf-8")
        self._write({"kind": TRACE_KIND, "schema_version": TRACE_SCHEMA_VERSION, **header})
        self.rows = 0

    def _write(self, obj: dict[str, Any]) -> None:
        self._fh.write(json.dumps(obj) + "\n")
        self._fh.flush()

    def write(self, sample: Sample) -> None:
        self._write(sample.to_json())
        self.rows += 1

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()
