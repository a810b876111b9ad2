"""The most bytes the checkpoint proof holds on disk at once, counted per format before it writes.

Why: a check of "three copies of the state" passed on a 64 MiB tmpfs for 20 MiB, and the run then
filled it. Each format keeps more than the tensor data on disk (torch's zip records aligned to 64
bytes, DCP's .metadata and its per-tensor records, the manifest, every file's last block), a save
keeps the two previous steps until it is durable, and the training-loop save writes one more beside
those left. The overhead is measured, not assumed: each format saves a miniature of the state (the
same names, dtypes and number of dimensions, one element per tensor, and the real manifest) with the
proof's own writer inside the proof's own folder; its bytes beyond the data are that format's
overhead for this state. Staging (dcp-async) is in memory and takes no disk.
"""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from aiworkbook.proofs import shardio

#: save(folder, state, format) -> the checkpoint folder it wrote (checkpoint.save_checkpoint's path)
Save = Callable[[Path, dict[str, torch.Tensor], str], Path]

#: zip records (torch.save, and DCP's records) start on 64-byte boundaries: at most 63 bytes of
#: padding per tensor the miniature may not show
ZIP_ALIGN = 64
#: a number is written in at most 20 characters (decimal JSON up to 2**64) or 9 bytes (pickle); the
#: miniature writes each dimension and offset as one digit. Per tensor: its shape up to three times
#: (shape, a chunk's sizes and offsets) and two data offsets
NUMBER_CHARS = 20


def copies_at_once(trials: int) -> int:
    """Checkpoints of one format on disk at once. A save (keep=1) writes step i while steps i-1 and
    i-2 are still there (i-2 is pruned once i is durable): min(trials, 3). The training-loop save
    then writes one more beside the min(trials, 2) the trials left."""
    return max(min(trials, 3), min(trials, 2) + 1)


@dataclass(frozen=True)
class Footprint:
    """One format's checkpoint of this state on disk, from its miniature."""

    fmt: str
    data: int  # tensor bytes
    overhead: int  # bytes beyond the data (measured on the miniature, plus the bounds above)
    files: int  # files in the full checkpoint
    block: int  # the file system's allocation unit: each file's last block may be partly empty
    probe: int  # the miniature's allocated bytes: a bound for the format's one-tensor warm-up save

    @property
    def checkpoint(self) -> int:
        return self.data + self.overhead + self.files * self.block

    def peak(self, trials: int) -> int:
        return copies_at_once(trials) * self.checkpoint + self.probe


def miniature(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The same names, dtypes and number of dimensions, one element each."""
    return {k: torch.zeros((1,) * t.dim(), dtype=t.dtype) for k, t in state.items()}


def _on_disk(root: Path) -> tuple[int, int, int]:
    """(apparent bytes, allocated bytes, files) under `root`."""
    size = alloc = files = 0
    for p in root.rglob("*"):
        if p.is_file() and not p.is_symlink():
            st = p.stat()
            size, alloc, files = size + st.st_size, alloc + st.st_blocks * 512, files + 1
    return size, alloc, files


def _empty_file_bytes(fmt: str) -> int:
    """A shard file holding no tensor, as the format's own writer writes it (in memory)."""
    if fmt == "torch":
        buf = io.BytesIO()
        torch.save({}, buf)
        return len(buf.getvalue())
    if fmt == "safetensors":
        return len(shardio.safetensors_layout({})[0])
    return 0  # DCP writes one data file per process and thread, whatever the size


def _bytes(state: dict[str, torch.Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in state.values())


def block_size(path: str | os.PathLike) -> int:
    try:
        return max(1, os.statvfs(path).f_frsize)
    except OSError:
        return 4096


def footprint(work: Path, state: dict[str, torch.Tensor], fmt: str, save: Save, shards: int = 1) -> Footprint:
    """Save the miniature of `state` in `fmt` under `work` with the proof's own `save` (removed
    afterwards) and scale it to the `shards` files the full state is written in."""
    mini = miniature(state)
    where = work / f"room-{fmt}"
    try:
        saved = save(where, mini, fmt)
        size, alloc, files = _on_disk(saved)
        # LATEST (written beside the step folder through a temporary of the same size)
        size, files = size + 2 * len(saved.name), files + 2
    finally:
        shutil.rmtree(where, ignore_errors=True)
    dims = sum(t.dim() for t in state.values())
    slack = len(state) * (ZIP_ALIGN + 2 * NUMBER_CHARS) + 3 * dims * NUMBER_CHARS
    extra = (shards - 1) * _empty_file_bytes(fmt)
    return Footprint(
        fmt=fmt,
        data=_bytes(state),
        overhead=size - _bytes(mini) + slack + extra,
        files=files + shards - 1,
        block=block_size(work),
        probe=alloc,
    )


def peak(footprints: list[Footprint], state_bytes: int, trials: int, block: int) -> int:
    """The run's peak bytes on disk: formats run one after another (each one's files are removed
    before the next), after the baseline's one plain file of the state's size."""
    baseline = -(-state_bytes // block) * block
    return max(baseline, *(f.peak(trials) for f in footprints))
