"""`prove restore --dir` on a checkpoint someone else wrote, made hostile or corrupt after a real save:
every malformed manifest or shard is one sentence naming the folder or file and exit 2 (never an
internal error, a recursion message or an allocation of a typed size); bytes that read back different
from what was saved are exit 1 with "integrity failed"."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
import torch

from aiworkbook.cli import main
from aiworkbook.proofs.checkpoint import MANIFEST, save_checkpoint

pytestmark = pytest.mark.timeout(120)


def _saved(root: Path, fmt: str) -> Path:
    state = {"w": torch.arange(64, dtype=torch.float32), "b": torch.ones(8, dtype=torch.bfloat16)}
    return Path(save_checkpoint(root, state, fmt, 0)["path"])


def _restore(root: Path, fmt: str, capsys) -> tuple[int, str]:
    rc = main(["prove", "restore", "--dir", str(root), "--format", fmt, "--trials", "1"])
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err and "nested too deeply" not in err, err
    lines = [x for x in err.strip().splitlines() if x.startswith("error:")]
    assert len(lines) == 1, err
    return rc, lines[0]


MANIFESTS = {
    "a JSON list": "[]",
    "an infinite dimension": '{"w": {"dtype": "float32", "shape": [Infinity], "blake2b": "x"}}',
    "a dimension past 2^63": json.dumps({"w": {"dtype": "float32", "shape": [0, 2**70], "blake2b": "x"}}),
    "a dimension as text": json.dumps({"w": {"dtype": "float32", "shape": "12", "blake2b": "x"}}),
    "a dimension as a bool": json.dumps({"w": {"dtype": "float32", "shape": [True], "blake2b": "x"}}),
    "an attribute for a dtype": json.dumps({"w": {"dtype": "__class__", "shape": [1], "blake2b": "x"}}),
    "more bytes than the folder": json.dumps({"w": {"dtype": "float32", "shape": [2**40], "blake2b": "x"}}),
    "nested 100,000 deep": "[" * 100_000 + "]" * 100_000,
    "not UTF-8": b"\xff\xfe{}",
}


@pytest.mark.parametrize("case", sorted(MANIFESTS))
@pytest.mark.parametrize("fmt", ["safetensors", "dcp"])
def test_a_malformed_manifest_is_one_sentence_and_exit_2(tmp_path, capsys, case, fmt):
    step = _saved(tmp_path, fmt)
    body = MANIFESTS[case]
    (step / MANIFEST).write_bytes(body if isinstance(body, bytes) else body.encode())
    rc, line = _restore(tmp_path, fmt, capsys)
    assert rc == 2 and MANIFEST in line and str(step) in line, line


def test_a_pickle_torch_refuses_is_one_sentence_and_exit_2(tmp_path, capsys):
    step = _saved(tmp_path, "torch")
    shard = next(step.glob("shard-*"))
    shard.unlink()
    torch.save({"w": Path("/etc/passwd")}, shard)  # a global weights_only blocks
    rc, line = _restore(tmp_path, "torch", capsys)
    assert rc == 2 and str(shard) in line and "weights_only" in line, line


def test_a_truncated_torch_shard_is_one_sentence_and_exit_2(tmp_path, capsys):
    step = _saved(tmp_path, "torch")
    shard = next(step.glob("shard-*"))
    shard.write_bytes(shard.read_bytes()[:100])
    rc, line = _restore(tmp_path, "torch", capsys)
    assert rc == 2 and str(shard) in line, line


def test_a_safetensors_header_safetensors_refuses_is_exit_2(tmp_path, capsys):
    step = _saved(tmp_path, "safetensors")
    shard = next(step.glob("shard-*"))
    raw = shard.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + n])
    header["w"]["shape"] = "64"  # safetensors: "invalid type: string"
    text = json.dumps(header).encode()
    shard.write_bytes(struct.pack("<Q", len(text)) + text + raw[8 + n :])
    rc, line = _restore(tmp_path, "safetensors", capsys)
    assert rc == 2 and "safetensors file" in line and "shape is not a list" in line, line


@pytest.mark.parametrize("fmt", ["safetensors", "torch"])
def test_bytes_that_read_back_different_are_integrity_failed_exit_1(tmp_path, capsys, fmt):
    step = _saved(tmp_path, fmt)
    shard = next(step.glob("shard-*"))
    raw = bytearray(shard.read_bytes())
    if fmt == "safetensors":
        raw[-1] ^= 0xFF  # the last data byte: the header still reads
    else:  # torch's zip keeps each tensor's bytes stored: flip one inside w's data (arange 1.0 -> ...)
        at = raw.find(struct.pack("<f", 63.0))
        assert at > 0
        raw[at + 3] ^= 0x01
    shard.write_bytes(bytes(raw))
    rc, line = _restore(tmp_path, fmt, capsys)
    assert rc == 1 and "integrity failed for " + fmt in line, line
