"""A full disk in words: a write that runs out of space (ENOSPC, or EDQUOT for a quota) is one line
saying where, how much the write needed and how much was free, exit 1, never a traceback.

Why a module of its own: the errors that mean "the disk is full" come in several shapes. Python's
file writes raise OSError(ENOSPC); torch's zip writer raises a RuntimeError ("[enforce fail at
inline_container.cc] unexpected pos ...") with no errno; DCP wraps the OSError of its writer thread in
a CheckpointException, a BaseException. `is_full` reads them all by what happened: an ENOSPC/EDQUOT
anywhere in the exception's chain, or a failed write that left the file system with less free space
than the write needed (it was checked to fit before it started)."""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from aiworkbook.message import Msg

ERRNOS = (errno.ENOSPC, errno.EDQUOT)


def _usage(path: str | os.PathLike[str]) -> Any:
    """shutil.disk_usage of the file system holding `path` or its nearest existing parent (None: none)."""
    p = Path(path).absolute()
    for q in (p, *p.parents):
        try:
            return shutil.disk_usage(q)
        except OSError:
            continue
    return None


def free_bytes(path: str | os.PathLike[str]) -> int | None:
    """Free bytes (for this user) of the file system holding `path` or its nearest existing parent."""
    u = _usage(path)
    return None if u is None else int(u.free)


def total_bytes(path: str | os.PathLike[str]) -> int | None:
    """Size of the file system holding `path` or its nearest existing parent: 0 for one that stores no
    files (sysfs, proc, cgroup), which is no disk to be full."""
    u = _usage(path)
    return None if u is None else int(u.total)


def device(path: str | os.PathLike[str]) -> str:
    """The file system holding `path`, as `df` names it: its device and mount point."""
    target = os.path.realpath(path)
    try:
        import psutil

        best, name = "", ""
        for part in psutil.disk_partitions(all=True):
            mp = part.mountpoint
            if (target == mp or target.startswith(mp.rstrip("/") + "/")) and len(mp) > len(best):
                best, name = mp, part.device
        if best:
            return f"{name} ({best})" if name and name != best else best
    except Exception:  # psutil missing or /proc unreadable: the path is still a name
        pass
    return target


class NoSpace(OSError):
    """A write ran out of space at `path`; `needed` is what it was writing (None when unknown)."""

    def __init__(
        self, path: str | os.PathLike[str], needed: int | None = None, *, free: int | None = None
    ) -> None:
        self.path = str(path)
        self.needed = needed
        self.free = free_bytes(path) if free is None else free
        args = {"device": device(path), "path": self.path, "free": self.free or 0}
        self.message = (
            Msg("disk.full", needed=needed, **args)
            if needed is not None
            else Msg("disk.full_unknown", **args)
        )
        super().__init__(errno.ENOSPC, str(self.message), self.path)

    def __str__(self) -> str:
        return str(self.message)


def chain(exc: BaseException) -> Iterator[BaseException]:
    """`exc` and every exception it holds: causes, contexts, DCP's per-rank failures."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        e = todo.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        todo.extend(x for x in (e.__cause__, e.__context__) if x is not None)
        # DCP's CheckpointException keeps each rank's failure in `.failures` {rank: (exception, trace)}
        failures = getattr(e, "failures", None)
        if isinstance(failures, dict):
            for x in failures.values():
                todo.extend(y for y in (x if isinstance(x, tuple) else (x,)) if isinstance(y, BaseException))


def is_full(
    exc: BaseException, path: str | os.PathLike[str] | None = None, needed: int | None = None
) -> bool:
    """Whether `exc` is a write that ran out of space: ENOSPC/EDQUOT in its chain, or (with `path` and
    `needed`) any failure that left less than `needed` free where the write went."""
    if any(isinstance(e, OSError) and e.errno in ERRNOS for e in chain(exc)):
        return True
    if path is None or needed is None or isinstance(exc, KeyboardInterrupt | MemoryError):
        return False
    free = free_bytes(path)
    return free is not None and free < needed


def found_in(exc: BaseException) -> NoSpace | None:
    """The full disk anywhere in `exc`'s chain in words: a NoSpace as it is, an OSError(ENOSPC) at its
    file name (needed unknown); None when there is none."""
    for e in chain(exc):
        if isinstance(e, NoSpace):
            return e
        if isinstance(e, OSError) and e.errno in ERRNOS:
            return NoSpace(e.filename or ".")
    return None


def as_no_space(
    exc: BaseException, path: str | os.PathLike[str], needed: int | None = None
) -> NoSpace | None:
    """`exc` as a NoSpace at `path` when it is a full disk (see is_full), else None. Call it before
    partial files are removed when `needed` is to decide (they hold the space that is missing)."""
    if isinstance(exc, NoSpace):
        return exc
    return NoSpace(path, needed) if is_full(exc, path, needed) else None
