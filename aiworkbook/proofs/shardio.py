"""Checkpoint shards in the standard safetensors format, written and read at the speed of the disk.

Write: `safetensors.torch.save_file` (0.8 writes each tensor straight from its memory in 4 MiB
writes, no whole-file buffer: an own writer would copy nothing less), into a new file only, then
writeback of the finished shard is started (Linux `sync_file_range(SYNC_FILE_RANGE_WRITE)`), so the
disk writes one shard while the next is serialised; the save still ends in fsync of every file and
folder (fsio.publish). Per-shard fsync, as before, left the disk idle while the next shard was built.

Read: the file is mapped privately (copy-on-write, as safetensors' own `load_file` maps it), advised
MADV_SEQUENTIAL and faulted in whole by the kernel with MADV_POPULATE_READ (Linux 5.14): every page
is read from storage, as a touch of each byte would, without a page fault per 64 KiB from Python.
The tensors are views of that mapping. Measured beside `load_file` + touch and fio in
benchmarks/bench_storage.py; see docs/proofs.md ("Beside fio").
"""

from __future__ import annotations

import ctypes
import functools
import json
import mmap
import os
from pathlib import Path
from typing import Any

import torch

from aiworkbook.errors import SpecError

READER = "mmap + MADV_SEQUENTIAL + MADV_POPULATE_READ (aiworkbook/proofs/shardio.py)"
WRITER = "safetensors.torch.save_file, writeback started per shard, fsync of files and folders at the end"
MADV_POPULATE_READ = getattr(mmap, "MADV_POPULATE_READ", 22)  # linux/mman.h; Python 3.11 lacks the name
SYNC_FILE_RANGE_WRITE = 2  # linux/fs.h
MAX_HEADER = 100_000_000  # safetensors' own limit on the JSON header

#: safetensors' dtype names (https://github.com/huggingface/safetensors, "Format") -> torch
DTYPES: dict[str, torch.dtype] = {
    name: dt
    for name, dt in {
        "F64": torch.float64,
        "F32": torch.float32,
        "F16": torch.float16,
        "BF16": torch.bfloat16,
        "I64": torch.int64,
        "I32": torch.int32,
        "I16": torch.int16,
        "I8": torch.int8,
        "U8": torch.uint8,
        "BOOL": torch.bool,
        "U16": getattr(torch, "uint16", None),
        "U32": getattr(torch, "uint32", None),
        "U64": getattr(torch, "uint64", None),
        "C64": torch.complex64,
        "F8_E4M3": getattr(torch, "float8_e4m3fn", None),
        "F8_E5M2": getattr(torch, "float8_e5m2", None),
    }.items()
    if dt is not None
}


def write_shard(path: str | os.PathLike, tensors: dict[str, torch.Tensor]) -> None:
    """Write `tensors` as a new safetensors file (an existing `path` is refused, never replaced) and
    start its writeback; durability is the caller's fsync. Non-contiguous tensors are written as
    their contiguous copies (safetensors refuses them as they are)."""
    from safetensors.torch import save_file

    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # FileExistsError for an input
    os.close(fd)
    save_file({k: t if t.is_contiguous() else t.contiguous() for k, t in tensors.items()}, str(path))
    start_writeback(path)


@functools.cache
def _sync_file_range() -> Any:
    """libc's sync_file_range, or None (not Linux)."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    return fn


def start_writeback(path: str | os.PathLike) -> bool:
    """Ask the kernel to begin writing a file's dirty pages now, without waiting (Linux); False where
    not available. Not a durability step: fsync still follows."""
    fn = _sync_file_range()
    if fn is None:
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        return bool(fn(fd, 0, 0, SYNC_FILE_RANGE_WRITE) == 0)
    finally:
        os.close(fd)


def _bad(path: str | os.PathLike, why: str) -> SpecError:
    return SpecError("dir", str(path), f"a readable safetensors file ({why})")


def load_shard(path: str | os.PathLike) -> tuple[dict[str, torch.Tensor], bool]:
    """The tensors of one safetensors file as views of a private mapping, and whether the kernel
    populated it (False: MADV_POPULATE_READ unavailable, the caller must touch the bytes). The header
    is checked as safetensors checks it: offsets inside the file, sizes matching shape x dtype."""
    size = Path(path).stat().st_size
    if size < 8:
        raise _bad(path, f"{size} bytes, shorter than its 8-byte header length")
    with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_COPY)
    populated = True
    try:
        m.madvise(mmap.MADV_SEQUENTIAL)
        m.madvise(MADV_POPULATE_READ)
    except (OSError, AttributeError, ValueError):
        populated = False
    n = int.from_bytes(m[:8], "little")
    if not 0 < n <= min(size - 8, MAX_HEADER):
        raise _bad(path, f"header length {n} outside the file's {size} bytes")
    try:
        header = json.loads(m[8 : 8 + n])
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise _bad(path, "header is not JSON") from None
    if not isinstance(header, dict):
        raise _bad(path, "header is not a JSON object")
    header.pop("__metadata__", None)
    start = 8 + n
    data = torch.frombuffer(m, dtype=torch.uint8) if size > start else torch.empty(0, dtype=torch.uint8)
    out: dict[str, torch.Tensor] = {}
    for name, entry in header.items():
        try:
            dtype = DTYPES[entry["dtype"]]
            shape = [int(d) for d in entry["shape"]]
            a, b = (int(x) for x in entry["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise _bad(path, f"entry {name!r} lacks a known dtype, a shape or data_offsets") from None
        numel = 1
        for d in shape:
            numel *= d
        if min(shape, default=0) < 0 or not 0 <= a <= b <= size - start:
            raise _bad(path, f"entry {name!r} points outside the file")
        if b - a != numel * dtype.itemsize:
            raise _bad(path, f"entry {name!r} holds {b - a} bytes for {numel} x {entry['dtype']}")
        raw = data[start + a : start + b]
        if (start + a) % dtype.itemsize:  # a file written unaligned by another tool: copy, not view
            raw = raw.clone()
        out[name] = raw.view(dtype).reshape(shape)
    return out, populated
