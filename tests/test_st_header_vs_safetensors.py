"""The checkpoint reader (proofs/shardio.py + st_header.py) against safetensors itself: both run on
the same crafted files and must refuse the same ones (Hypothesis: headers near valid, with the
mutations a hostile or corrupt file holds), read the accepted ones to the same tensors, and read back
what our own writer wrote for every dtype torch and safetensors share. safetensors is the format's
definition (its Rust parser), so where they differ it is the reader here that is wrong."""

from __future__ import annotations

import json
import struct

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors.torch import load_file, save_file

from aiworkbook.errors import SpecError
from aiworkbook.proofs import shardio

pytestmark = pytest.mark.timeout(300)

CASES = settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
DTYPES = ["F32", "F16", "BF16", "U8", "I64", "BOOL", "F8_E4M3", "F8_E8M0", "F4", "F6_E2M3", "Q7", "f32"]
BITS = {"F32": 32, "F16": 16, "BF16": 16, "U8": 8, "I64": 64, "BOOL": 8, "F8_E4M3": 8, "F8_E8M0": 8, "F4": 4}
# JSON values a hostile header puts where an integer list belongs
ODD = st.sampled_from(["12", 1.5, 1.0, True, False, None, -1, 2**64, 2**70, [], {}, "x"])


@st.composite
def headers(draw) -> bytes:
    """A safetensors file: a valid layout of up to 3 tensors, then perhaps one mutation."""
    names = draw(st.lists(st.sampled_from(["a", "b", "c", "__metadata__x"]), max_size=3, unique=True))
    header: dict = {}
    end = 0
    for name in names:
        dtype = draw(st.sampled_from([d for d in BITS if d != "F4"] + ["F4"]))
        shape = draw(st.lists(st.integers(0, 4), max_size=3))
        if dtype == "F4" and shape:
            shape[-1] = 2 * shape[-1]
        count = 1
        for d in shape:
            count *= d
        n = count * BITS[dtype] // 8
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [end, end + n]}
        end += n
    data_len = end
    if draw(st.booleans()):
        header["__metadata__"] = draw(st.sampled_from([{"k": "v"}, None, {"k": 1}, [], "x"]))
    mutation = draw(
        st.sampled_from(["none", "field", "offsets", "data", "dtype", "extra", "raw", "drop", "shape"])
    )
    if names and mutation != "none":
        t = header[draw(st.sampled_from(names))]
        if mutation == "field":
            t[draw(st.sampled_from(["shape", "data_offsets"]))] = draw(ODD)
        elif mutation == "offsets":
            t["data_offsets"] = [
                draw(st.one_of(st.integers(0, 64), ODD)) for _ in range(draw(st.integers(1, 3)))
            ]
        elif mutation == "dtype":
            t["dtype"] = draw(st.sampled_from(DTYPES + [None, 1]))
        elif mutation == "extra":
            t["x"] = draw(st.sampled_from([1, "y", [[1]], {"z": None}]))
        elif mutation == "drop":
            del t[draw(st.sampled_from(["dtype", "shape", "data_offsets"]))]
        elif mutation == "shape":
            t["shape"] = [draw(st.one_of(st.integers(0, 2**65), ODD))]
    if mutation == "data":
        data_len = max(0, data_len + draw(st.integers(-3, 3)))
    raw = json.dumps(header).encode()
    if mutation == "raw":
        raw = draw(
            st.sampled_from(
                [
                    raw + b"\0",
                    b" " + raw + b"   ",
                    raw.replace(b"0", b"NaN", 1),
                    raw.replace(b"}", b',"x":1e400}', 1),
                    raw[:-1],
                    b"\xff" + raw,
                    b'{"x":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"y":'
                    + b"[" * 126
                    + b"]" * 126
                    + b"}}",
                    b'{"x":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"y":'
                    + b"[" * 125
                    + b"]" * 125
                    + b"}}",
                    b'{"\\ud800":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}',
                ]
            )
        )
    return struct.pack("<Q", len(raw)) + raw + (bytes(range(256)) * (data_len // 256 + 1))[:data_len]


def _theirs(path):
    try:
        return load_file(str(path))
    except Exception:  # safetensors' own refusal (SafetensorError), or torch's when it cannot hold it
        return None


def _ours(path):
    try:
        return shardio.load_shard(path)[0]
    except SpecError as exc:
        assert "\n" not in str(exc) and exc.field == "dir"
        return None


@given(blob=headers())
@CASES
def test_the_reader_refuses_what_safetensors_refuses_and_reads_what_it_reads(tmp_path_factory, blob):
    path = tmp_path_factory.mktemp("st") / "x.safetensors"
    path.write_bytes(blob)
    theirs, ours = _theirs(path), _ours(path)
    assert (theirs is None) == (ours is None), (blob[:300], theirs is None)
    if theirs is not None and ours is not None:
        assert theirs.keys() == ours.keys()
        for k in theirs:
            a, b = theirs[k], ours[k]
            assert a.dtype == b.dtype and a.shape == b.shape
            assert torch.equal(a.reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8))


@pytest.mark.parametrize(
    "dtype",
    [
        d
        for d in (
            torch.float64,
            torch.float32,
            torch.float16,
            torch.bfloat16,
            torch.int64,
            torch.int32,
            torch.int16,
            torch.int8,
            torch.uint8,
            torch.bool,
            torch.complex64,
            getattr(torch, "uint16", None),
            getattr(torch, "uint32", None),
            getattr(torch, "uint64", None),
            getattr(torch, "float8_e4m3fn", None),
            getattr(torch, "float8_e5m2", None),
            getattr(torch, "float8_e4m3fnuz", None),
            getattr(torch, "float8_e5m2fnuz", None),
            getattr(torch, "float8_e8m0fnu", None),
            getattr(torch, "float4_e2m1fn_x2", None),
        )
        if d is not None
    ],
    ids=str,
)
def test_what_our_writer_writes_is_read_back_for_every_dtype(tmp_path, dtype):
    raw = torch.arange(24, dtype=torch.uint8) * 7
    t = (raw.view(dtype) if dtype.itemsize == 1 else torch.arange(6).to(dtype)).reshape(2, -1)
    shardio.write_shard(tmp_path / "s.safetensors", {"t": t, "u": t[:1].clone()})
    got, _ = shardio.load_shard(tmp_path / "s.safetensors")
    assert got["t"].dtype == dtype and got["t"].shape == t.shape
    assert torch.equal(got["t"].view(torch.uint8), t.view(torch.uint8))
    save_file({"t": t}, str(tmp_path / "theirs.safetensors"))  # and safetensors' own file the same
    again, _ = shardio.load_shard(tmp_path / "theirs.safetensors")
    assert torch.equal(again["t"].view(torch.uint8), t.view(torch.uint8))
