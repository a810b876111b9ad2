"""Before any work, a command's output paths are checked against its inputs and one another: an output
that is an input (the same path, a symlink to it or a hard link of it) or two outputs that are one file
exit 2 naming both; then each output must be writable (`persist.check_writable`).

Why: `report p.json --html p.json` replaced the profile it read, and `--html X --md X` kept only the
Markdown; a file written at the end must never cost the user a file they gave as input.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from aiworkbook.errors import SpecError

PathLike = str | os.PathLike
Given = PathLike | Iterable[PathLike] | None


def same_file(a: PathLike, b: PathLike) -> bool:
    """True when `a` and `b` name one file: the same resolved path (links followed), or one inode."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist yet: only the path comparison applies
        return False


def _flatten(named: Mapping[str, Given]) -> list[tuple[str, PathLike]]:
    out: list[tuple[str, PathLike]] = []
    for field, value in named.items():
        if value is None:
            continue
        if isinstance(value, str | os.PathLike):
            out.append((field, value))
        else:
            out.extend((field, v) for v in value if v is not None)
    return out


def check_paths(inputs: Mapping[str, Given] | None = None, **outputs: PathLike | None) -> None:
    """Refuse (SpecError, exit 2) an output that is one of `inputs` or another output, then any output
    that cannot be written. `inputs` maps a field name to a path or a list of paths (None skipped)."""
    from aiworkbook.persist import check_writable

    ins = _flatten(inputs or {})
    outs = _flatten(outputs)
    for i, (field, out) in enumerate(outs):
        for in_field, path in ins:
            if same_file(out, path):
                raise SpecError(field, str(out), f"a file other than the input {in_field} {str(path)!r}")
        for other_field, other in outs[:i]:
            if same_file(out, other):
                raise SpecError(field, str(out), f"a file other than the output {other_field} {str(other)!r}")
    for field, out in outs:
        check_writable(Path(out), field)


def model_inputs(model: str | None) -> list[Path]:
    """The files a model argument reads when it names a path (a config.json or its folder), else []."""
    if not model:
        return []
    p = Path(model).expanduser()
    if p.is_dir():
        return [p / "config.json"]
    return [p] if p.exists() else []
