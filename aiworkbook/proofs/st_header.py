"""A safetensors header read as strictly as safetensors reads it (its Rust `SafeTensors::read_metadata`
and `Metadata::validate`, 0.8), so a checkpoint someone else wrote is never read differently here
than by the library that defines the format. tests/test_st_header_vs_safetensors.py runs both on the
same crafted files (Hypothesis) and asserts they refuse the same ones.

What safetensors refuses, and so this: a header over 100,000,000 bytes or past the file's end; bytes
that are not UTF-8; JSON serde_json refuses (NaN/Infinity, a number out of range, a lone surrogate,
nesting deeper than 127, anything after the value but whitespace); a top level that is not an
object; `__metadata__` that is not null or an object of strings; a tensor entry without a dtype it
names, a shape of non-negative integers or exactly two non-negative integer data_offsets (no bools,
no 1.0, no "12"); a byte count that overflows 64 bits or does not fill whole bytes (F4); offsets
that do not tile the data from 0 without gap or overlap; data left over after the last tensor.
Extra keys in an entry are ignored, as serde ignores them; a repeated name keeps the last, as both do.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

MAX_HEADER = 100_000_000  # safetensors' MAX_HEADER_SIZE
MAX_DEPTH = 127  # serde_json's recursion limit (128) less the container that reaches it
U64 = 2**64 - 1
#: every dtype safetensors 0.8 names, with its size in bits
BITS: dict[str, int] = {
    "BOOL": 8,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "F8_E4M3FNUZ": 8,
    "F8_E5M2FNUZ": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "C64": 64,
    "F64": 64,
    "I64": 64,
    "U64": 64,
}


class BadHeader(ValueError):
    """Why safetensors would refuse this header (one short phrase)."""


@dataclass(frozen=True)
class Entry:
    name: str
    dtype: str  # safetensors' name
    shape: tuple[int, ...]  # as the file states it (F4 counts 4-bit elements)
    start: int  # offsets into the data after the header
    end: int


def _number(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise BadHeader("a number out of range")
    return value


def _constant(name: str) -> Any:
    raise BadHeader(f"{name} is not JSON")


def _check_tree(obj: Any, depth: int = 1) -> None:
    """serde_json's limits on what json.loads accepts: nesting, and strings that are not Unicode."""
    if depth > MAX_DEPTH:
        raise BadHeader(f"nested deeper than {MAX_DEPTH}")
    if isinstance(obj, str):
        _text(obj)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _text(k)
            if isinstance(v, dict | list):
                _check_tree(v, depth + 1)
            elif isinstance(v, str):
                _text(v)
    elif isinstance(obj, list):
        for v in obj:
            if isinstance(v, dict | list):
                _check_tree(v, depth + 1)
            elif isinstance(v, str):
                _text(v)


def _text(s: str) -> None:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        raise BadHeader("a lone surrogate in a string") from None


def _uint(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= U64:
        raise BadHeader(f"{what} is not an integer from 0 to 2^64-1")
    return v


def _entry(name: str, info: Any) -> Entry:
    if not isinstance(info, dict):
        raise BadHeader(f"tensor {name!r} is not an object")
    dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
    if not isinstance(dtype, str) or dtype not in BITS:
        raise BadHeader(f"tensor {name!r} has no dtype safetensors names")
    if not isinstance(shape, list):
        raise BadHeader(f"tensor {name!r}'s shape is not a list")
    dims = tuple(_uint(d, f"tensor {name!r}'s shape") for d in shape)
    if not isinstance(offsets, list) or len(offsets) != 2:
        raise BadHeader(f"tensor {name!r}'s data_offsets are not two integers")
    start, end = (_uint(x, f"tensor {name!r}'s data_offsets") for x in offsets)
    return Entry(name, dtype, dims, start, end)


def parse(raw: bytes, data_len: int) -> tuple[list[Entry], dict[str, str]]:
    """The entries (in data order) and the metadata of a header `raw` followed by `data_len` bytes of
    data; BadHeader when safetensors would refuse them."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadHeader("the header is not UTF-8") from None
    try:
        doc = json.loads(text, parse_float=_number, parse_constant=_constant)
    except RecursionError:
        raise BadHeader(f"nested deeper than {MAX_DEPTH}") from None
    except json.JSONDecodeError as exc:
        raise BadHeader(f"the header is not JSON ({exc.msg})") from None
    if not isinstance(doc, dict):
        raise BadHeader("the header is not a JSON object")
    _check_tree(doc)
    meta = doc.pop("__metadata__", None)
    if meta is not None and not (isinstance(meta, dict) and all(isinstance(v, str) for v in meta.values())):
        raise BadHeader("__metadata__ is not an object of strings")
    entries = sorted((_entry(k, v) for k, v in doc.items()), key=lambda e: (e.start, e.end))
    end = 0
    for e in entries:
        if e.start != end or e.end < e.start:
            raise BadHeader(f"tensor {e.name!r}'s data_offsets do not follow the previous tensor's")
        count = 1
        for d in e.shape:
            count *= d
        bits = count * BITS[e.dtype]
        if bits > U64 or count > U64:
            raise BadHeader(f"tensor {e.name!r}'s size overflows 64 bits")
        if bits % 8:
            raise BadHeader(f"tensor {e.name!r} does not fill whole bytes")
        if e.end - e.start != bits // 8:
            raise BadHeader(f"tensor {e.name!r} holds {e.end - e.start} bytes for shape {list(e.shape)}")
        end = e.end
    if end != data_len:
        raise BadHeader(f"the tensors cover {end} of the {data_len} data bytes")
    return entries, dict(meta or {})


def length(prefix: bytes, size: int) -> int:
    """The header's length from the file's first 8 bytes; BadHeader when it cannot be read."""
    if size < 8:
        raise BadHeader(f"{size} bytes, shorter than the 8-byte header length")
    n = int.from_bytes(prefix[:8], "little")
    if n > MAX_HEADER:
        raise BadHeader(f"a header of {n} bytes, over safetensors' {MAX_HEADER:,}")
    if 8 + n > size:
        raise BadHeader(f"a header of {n} bytes in a file of {size}")
    return n
