"""Persisted files: a schema version on every file, atomic writes, a clear error when corrupt.

Locked profiles, proof results, reports and recorded traces all go through here.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from aiworkbook.errors import SpecError


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write to a temp file in the same folder, fsync, then rename over the target."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def check_writable(path: str | os.PathLike, field: str) -> Path:
    """Fail before any work starts when `path` cannot be written (a folder, an unwritable parent),
    so a long proof or recording is never lost at the end for want of a file."""
    p = Path(path)
    if p.is_dir():
        raise SpecError(field, str(p), "a file path, not a folder")
    parent = p.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SpecError(field, str(p), f"a path whose folder can be created ({exc.strerror})") from None
    if not os.access(parent, os.W_OK):
        raise SpecError(field, str(p), f"a path in a writable folder ({parent} is not writable)")
    return p


def write_json(path: str | os.PathLike, payload: dict[str, Any], *, kind: str, schema_version: int) -> Path:
    """Write a JSON document with `kind` and `schema_version` keys first."""
    doc = {"kind": kind, "schema_version": schema_version, **payload}
    return atomic_write_text(path, json.dumps(doc, indent=2, sort_keys=False, default=_default) + "\n")


def write_jsonl(path: str | os.PathLike, header: dict[str, Any], rows: Iterable[dict[str, Any]]) -> Path:
    """A JSONL file whose first line is the header (kind, schema_version, labels)."""
    lines = [json.dumps(header, default=_default)]
    lines.extend(json.dumps(r, default=_default) for r in rows)
    return atomic_write_text(path, "\n".join(lines) + "\n")


def read_text(path: str | os.PathLike, *, what: str = "an existing file") -> str:
    """A UTF-8 text file, or a SpecError naming the file: missing, a folder, unreadable, not UTF-8."""
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError("path", str(p), what, source=str(p)) from None
    except IsADirectoryError:
        raise SpecError("path", str(p), f"{what}, not a folder", source=str(p)) from None
    except UnicodeDecodeError as exc:
        raise SpecError(
            "path", str(p), f"a UTF-8 text file (byte {exc.start}: {exc.reason})", source=str(p)
        ) from None
    except OSError as exc:
        raise SpecError("path", str(p), f"a readable file ({exc.strerror or exc})", source=str(p)) from None


def read_json(
    path: str | os.PathLike,
    *,
    kind: str | None = None,
    max_version: int | None = None,
    what: str = "an existing file",
) -> dict:
    """Read a JSON object, naming the file and the problem when it is missing, unreadable or corrupt.
    `kind`/`max_version` check the header keys write_json puts first."""
    p = Path(path)
    text = read_text(p, what=what)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError(
            "json", f"line {exc.lineno} col {exc.colno}: {exc.msg}", "valid JSON", source=str(p)
        ) from None
    if not isinstance(doc, dict):
        raise SpecError("json", type(doc).__name__, "a JSON object at the top level", source=str(p))
    check_header(doc, p, kind, max_version)
    return doc


def read_jsonl(
    path: str | os.PathLike,
    *,
    kind: str | None = None,
    max_version: int | None = None,
    what: str = "an existing file",
    numbered: bool = False,
):
    """Return (header, rows) of a JSONL file written by write_jsonl. Blank lines are skipped; errors
    name the line (counted from 1, blank lines included). `numbered=True` gives rows as
    (line number, value) pairs, so a caller validating rows can name the line too."""
    p = Path(path)
    text = read_text(p, what=what)
    rows: list[tuple[int, Any]] = []
    for i, ln in enumerate(text.splitlines(), start=1):
        if not ln.strip():
            continue
        try:
            rows.append((i, json.loads(ln)))
        except json.JSONDecodeError as exc:
            raise SpecError(
                "json", f"line {i}: {exc.msg}", "one JSON object per line", source=str(p)
            ) from None
    if not rows:
        raise SpecError("header", "empty file", "a JSONL file with a header line", source=str(p))
    n0, header = rows.pop(0)
    if not isinstance(header, dict):
        raise SpecError("header", f"line {n0}: {header!r}"[:200], "a JSON object", source=str(p))
    check_header(header, p, kind, max_version, line=n0)
    return header, (rows if numbered else [r for _, r in rows])


def validation_error(exc: Any, *, source: str | None = None, prefix: str = "") -> SpecError:
    """A pydantic ValidationError as a SpecError naming the (first) failing field, its value and
    the rule: `field 'memory_bandwidth_bps' = -1 ...; allowed: Input should be greater than 0`."""
    errors = exc.errors() if hasattr(exc, "errors") else []
    if not errors:
        return SpecError(prefix or "value", str(exc).splitlines()[0], "a valid value", source=source)
    err = errors[0]
    field = ".".join(str(x) for x in err.get("loc", ())) or "value"
    value = "(missing)" if err.get("type") == "missing" else err.get("input")
    if prefix:
        field = f"{prefix}.{field}"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return SpecError(field, value, f"{err.get('msg', 'a valid value')}{more}", source=source)


def check_header(
    doc: dict, p: str | os.PathLike, kind: str | None, max_version: int | None, *, line: int | None = None
) -> None:
    """`kind` must equal `kind` and `schema_version` be an int (not a bool) in 1..max_version (None: unchecked)."""
    at = f" (line {line})" if line is not None else ""
    if kind is not None and doc.get("kind") != kind:
        raise SpecError("kind", doc.get("kind"), f"'{kind}'{at}", source=str(p))
    if max_version is not None:
        v = doc.get("schema_version")
        if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= max_version:
            raise SpecError("schema_version", v, f"an integer 1..{max_version}{at}", source=str(p))


def _default(o: Any) -> Any:
    if hasattr(o, "model_dump"):
        return o.model_dump(mode="json")
    if hasattr(o, "tolist"):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    if isinstance(o, set | frozenset):
        return sorted(o)
    raise TypeError(f"cannot serialise {type(o).__name__}")
