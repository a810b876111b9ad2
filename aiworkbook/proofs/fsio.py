"""Honest file I/O for the storage proofs: durable writes (fsync of file and directory), cold reads
(posix_fadvise DONTNEED after fsync) and a disk-space check before the first byte is written. Where a
proof writes: its own new folder (proofs/scratch.py).

Why: `torch.save` does not fsync and the page cache makes a re-read look like RAM; a figure counts
only when the bytes are on storage (docs/architecture.md, "Measuring honestly"; fsync(2)).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg, quoted
from aiworkbook.units import MiB, fmt_bytes

CHUNK = 16 * MiB  # one write/read unit: well under a second on any disk, so a cancel lands quickly
TMP_PREFIX = ".aiwb-tmp-"
#: file systems whose "reads" never leave memory: a cold read there is a memory read
MEMORY_FS = ("tmpfs", "ramfs", "devtmpfs", "overlay-tmpfs")
COLD_SHARE = 0.9  # a cold read takes at least this share of the bytes it needs from storage


def fsync_path(path: str | os.PathLike) -> None:
    """fsync a file or a directory (a directory fsync makes its new entries and renames durable)."""
    flags = os.O_RDONLY | (os.O_DIRECTORY if Path(path).is_dir() and hasattr(os, "O_DIRECTORY") else 0)
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(root: str | os.PathLike) -> int:
    """fsync every file under `root`, then every directory bottom-up; returns the files' total bytes."""
    total = 0
    dirs = []
    for d, _sub, files in os.walk(str(root)):
        dirs.append(d)
        for f in files:
            p = os.path.join(d, f)
            fsync_path(p)
            total += os.path.getsize(p)
    for d in reversed(dirs):
        fsync_path(d)
    return total


def drop_cache(path: str | os.PathLike) -> tuple[bool, str]:
    """Evict a file (or every file under a directory) from the page cache: fsync, then
    posix_fadvise(DONTNEED). Returns (done, why not). Not possible on platforms without posix_fadvise
    or on memory file systems (tmpfs), where there is no storage to read from."""
    if not hasattr(os, "posix_fadvise"):
        return False, Msg("cold.no_fadvise")
    fs = fs_type(path)
    if fs in MEMORY_FS:
        return False, Msg("cold.memory_fs", path=str(path), fs=fs)
    paths = [Path(path)] if Path(path).is_file() else [p for p in Path(path).rglob("*") if p.is_file()]
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)  # DONTNEED leaves dirty pages in place: they must be clean first
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        except OSError as exc:
            return False, Msg("cold.fadvise_failed", path=str(p), error=quoted(exc))
        finally:
            os.close(fd)
    return True, ""


def storage_read_bytes() -> int | None:
    """Bytes this process has caused to be read from storage (Linux /proc/self/io `read_bytes`);
    None where the kernel does not count them. A restore that reads fewer than its file's bytes from
    storage was not cold, whatever drop_cache said (a page still mapped somewhere is not evicted)."""
    try:
        with open("/proc/self/io", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("read_bytes:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def confirm_cold(dropped: tuple[bool, str], read: int | None, need: int) -> tuple[bool, str]:
    """`dropped` (drop_cache's answer) unless the timed read took under COLD_SHARE of the `need` bytes
    from storage (`read`, from storage_read_bytes; None: not counted here, so not contradicted)."""
    if dropped[0] and read is not None and read < COLD_SHARE * need:
        return False, Msg("cold.from_storage", read=read, need=need)
    return dropped


def fs_type(path: str | os.PathLike) -> str:
    """The file system type holding `path` (longest matching mount point), '' when unknown."""
    try:
        import psutil

        target = os.path.realpath(path)
        best, kind = "", ""
        for part in psutil.disk_partitions(all=True):
            mp = part.mountpoint
            if (target == mp or target.startswith(mp.rstrip("/") + "/")) and len(mp) > len(best):
                best, kind = mp, part.fstype
        return kind
    except Exception:
        return ""


def check_free(directory: str | os.PathLike, need_bytes: int, *, margin: float = 1.05) -> int:
    """Refuse before writing when the directory's free space is below `need_bytes` (x margin) with
    diskfull.NoSpace ("no space left on <device> at <dir>: needed ~X, free Y"); returns the free bytes."""
    from aiworkbook.diskfull import free_bytes, total_bytes

    free = free_bytes(directory)  # a folder not made yet: the free space where it will be made
    if free is None:
        raise SpecError("dir", str(directory), Msg("allowed.dir_free_readable"))
    if total_bytes(directory) == 0:  # /sys, /proc: no disk at all, so not "full" but the wrong place
        raise SpecError("dir", str(directory), Msg("allowed.dir_stores_files"))
    if need_bytes * margin > free:  # in the words of a full disk: where, needed and free (exit 1)
        from aiworkbook.diskfull import NoSpace

        raise NoSpace(directory, int(need_bytes * margin), free=free)
    return free


def check_ram(need_bytes: int, field: str, what: str) -> int:
    """Refuse before allocating when host RAM available is below `need_bytes`; returns what is available."""
    import psutil

    avail = psutil.virtual_memory().available
    if need_bytes > avail:
        raise SpecError(
            field, what, Msg("allowed.fits_ram", need=fmt_bytes(need_bytes), avail=fmt_bytes(avail))
        )
    return avail


def publish(tmp: Path, final: Path) -> None:
    """Atomically move a finished, fsynced folder to its (new) final name and make the rename durable.
    An existing `final` is refused: replacing it would leave a moment with neither folder."""
    if final.exists():
        raise FileExistsError(f"{final} exists; publish under a new name")
    fsync_tree(tmp)
    os.replace(tmp, final)
    fsync_path(final.parent)


def write_sequential(
    path: Path, nbytes: int, step: Callable[[int], None] | None = None, chunk: int = CHUNK
) -> float:
    """Plain sequential write of `nbytes` of random data in chunks, fsynced (file and directory).
    Returns seconds until durable. The buffer is made before the clock starts."""
    import numpy as np

    buf = np.random.default_rng(0).integers(0, 256, size=min(chunk, max(nbytes, 1)), dtype=np.uint8).data
    done = 0
    t0 = time.perf_counter()
    with open(path, "wb", buffering=0) as f:
        while done < nbytes:
            n = min(len(buf), nbytes - done)
            f.write(buf[:n])
            done += n
            if step is not None:
                step(done)
        os.fsync(f.fileno())
    fsync_path(path.parent)
    return time.perf_counter() - t0


def read_sequential(path: Path, step: Callable[[int], None] | None = None, chunk: int = CHUNK) -> float:
    """Plain sequential read of a whole file in chunks into one reused buffer; seconds."""
    buf = bytearray(chunk)
    view = memoryview(buf)
    done = 0
    t0 = time.perf_counter()
    with open(path, "rb", buffering=0) as f:
        while True:
            n = f.readinto(view)
            if not n:
                break
            done += n
            if step is not None:
                step(done)
    return time.perf_counter() - t0


def tree_bytes(root: str | os.PathLike) -> int:
    p = Path(root)
    return p.stat().st_size if p.is_file() else sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
