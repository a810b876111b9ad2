"""Persisted files: a schema version on every file, atomic writes, a clear error when corrupt.

Locked profiles, proof results, reports and recorded traces all go through here.
"""

from __future__ import annotations

import json
import math
import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from aiworkbook.diskfull import ERRNOS, NoSpace
from aiworkbook.errors import SpecError
from aiworkbook.message import Msg, quoted

#: our temporaries: `.<target name>.aiwb-<pid>-<random>.tmp`, so a later run can tell its own leftovers
#: (a SIGKILLed writer's) from another program's files, and a live writer's from a dead one's
_TMP_TAG = ".aiwb-"


#: every file this process has written through atomic_write_text, so an interrupted command can say
#: exactly what it kept (`aiworkbook` prints it after Ctrl-C)
_written: list[Path] = []


def written_since(mark: int = 0) -> list[Path]:
    """Files written by atomic_write_text since `mark` (a previous `len(written_since())`)."""
    return list(_written[mark:])


def _umask() -> int:
    """The process umask (read without changing it where /proc says it; else set-and-restore)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def clean_stale_temporaries(folder: str | os.PathLike[str], name: str) -> list[Path]:
    """Remove `.<name>.aiwb-<pid>-*.tmp` left in `folder` by a writer that no longer runs (SIGKILL,
    power loss); a live writer's temporary is left alone. Returns what was removed."""
    removed: list[Path] = []
    prefix = f".{name}{_TMP_TAG}"
    try:
        entries = list(os.scandir(os.fspath(folder)))
    except OSError:
        return removed
    for e in entries:
        if not (e.name.startswith(prefix) and e.name.endswith(".tmp")):
            continue
        pid_text = e.name[len(prefix) :].split("-", 1)[0]
        if pid_text.isdigit() and not _pid_alive(int(pid_text)) and e.is_file(follow_symlinks=False):
            try:
                os.unlink(e.path)
                removed.append(Path(e.path))
            except OSError:
                pass
    return removed


def _refuse_special(p: Path, field: str) -> None:
    """An existing target must be a regular file: replacing /dev/null or a FIFO is never what was meant."""
    try:
        st = os.stat(p)
    except OSError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise SpecError(field, str(p), Msg("allowed.regular_path", kind=_kind(st.st_mode)))


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write to a temp file in the same folder, fsync, then rename over the target. The file gets the
    mode the umask gives (an existing target keeps its own); an error names `path`, never the temp."""
    target = Path(path)
    _refuse_special(target, "path")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        clean_stale_temporaries(target.parent, target.name)
        fd, tmp = tempfile.mkstemp(
            prefix=f".{target.name}{_TMP_TAG}{os.getpid()}-", suffix=".tmp", dir=target.parent
        )
    except OSError as exc:
        if exc.errno in ERRNOS:
            raise NoSpace(target, len(text.encode("utf-8", "surrogatepass"))) from None
        raise OSError(exc.errno, exc.strerror or str(exc), str(target)) from None
    try:
        try:
            mode = stat.S_IMODE(os.stat(target).st_mode)
        except OSError:
            mode = 0o666 & ~_umask()
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            os.fchmod(fh.fileno(), mode)
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
        _written.append(target)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.errno in ERRNOS:  # the partial temp is gone: say it in words
            raise NoSpace(target, len(text.encode("utf-8", "surrogatepass"))) from None
        if isinstance(exc, OSError) and not isinstance(exc, SpecError):
            raise OSError(exc.errno, exc.strerror or str(exc), str(target)) from None
        raise
    return target


def check_writable(path: str | os.PathLike[str], field: str) -> Path:
    """Fail before any work starts when `path` cannot be written (a folder, a device or FIFO, an
    unwritable parent, a pseudo file system such as /proc), so a long proof or recording is never lost
    at the end for want of a file. The check creates and removes a temporary next to `path`."""
    p = Path(path)
    if p.is_dir():
        raise SpecError(field, str(p), Msg("allowed.file_path"))
    _refuse_special(p, field)
    parent = p.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SpecError(field, str(p), Msg("allowed.folder_creatable", why=quoted(exc.strerror))) from None
    if not os.access(parent, os.W_OK):
        raise SpecError(field, str(p), Msg("allowed.writable_folder", folder=str(parent)))
    try:  # os.access says yes for root and for /proc and /sys; only a real file says for sure
        fd, probe = tempfile.mkstemp(prefix=f".{p.name}{_TMP_TAG}{os.getpid()}-", suffix=".tmp", dir=parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise SpecError(field, str(p), Msg("allowed.folder_for_files", why=quoted(why))) from None
    return p


def _non_finite(obj: Any, where: str, found: list[str]) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        found.append(f"{where or '.'}: {obj!r}")
        return None
    if isinstance(obj, dict):
        return {k: _non_finite(v, f"{where}.{k}" if where else str(k), found) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_non_finite(v, f"{where}[{i}]", found) for i, v in enumerate(obj)]
    return obj


def json_safe(obj: Any) -> tuple[Any, list[str]]:
    """`obj` with every NaN/Infinity replaced by None (JSON null), and where each was ('a.b: inf'):
    the standard has no NaN, and Python's bare `NaN`/`Infinity` break every other JSON reader."""
    found: list[str] = []
    return _non_finite(json.loads(json.dumps(obj, default=_default)), "", found), found


def dumps_json(obj: Any, *, indent: int | None = None) -> str:
    """Valid JSON always: non-finite numbers become null, and a top-level object says which were
    (`"non_finite": ["roofline.x: inf", ...]`) so a null is never mistaken for a missing value; in a
    top-level list, each object says so of its own (`"non_finite": ["[3].rope_theta: nan"]`)."""
    clean, found = json_safe(obj)
    if found and isinstance(clean, dict):
        clean["non_finite"] = found
    elif found and isinstance(clean, list):
        for i, item in enumerate(clean):
            mine = [f for f in found if f.startswith(f"[{i}]")]
            if mine and isinstance(item, dict):
                item["non_finite"] = mine
    return json.dumps(clean, indent=indent, allow_nan=False)


def write_json(
    path: str | os.PathLike[str], payload: dict[str, Any], *, kind: str, schema_version: int
) -> Path:
    """Write a JSON document with `kind` and `schema_version` keys first."""
    doc = {"kind": kind, "schema_version": schema_version, **payload}
    return atomic_write_text(path, dumps_json(doc, indent=2) + "\n")


def write_jsonl(path: str | os.PathLike[str], header: dict[str, Any], rows: Iterable[dict[str, Any]]) -> Path:
    """A JSONL file whose first line is the header (kind, schema_version, labels)."""
    lines = [dumps_json(header)]
    lines.extend(dumps_json(r) for r in rows)
    return atomic_write_text(path, "\n".join(lines) + "\n")


def _kind(mode: int) -> Msg:
    for test, name in (
        (stat.S_ISFIFO, "file.kind.fifo"),
        (stat.S_ISCHR, "file.kind.char"),
        (stat.S_ISBLK, "file.kind.block"),
        (stat.S_ISSOCK, "file.kind.socket"),
        (stat.S_ISDIR, "file.kind.folder"),
    ):
        if test(mode):
            return Msg(name)
    return Msg("file.kind.special")


#: the largest file read whole (profiles, results, peers' and imported result files, recordings): a
#: larger one (a sparse 100 GB file, a log named by mistake) is refused before any of it is read
READ_MAX_BYTES = 256 * 2**20


def read_text(
    path: str | os.PathLike[str], *, what: str | None = None, max_bytes: int = READ_MAX_BYTES
) -> str:
    """A UTF-8 text file of at most `max_bytes`, or a SpecError naming the file: missing, a folder, a
    FIFO or device (which would hang or never end), larger than that, unreadable, not UTF-8."""
    p = Path(path)
    what = what or Msg("file.existing")  # a message (or a caller's text), said in the reader's language
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise SpecError("path", str(p), what, source=str(p)) from None
    except OSError as exc:
        raise SpecError(
            "path", str(p), Msg("allowed.file_readable", why=quoted(exc.strerror or exc)), source=str(p)
        ) from None
    if stat.S_ISDIR(st.st_mode):
        raise SpecError("path", str(p), Msg("allowed.file_not_folder", what=what), source=str(p))
    if not stat.S_ISREG(st.st_mode):
        raise SpecError(
            "path", str(p), Msg("allowed.file_regular", what=what, kind=_kind(st.st_mode)), source=str(p)
        )
    too_large = Msg("allowed.file_at_most", what=what, max=max_bytes)
    if st.st_size > max_bytes:
        raise SpecError("path", Msg("file.sized", path=str(p), size=st.st_size), too_large, source=str(p))
    try:
        with open(p, encoding="utf-8") as fh:
            text = fh.read(max_bytes + 1)  # characters: a file that grew since stat is still bounded
        if len(text) > max_bytes:
            raise SpecError(
                "path", Msg("file.grew_past", path=str(p), max=max_bytes), too_large, source=str(p)
            )
        return text
    except FileNotFoundError:
        raise SpecError("path", str(p), what, source=str(p)) from None
    except IsADirectoryError:
        raise SpecError("path", str(p), Msg("allowed.file_not_folder", what=what), source=str(p)) from None
    except UnicodeDecodeError as exc:
        raise SpecError(
            "path", str(p), Msg("allowed.utf8", at=exc.start, reason=quoted(exc.reason)), source=str(p)
        ) from None
    except MemoryError:
        raise SpecError("path", str(p), Msg("allowed.file_in_memory", what=what), source=str(p)) from None
    except OSError as exc:
        raise SpecError(
            "path", str(p), Msg("allowed.file_readable", why=quoted(exc.strerror or exc)), source=str(p)
        ) from None


class _DuplicateKey(ValueError):
    pass


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object_pairs_hook that refuses a key given twice (json.loads would keep the last silently)."""
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def _loads(text: str, p: Path, where: str = "", *, unique_keys: bool = False) -> Any:
    """json.loads naming the file; input nested too deeply is a SpecError, not a RecursionError;
    `unique_keys`: a key given twice in one object is a SpecError naming it."""
    try:
        return json.loads(text, object_pairs_hook=_unique) if unique_keys else json.loads(text)
    except _DuplicateKey as exc:
        raise SpecError(
            "json", Msg("json.key_twice", key=repr(exc.args[0])), Msg("allowed.json_key_once"), source=str(p)
        ) from None
    except json.JSONDecodeError as exc:
        at = where or Msg("json.line_col", line=exc.lineno, col=exc.colno)
        bad = Msg("json.where", at=at, why=quoted(exc.msg))
        raise SpecError("json", bad, Msg("allowed.json_valid"), source=str(p)) from None
    except RecursionError:
        nested = Msg("allowed.json_less_deep")
        raise SpecError("json", where or Msg("json.nesting"), nested, source=str(p)) from None
    except ValueError as exc:  # an integer past sys.int_max_str_digits (4300 digits)
        sane = Msg("allowed.json_sane_size")
        raise SpecError("json", where or str(exc)[:120], sane, source=str(p)) from None


def read_json(
    path: str | os.PathLike[str],
    *,
    kind: str | None = None,
    max_version: int | None = None,
    what: str | None = None,
    unique_keys: bool = False,
) -> dict[str, Any]:
    """Read a JSON object, naming the file and the problem when it is missing, unreadable or corrupt.
    `kind`/`max_version` check the header keys write_json puts first; `unique_keys` refuses a key
    given twice in one object (a hand-edited file)."""
    p = Path(path)
    doc = loads_object(read_text(p, what=what), str(p), unique_keys=unique_keys)
    check_header(doc, p, kind, max_version)
    return doc


def loads_object(text: str, source: str, *, unique_keys: bool = False) -> dict[str, Any]:
    """The JSON object in `text` (a file's or a pasted text's, `source` naming it), or the SpecError
    read_json gives: invalid JSON, nested too deeply, a number too long, not an object."""
    doc = _loads(text, Path(source), unique_keys=unique_keys)
    if not isinstance(doc, dict):
        raise SpecError("json", type(doc).__name__, Msg("allowed.json_object"), source=source)
    return doc


def read_jsonl(
    path: str | os.PathLike[str],
    *,
    kind: str | None = None,
    max_version: int | None = None,
    what: str | None = None,
    numbered: bool = False,
) -> tuple[dict[str, Any], list[Any]]:
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
            bad = Msg("json.where", at=Msg("json.line", line=i), why=quoted(exc.msg))
            raise SpecError("json", bad, Msg("allowed.jsonl_line"), source=str(p)) from None
        except RecursionError:
            nested = Msg("allowed.json_less_deep")
            raise SpecError("json", Msg("json.line", line=i), nested, source=str(p)) from None
    if not rows:
        raise SpecError("header", Msg("file.empty"), Msg("allowed.jsonl_header"), source=str(p))
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
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    loc = [str(x) for x in err.get("loc", ())]
    inner = (err.get("ctx") or {}).get("error")
    if isinstance(inner, SpecError):  # a validator's own SpecError keeps its field (under the location)
        field = ".".join([*([prefix] if prefix else []), *loc, inner.field])
        return SpecError(field, inner.value, f"{inner.allowed}{more}", source=source or inner.source)
    field = ".".join(loc) or "value"
    # an error about a whole object (a model validator's) quotes its type, not the object
    value = "(missing)" if err.get("type") == "missing" else err.get("input")
    if not loc and isinstance(value, dict | list):
        value = f"({type(value).__name__} of {len(value)})"
    if prefix:
        field = f"{prefix}.{field}"
    # a validator's ValueError reads as its own words, without pydantic's "Value error, " before them
    rule = str(inner) if err.get("type") == "value_error" and inner is not None else err.get("msg")
    return SpecError(field, value, f"{rule or 'a valid value'}{more}", source=source)


def check_header(
    doc: dict[str, Any],
    p: str | os.PathLike[str],
    kind: str | None,
    max_version: int | None,
    *,
    line: int | None = None,
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
