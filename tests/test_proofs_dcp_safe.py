"""A DCP checkpoint in a folder someone else can write runs none of its pickles (proofs/dcp_safe.py)."""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest
import torch
from torch.distributed.checkpoint.metadata import BytesStorageMetadata

from aiworkbook.errors import SpecError
from aiworkbook.proofs import checkpoint as C
from aiworkbook.proofs import dcp_safe


class _Plant:
    """Unpickles as a call to open(marker, 'w'): what a hostile .metadata could do."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def _saved(root, fmt="dcp"):
    C.save_checkpoint(root, {"w": torch.arange(12.0).reshape(3, 4)}, fmt, 1)
    return C.latest(root, fmt)


@pytest.mark.parametrize("fmt", ["dcp", "dcp-async"])
def test_a_checkpoint_dcp_wrote_restores_through_the_safe_reader(tmp_path, fmt):
    p = _saved(tmp_path / "ck", fmt)
    assert list(dcp_safe.read_metadata(str(p)).state_dict_metadata) == ["w"]
    assert C.restore_latest(tmp_path / "ck", fmt)[1] == []


def test_a_planted_metadata_pickle_is_refused_before_it_runs(tmp_path):
    p = _saved(tmp_path / "ck")
    marker = tmp_path / "PWNED"
    (p / ".metadata").write_bytes(pickle.dumps(_Plant(marker)))
    with pytest.raises(SpecError, match=r"open is not a class DCP writes"):
        C.load_checkpoint(p, "dcp")
    assert not marker.exists()


def test_metadata_declaring_bytes_is_refused(tmp_path):
    """DCP's default planner torch.loads a bytes entry with weights_only=False: only tensors pass."""
    p = _saved(tmp_path / "ck")
    md = dcp_safe.read_metadata(str(p))
    md.state_dict_metadata["w"] = BytesStorageMetadata()
    (p / ".metadata").write_bytes(pickle.dumps(md))
    with pytest.raises(SpecError, match="tensors only .not tensors: w"):
        C.load_checkpoint(p, "dcp")


def test_the_restore_proof_refuses_a_planted_checkpoint_with_exit_2(tmp_path):
    """The CLI case: a kept checkpoint folder in a shared --dir whose .metadata was replaced."""
    p = _saved(tmp_path / "aiworkbook-checkpoint-20260101T000000Z-00000000")
    marker = tmp_path / "PWNED"
    (p / ".metadata").write_bytes(pickle.dumps(_Plant(marker)))
    cmd = [
        sys.executable,
        "-m",
        "aiworkbook",
        "prove",
        "restore",
        "--dir",
        str(tmp_path),
        "--format",
        "dcp",
        "--quick",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "not a class DCP writes" in out.stderr and not marker.exists()
