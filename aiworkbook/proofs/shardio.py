"""Checkpoint shards in the standard safetensors format, written and read at the speed of the disk.

Write: the same bytes `safetensors.torch.save_file` writes (tested byte for byte), but into a new
file only (O_EXCL) that is first given its whole size on disk (Linux `fallocate`: its blocks are
allocated before the writes, not during writeback), each tensor written straight from its own
memory, and writeback started every WRITEBACK_EVERY bytes (`sync_file_range(SYNC_FILE_RANGE_WRITE)`),
so the disk writes while the rest of the shard is copied into the page cache; there `progress` runs
too, so a cancel lands inside a large shard. The save still ends in fsync of every file and folder
(fsio.publish). At the same 64 MiB shards the writer measured 0.95 to 1.09x save_file + writeback per
shard (paired medians of four runs; without fallocate, 0.89x the writer with it, one run of 40
rounds): its gain is that shards can be large (checkpoint.SAFETENSORS_SHARD_BYTES), one fsync where
there were four: 1.23x the old save, paired, 24 rounds (docs/proofs.md, "Beside fio"). A dtype
outside DTYPE_ORDER (one this file does not know safetensors' order for) is written by save_file.

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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from aiworkbook.errors import SpecError
from aiworkbook.proofs import st_header

READER = "mmap + MADV_SEQUENTIAL + MADV_POPULATE_READ (aiworkbook/proofs/shardio.py)"
WRITER = (
    "safetensors bytes (as save_file writes them) into a file fallocated to its size, writeback started "
    "every 32 MiB, fsync of files and folders at the end (aiworkbook/proofs/shardio.py)"
)
WRITEBACK_EVERY = 32 * 2**20  # bytes between writeback starts (8 and 32 MiB measured alike)
MADV_POPULATE_READ = getattr(mmap, "MADV_POPULATE_READ", 22)  # linux/mman.h; Python 3.11 lacks the name
SYNC_FILE_RANGE_WRITE = 2  # linux/fs.h

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
#: safetensors' data order: by dtype in this order, then by name (safetensors 0.8 `prepare`; the
#: byte-for-byte test against save_file holds it)
DTYPE_ORDER: tuple[str, ...] = ("U64", "I64", "F64", "C64", "F32", "U32", "I32", "BF16", "F16", "U16")
DTYPE_ORDER += ("I16", "F8_E4M3", "F8_E5M2", "I8", "U8", "BOOL")
_NAMES = {dt: name for name, dt in DTYPES.items()}  # every name in DTYPES is in DTYPE_ORDER
#: what the reader reads besides: the dtypes the writer hands to save_file (their order there is not
#: pinned here), as safetensors.torch names them
READ_DTYPES: dict[str, torch.dtype] = {
    **DTYPES,
    **{
        name: dt
        for name, dt in {
            "F8_E4M3FNUZ": getattr(torch, "float8_e4m3fnuz", None),
            "F8_E5M2FNUZ": getattr(torch, "float8_e5m2fnuz", None),
            "F8_E8M0": getattr(torch, "float8_e8m0fnu", None),
            "F4": getattr(torch, "float4_e2m1fn_x2", None),  # two 4-bit values a byte: the file counts each
        }.items()
        if dt is not None
    },
}


def write_shard(
    path: str | os.PathLike,
    tensors: dict[str, torch.Tensor],
    progress: Callable[[int], None] | None = None,
) -> None:
    """Write `tensors` as a new safetensors file (an existing `path` is refused, never replaced), the
    bytes save_file would write, and start its writeback; durability is the caller's fsync.
    `progress(tensor bytes written so far)` runs each time writeback is started: a large shard
    reports, and a cancel raised there lands, every WRITEBACK_EVERY bytes. Non-contiguous tensors are written as
    their contiguous copies (safetensors refuses them as they are)."""
    dense = {k: t if t.is_contiguous() else t.contiguous() for k, t in tensors.items()}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # FileExistsError for an input
    if not all(t.dtype in _NAMES and t.layout == torch.strided for t in dense.values()):
        os.close(fd)
        from safetensors.torch import save_file

        save_file(dense, str(path))  # its own temp file, renamed over the empty one just made
        start_writeback(path)
        return
    try:
        _write_fd(fd, dense, progress)
    finally:
        os.close(fd)


def safetensors_layout(tensors: dict[str, torch.Tensor]) -> tuple[bytes, list[torch.Tensor]]:
    """The file's first bytes (8-byte little-endian header length, JSON header padded with spaces to a
    multiple of 8) and the tensors in the order their bytes follow, as safetensors lays them out."""
    items = sorted(tensors.items(), key=lambda kv: (DTYPE_ORDER.index(_NAMES[kv[1].dtype]), kv[0]))
    header: dict[str, Any] = {}
    end = 0
    for name, t in items:
        n = t.numel() * t.element_size()
        header[name] = {"dtype": _NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [end, end + n]}
        end += n
    raw = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    raw += b" " * (-len(raw) % 8)
    return len(raw).to_bytes(8, "little") + raw, [t for _, t in items]


def _write_fd(fd: int, tensors: dict[str, torch.Tensor], progress: Callable[[int], None] | None) -> None:
    head, order = safetensors_layout(tensors)
    size = len(head) + sum(t.numel() * t.element_size() for t in order)
    preallocate(fd, size)
    _write_all(fd, memoryview(head))
    done, started = len(head), 0  # file offsets: written up to, writeback started up to
    for t in order:
        if not t.numel():
            continue
        view = memoryview(t.detach().cpu().reshape(-1).view(torch.uint8).numpy().data)
        for i in range(0, len(view), WRITEBACK_EVERY):
            done += _write_all(fd, view[i : i + WRITEBACK_EVERY])
            if done - started >= WRITEBACK_EVERY:
                _writeback(fd, started, done - started)
                started = done
                if progress is not None:
                    progress(done - len(head))
    _writeback(fd, started, 0)  # the rest (0: to the end of the file)


def _write_all(fd: int, view: memoryview) -> int:
    """os.write until every byte is written (a write may take fewer); returns the count."""
    n = len(view)
    while view:
        view = view[os.write(fd, view) :]
    return n


@functools.cache
def _libc(name: str, *argtypes: Any) -> Any:
    """A libc function with its argument types, or None (not available here)."""
    try:
        fn = getattr(ctypes.CDLL(None, use_errno=True), name)
    except (OSError, AttributeError):
        return None
    fn.argtypes = list(argtypes)
    return fn


def preallocate(fd: int, size: int) -> bool:
    """Give the file `size` bytes of disk now (Linux fallocate, mode 0); False where the file system or
    platform does not offer it. Not glibc's posix_fallocate, which on such a file system writes zeros
    over the whole file first: twice the writes."""
    fn = _libc("fallocate", ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64)
    return size > 0 and fn is not None and fn(fd, 0, 0, size) == 0


def _writeback(fd: int, offset: int, nbytes: int) -> bool:
    fn = _sync_file_range()
    return fn is not None and fn(fd, offset, nbytes, SYNC_FILE_RANGE_WRITE) == 0


def _sync_file_range() -> Any:
    """libc's sync_file_range, or None (not Linux)."""
    return _libc("sync_file_range", ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint)


def start_writeback(path: str | os.PathLike) -> bool:
    """Ask the kernel to begin writing a file's dirty pages now, without waiting (Linux); False where
    not available. Not a durability step: fsync still follows."""
    if _sync_file_range() is None:
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        return _writeback(fd, 0, 0)
    finally:
        os.close(fd)


def _bad(path: str | os.PathLike, why: str) -> SpecError:
    return SpecError("dir", str(path), f"a readable safetensors file ({why})")


def _torch_shape(e: st_header.Entry) -> list[int]:
    """The torch shape of an entry; F4's last dimension counts 4-bit values, torch's float4_e2m1fn_x2
    pairs of them (as safetensors.torch reads it)."""
    shape = list(e.shape)
    if e.dtype == "F4":
        if not shape or shape[-1] % 2:
            raise st_header.BadHeader(f"tensor {e.name!r}: F4 needs an even last dimension in torch")
        shape[-1] //= 2
    if any(d > 2**63 - 1 for d in shape):
        raise st_header.BadHeader(f"tensor {e.name!r}: a dimension past torch's 2^63-1")
    return shape


def load_shard(path: str | os.PathLike) -> tuple[dict[str, torch.Tensor], bool]:
    """The tensors of one safetensors file as views of a private mapping, and whether the kernel
    populated it (False: MADV_POPULATE_READ unavailable, the caller must touch the bytes). The header
    is read as strictly as safetensors reads it (st_header): what it refuses is refused here, in one
    sentence (SpecError, exit 2); never a pickle, never more than its 100 MB header limit parsed."""
    size = Path(path).stat().st_size
    try:
        with open(path, "rb") as f:
            n = st_header.length(f.read(8), size)
            entries, _meta = st_header.parse(f.read(n), size - 8 - n)
            for e in entries:
                if e.dtype not in READ_DTYPES:
                    raise st_header.BadHeader(f"tensor {e.name!r}: {e.dtype} has no torch dtype here")
            shapes = {e.name: _torch_shape(e) for e in entries}
            m = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_COPY) if size else None
    except st_header.BadHeader as exc:
        raise _bad(path, str(exc)) from None
    populated = True
    try:
        if m is not None:
            m.madvise(mmap.MADV_SEQUENTIAL)
            m.madvise(MADV_POPULATE_READ)
    except (OSError, AttributeError, ValueError):
        populated = False
    start = 8 + n
    data = (
        torch.frombuffer(m, dtype=torch.uint8)
        if m is not None and size > start
        else torch.empty(0, dtype=torch.uint8)
    )
    out: dict[str, torch.Tensor] = {}
    for e in entries:
        dtype = READ_DTYPES[e.dtype]
        raw = data[start + e.start : start + e.end]
        if (start + e.start) % dtype.itemsize:  # a file written unaligned by another tool: copy, not view
            raw = raw.clone()
        out[e.name] = raw.view(dtype).reshape(shapes[e.name])
    return out, populated
