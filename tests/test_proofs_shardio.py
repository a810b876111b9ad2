"""Checkpoint shards (proofs/shardio.py): standard safetensors files both ways, bit for bit, a new file
only, fsync at the end of a save, a header checked before any tensor is made, and a restore that did
not read its bytes from storage is never called cold."""

from __future__ import annotations

import json
import os
import struct
import sys
import threading
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save, save_file

from aiworkbook.errors import SpecError
from aiworkbook.proofs import checkpoint as C
from aiworkbook.proofs import fsio, shardio


def _state() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    base = torch.randn(64, 48, generator=g)
    return {
        "f32": torch.randn(1000, generator=g),
        "f64": torch.randn(7, 3, generator=g, dtype=torch.float64),
        "f16": torch.randn(33, generator=g).half(),
        "bf16": torch.randn(5, 9, generator=g).bfloat16(),
        "i64": torch.randint(-(2**40), 2**40, (11,), generator=g),
        "i32": torch.randint(-(2**30), 2**30, (3, 3), generator=g, dtype=torch.int32),
        "i16": torch.randint(-1000, 1000, (5,), generator=g, dtype=torch.int16),
        "i8": torch.randint(-100, 100, (13,), generator=g, dtype=torch.int8),
        "u8": torch.randint(0, 255, (17,), generator=g, dtype=torch.uint8),
        "bool": torch.rand(9, generator=g) > 0.5,
        "scalar": torch.tensor(2.5),
        "empty": torch.empty(0, 4),
        "transposed": base.t(),  # non-contiguous
        "strided": base[::3, 1::2],  # non-contiguous, with an offset
        "nan": torch.tensor([float("nan"), -0.0, float("inf")]),
    }


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit for bit: dtype, shape and every byte (NaN and -0.0 included)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return bytes(a.contiguous().reshape(-1).view(torch.uint8).numpy()) == bytes(
        b.contiguous().reshape(-1).view(torch.uint8).numpy()
    )


def test_a_shard_round_trips_bit_for_bit_through_both_readers(tmp_path):
    state = _state()
    path = tmp_path / "s.safetensors"
    shardio.write_shard(path, state)
    ours, populated = shardio.load_shard(path)
    theirs = load_file(str(path))  # the header is safetensors' own: its reader takes the file
    assert populated == sys.platform.startswith("linux")
    assert set(ours) == set(theirs) == set(state)
    for k, t in state.items():
        assert _same(ours[k], t) and _same(theirs[k], t), k
    ours["f32"][0] += 1.0  # a private mapping: the restored tensors are writable, the file is not changed
    assert _same(load_file(str(path))["f32"], state["f32"])


def test_a_file_safetensors_wrote_with_metadata_is_read(tmp_path):
    state = {"a": torch.arange(10, dtype=torch.float32), "b": torch.ones(3, dtype=torch.bfloat16)}
    path = tmp_path / "x.safetensors"
    path.write_bytes(save(state, metadata={"format": "pt"}))
    got, _ = shardio.load_shard(path)
    assert set(got) == {"a", "b"} and all(_same(got[k], state[k]) for k in state)


def test_an_unaligned_file_from_another_writer_is_copied_not_misread(tmp_path):
    half = torch.tensor([1.5], dtype=torch.float16)
    f32 = torch.tensor([3.25, -1.0], dtype=torch.float32)
    header = {
        "h": {"dtype": "F16", "shape": [1], "data_offsets": [0, 2]},
        "f": {"dtype": "F32", "shape": [2], "data_offsets": [2, 10]},
    }
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    data = bytes(half.view(torch.uint8).numpy()) + bytes(f32.view(torch.uint8).numpy())
    path = tmp_path / "u.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)
    got, _ = shardio.load_shard(path)
    assert _same(got["h"], half) and _same(got["f"], f32)


def _every_dtype() -> dict[str, torch.Tensor]:
    """_state() plus each dtype safetensors and this torch share, names that need escaping, and
    several tensors per dtype so that the order by dtype, then name, is exercised."""
    g = torch.Generator().manual_seed(5)
    out = dict(_state())
    for i, (name, dt) in enumerate(shardio.DTYPES.items()):
        raw = torch.randint(0, 256, (3 + i,), generator=g, dtype=torch.uint8)
        n = (len(raw) // dt.itemsize) * dt.itemsize or dt.itemsize
        raw = torch.randint(0, 256, (n,), generator=g, dtype=torch.uint8)
        out[f"z.{name}"] = raw.view(dt) if dt != torch.bool else raw % 2 == 1
        out[f"a.{name}"] = out[f"z.{name}"][:1].clone()
    out['quote"back\\slash\tctl\x01é'] = torch.ones(2)
    out["Ω.last"] = torch.zeros(1, dtype=torch.int16)
    return out


@pytest.mark.parametrize(
    "state",
    [_every_dtype(), {}, {"empty": torch.empty(0)}, {"scalar": torch.tensor(7, dtype=torch.int8)}],
    ids=["every-dtype", "no-tensors", "empty", "scalar"],
)
def test_the_writer_writes_the_bytes_save_file_writes(tmp_path, state):
    ours, theirs = tmp_path / "ours.safetensors", tmp_path / "theirs.safetensors"
    shardio.write_shard(ours, state)
    save_file({k: t.contiguous() for k, t in state.items()}, str(theirs))
    assert ours.read_bytes() == theirs.read_bytes()
    back = load_file(str(ours))
    assert set(back) == set(state) and all(_same(back[k], t) for k, t in state.items())


def test_a_shard_larger_than_one_write_is_written_in_pieces_with_writeback_started(tmp_path, monkeypatch):
    monkeypatch.setattr(shardio, "WRITEBACK_EVERY", 4096)
    started: list[tuple[int, int]] = []
    real = shardio._writeback
    monkeypatch.setattr(shardio, "_writeback", lambda fd, a, n: started.append((a, n)) or real(fd, a, n))
    writes: list[int] = []
    write = os.write
    monkeypatch.setattr(os, "write", lambda fd, b: writes.append(len(b)) or write(fd, b))
    g = torch.Generator().manual_seed(6)
    state = {"big": torch.randn(10_000, generator=g), "small": torch.randn(3, generator=g).half()}
    path, ref = tmp_path / "big.safetensors", tmp_path / "ref.safetensors"
    shardio.write_shard(path, state)
    assert max(writes) <= 4096 and sum(writes) == path.stat().st_size
    # writeback started along the way, each range after the last, and for the rest at the end
    assert len(started) >= 10 and started[-1][1] == 0
    assert all(b[0] == a[0] + a[1] for a, b in zip(started, started[1:], strict=False))
    save_file(state, str(ref))
    assert path.read_bytes() == ref.read_bytes()


def test_the_writer_never_fsyncs_and_preallocates_where_the_kernel_offers_it(tmp_path, monkeypatch):
    synced: list[int] = []
    monkeypatch.setattr(os, "fsync", synced.append)
    monkeypatch.setattr(os, "fdatasync", synced.append)
    given: list[bool] = []
    real = shardio.preallocate
    monkeypatch.setattr(shardio, "preallocate", lambda fd, n: given.append(real(fd, n)) or given[-1])
    path = tmp_path / "s.safetensors"
    shardio.write_shard(path, {"a": torch.ones(4096)})
    assert synced == []  # durability is the publish's fsync, once per file (test above)
    assert len(given) == 1
    if sys.platform.startswith("linux") and fsio.fs_type(tmp_path) in ("ext4", "xfs", "btrfs", "tmpfs"):
        assert given == [True]  # file systems that implement fallocate(2)
    assert path.stat().st_size == 8 + int.from_bytes(path.read_bytes()[:8], "little") + 4 * 4096


def test_one_large_shard_reports_and_cancels_inside_the_shard(tmp_path, monkeypatch):
    from aiworkbook.proofs.control import Cancelled, Control

    monkeypatch.setattr(shardio, "WRITEBACK_EVERY", 2**18)
    state = C.synthetic_state(3 * 2**20)
    seen: list[tuple[int, int, str]] = []
    s = C.save_checkpoint(
        tmp_path / "a", state, "safetensors", 0, control=Control(progress=lambda *a: seen.append(a))
    )
    assert [p.name for p in Path(s["path"]).glob("shard-*")] == ["shard-00000.safetensors"]
    done = [d for d, _t, _m in seen]
    assert len(done) >= 10 and done == sorted(done) and seen[-1][1] == C.state_bytes(state)
    assert all(m == "safetensors: shard 1/1" for _d, _t, m in seen)

    ev = threading.Event()

    def cancel_midway(done: int, total: int, msg: str) -> None:
        if done > total // 2:
            ev.set()  # as a viewer's Cancel button does, halfway through the only shard

    with pytest.raises(Cancelled):
        C.save_checkpoint(
            tmp_path / "b", state, "safetensors", 0, control=Control(progress=cancel_midway, cancel=ev)
        )
    assert not any((tmp_path / "b" / "safetensors").iterdir())  # the half-written shard's folder is gone


def test_a_dtype_without_a_known_order_is_written_by_save_file(tmp_path):
    e8 = getattr(torch, "float8_e8m0fnu", None)
    if e8 is None:
        pytest.skip("this torch has no float8_e8m0fnu: every dtype it has is in shardio.DTYPES")
    state = {"odd": torch.ones(4).to(e8), "b": torch.ones(2)}
    ours, theirs = tmp_path / "ours.safetensors", tmp_path / "theirs.safetensors"
    shardio.write_shard(ours, state)
    save_file(state, str(theirs))
    assert ours.read_bytes() == theirs.read_bytes()
    with pytest.raises(FileExistsError):
        shardio.write_shard(ours, state)


def test_an_existing_file_is_refused_and_left_as_it_was(tmp_path):
    path = tmp_path / "input.safetensors"
    path.write_bytes(b"the user's bytes")
    for state in ({"a": torch.ones(3)}, {"odd": torch.ones(1, dtype=torch.complex128)}):  # both writers
        with pytest.raises(FileExistsError):
            shardio.write_shard(path, state)
    assert path.read_bytes() == b"the user's bytes"


def _entry(dtype="F32", shape=(2,), offsets=(0, 8)):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


@pytest.mark.parametrize(
    ("blob", "why"),
    [
        (b"\x01\x02", "shorter than"),
        (struct.pack("<Q", 10**12) + b"{}", "over safetensors' 100,000,000"),
        (struct.pack("<Q", 100) + b"{}", "a header of 100 bytes in a file of 10"),
        (struct.pack("<Q", 4) + b"nope", "not JSON"),
        (struct.pack("<Q", 2) + b"[]", "not a JSON object"),
        ({"a": _entry(offsets=(0, 4096))}, "holds 4096 bytes"),
        ({"a": _entry(offsets=(8, 16))}, "do not follow"),
        ({"a": _entry(offsets=(0, 4), shape=(1,))}, "cover 4 of the 8 data bytes"),
        ({"a": _entry(shape=(3,))}, "holds 8 bytes"),
        ({"a": _entry(dtype="Q7")}, "no dtype safetensors names"),
        ({"a": {"dtype": "F32"}}, "shape is not a list"),
    ],
)
def test_a_bad_header_is_one_clear_error(tmp_path, blob, why):
    if isinstance(blob, dict):
        raw = json.dumps(blob).encode()
        blob = struct.pack("<Q", len(raw)) + raw + bytes(8)
    path = tmp_path / "bad.safetensors"
    path.write_bytes(blob)
    with pytest.raises(SpecError, match=why) as e:
        shardio.load_shard(path)
    assert e.value.field == "dir" and "\n" not in str(e.value)


def test_without_populate_the_loader_touches_and_still_round_trips(tmp_path, monkeypatch):
    state = {k: v for k, v in _state().items() if k in ("f32", "bf16", "transposed")}
    s = C.save_checkpoint(tmp_path, state, "safetensors", 1)
    monkeypatch.setattr(shardio, "MADV_POPULATE_READ", -1)  # madvise refuses it: as on an older kernel
    touched: list[int] = []
    real = C.touch
    monkeypatch.setattr(C, "touch", lambda t: touched.append(1) or real(t))
    loaded = C.load_checkpoint(s["path"], "safetensors")
    assert len(touched) == len(state) and all(_same(loaded[k], v) for k, v in state.items())


def test_a_save_ends_in_fsync_of_every_shard_the_manifest_and_the_folders(tmp_path, monkeypatch):
    synced: list[str] = []
    real = os.fsync

    def counting(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fsync", counting)
    split = C.shards
    monkeypatch.setattr(C, "shards", lambda state, _bytes: split(state, 2**20))
    state = C.synthetic_state(3 * 2**20)
    s = C.save_checkpoint(tmp_path, state, "safetensors", 4)
    shards = sorted(p.name for p in (tmp_path / "safetensors" / "step-4").glob("shard-*"))
    assert len(shards) >= 3
    names = [os.path.basename(p) for p in synced]
    assert all(n in names for n in [*shards, C.MANIFEST])
    assert str(tmp_path / "safetensors") in synced  # the folder the step was renamed into
    assert any(fsio.TMP_PREFIX in n for n in names)  # the step folder itself, before its rename
    # each shard once, when the folder is published: no wait for the disk between shards
    assert [names.count(n) for n in shards] == [1] * len(shards)
    # the manifest too: written plainly into the unpublished folder, no temp file fsynced of its own
    assert names.count(C.MANIFEST) == 1 and not any(n.startswith(f".{C.MANIFEST}") for n in names)
    assert C.verify(C.load_checkpoint(s["path"], "safetensors"), C.make_manifest(state)) == []


def test_writeback_is_started_where_the_kernel_offers_it(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 4096)
    assert shardio.start_writeback(path) is sys.platform.startswith("linux")


def test_a_restore_that_did_not_read_from_storage_is_not_cold(tmp_path, monkeypatch):
    state = C.synthetic_state(2**20)
    man = C.make_manifest(state)
    s = C.save_checkpoint(tmp_path, state, "safetensors", 0, manifest=man)
    monkeypatch.setattr(fsio, "drop_cache", lambda path: (True, ""))  # says cold...
    monkeypatch.setattr(fsio, "storage_read_bytes", lambda: 1000)  # ...but nothing came from storage
    seconds, bad, (cold, why) = C.timed_restore(s["path"], "safetensors", man)
    assert bad == [] and not cold and "came from storage" in why
    monkeypatch.setattr(fsio, "storage_read_bytes", lambda: None)  # not counted here: drop_cache's word
    assert C.timed_restore(s["path"], "safetensors", man)[2] == (True, "")


@pytest.mark.parametrize("reader", C.READERS)
def test_both_readers_restore_cold_and_verify(tmp_path, reader):
    state = C.synthetic_state(2 * 2**20, seed=4)
    man = C.make_manifest(state)
    s = C.save_checkpoint(tmp_path, state, "safetensors", 0, manifest=man)
    seconds, bad, _cold = C.timed_restore(s["path"], "safetensors", man, reader=reader)
    assert seconds > 0 and bad == []


def test_an_unknown_reader_is_a_spec_error(tmp_path):
    with pytest.raises(SpecError, match="reader"):
        C.load_checkpoint(tmp_path, "safetensors", reader="fast")
