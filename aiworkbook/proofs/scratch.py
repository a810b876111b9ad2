"""A proof's own scratch folder: every proof that writes files writes them only inside a fresh folder it
creates under the directory the user named (`<dir>/aiworkbook-<proof>-<UTC time>-<random>/`, made with
an exclusive mkdir, so an existing folder is never reused), and removes that folder, and only it,
afterwards unless asked to keep it.

Why: a user points `--dir` at real folders (a training job's checkpoints, a dataset). Anything the proof
did not create there (files, step folders, a LATEST link) must come out byte for byte as it went in.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg, quoted

PREFIX = "aiworkbook-"


def root(directory: str | os.PathLike | None, field: str = "dir") -> Path:
    """The directory the user named, resolved; it must be a folder this user can write, or one that
    can be made in such a folder. Nothing is created here: the folders it lacks are made with the
    proof's own folder (`create`) and removed with it, so a refused or finished run leaves no empty
    folders behind. Nothing inside an existing folder is touched."""
    if directory is None or str(directory) == "":
        raise SpecError(field, directory, Msg("allowed.dir_given"))
    d = Path(directory).expanduser()
    if d.exists() and not d.is_dir():
        raise SpecError(field, str(directory), Msg("allowed.dir_not_file"))
    d = d.resolve()
    base = next((q for q in (d, *d.parents) if q.exists()), None)
    if base is None or not base.is_dir():
        raise SpecError(
            field, str(directory), Msg("allowed.dir_creatable", why=Msg("allowed.is_file", path=str(base)))
        )
    if not os.access(base, os.W_OK | os.X_OK):
        where = "" if base == d else Msg("allowed.made_in", folder=str(base))
        raise SpecError(field, str(directory), Msg("allowed.dir_writable", where=where))
    return d


def _make_parents(d: Path, directory: str | os.PathLike | None) -> tuple[Path, ...]:
    """Make the folders `d` lacks, outermost first; returns those made here (deepest first)."""
    made: list[Path] = []
    for q in reversed([q for q in (d, *d.parents) if not q.exists()]):
        try:
            os.mkdir(q)
        except FileExistsError:
            continue  # made meanwhile by someone else: theirs, never removed here
        except OSError as exc:
            _remove_made(tuple(reversed(made)))
            why = exc.strerror or type(exc).__name__
            raise SpecError("dir", str(directory), Msg("allowed.dir_creatable", why=quoted(why))) from None
        made.append(q)
    return tuple(reversed(made))


def _remove_made(made: tuple[Path, ...]) -> None:
    """Remove the folders `_make_parents` made, deepest first, while they are empty."""
    for q in made:
        try:
            os.rmdir(q)
        except OSError:
            return  # not empty (someone else's files now), or gone: stop, keep the rest


@dataclass(frozen=True)
class Scratch:
    """A folder this process created: its path and the (device, inode) it had, so it is removed only
    while it is still that folder (never a link or another folder put in its place)."""

    path: Path
    ident: tuple[int, int]
    keep: bool = False
    made: tuple[Path, ...] = ()  # the folders above `path` made for it (deepest first)

    def note(self) -> str:
        if self.keep:
            return Msg("scratch.kept", path=str(self.path))
        return Msg("scratch.removed", path=str(self.path))

    def remove(self) -> bool:
        """Remove the folder and what is inside it (links inside are removed, never followed)."""
        try:
            st = os.lstat(self.path)
        except OSError:
            return False
        if not stat.S_ISDIR(st.st_mode) or (st.st_dev, st.st_ino) != self.ident:
            return False
        shutil.rmtree(self.path, ignore_errors=True)
        gone = not self.path.exists()
        if gone:
            _remove_made(self.made)
        return gone


def create(directory: str | os.PathLike | None, proof: str, *, keep: bool = False) -> Scratch:
    """A new, empty folder `aiworkbook-<proof>-<UTC time>-<random>` inside `directory` (see `root`)."""
    d = root(directory)
    made = _make_parents(d, directory)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for _ in range(16):
        path = d / f"{PREFIX}{proof}-{stamp}-{secrets.token_hex(4)}"
        try:
            os.mkdir(path)  # exclusive: FileExistsError when the name is taken, never reused
        except FileExistsError:
            continue
        except OSError as exc:
            _remove_made(made)
            why = exc.strerror or type(exc).__name__
            raise SpecError("dir", str(directory), Msg("allowed.dir_for_folder", why=quoted(why))) from None
        st = os.lstat(path)
        return Scratch(path, (st.st_dev, st.st_ino), keep, made)
    _remove_made(made)
    raise SpecError("dir", str(directory), Msg("allowed.dir_new_name"))


@contextmanager
def scratch(directory: str | os.PathLike | None, proof: str, *, keep: bool = False) -> Iterator[Scratch]:
    """`create`, then remove the folder whatever happens (Ctrl-C included) unless `keep`."""
    s = create(directory, proof, keep=keep)
    try:
        yield s
    finally:
        if not keep:
            s.remove()


@contextmanager
def temporary_root(directory: str | os.PathLike | None = None) -> Iterator[Path]:
    """The folder re-run proofs write under: `directory` when one was named (see `root`), else a fresh
    temporary folder removed afterwards."""
    if directory is not None:
        yield root(directory)
        return
    path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}check-"))
    st = os.lstat(path)
    s = Scratch(path, (st.st_dev, st.st_ino))
    try:
        yield s.path
    finally:
        s.remove()


def kept(directory: str | os.PathLike | None, proof: str) -> list[Path]:
    """Where a kept folder of `proof` may be, read-only: `directory` itself (the folder a run printed),
    then its `aiworkbook-<proof>-*` folders, newest first. Links are not followed out of it."""
    if not directory:
        return []
    d = Path(directory).expanduser()
    if not d.is_dir():
        return []
    try:
        found = [p for p in d.iterdir() if p.name.startswith(f"{PREFIX}{proof}-")]
    except OSError:
        return [d]
    return [d, *sorted((p for p in found if p.is_dir() and not p.is_symlink()), reverse=True)]
