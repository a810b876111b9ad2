"""`aiworkbook prove ...` on the CPU: output, JSON file, bad input."""

from __future__ import annotations

import pytest

from aiworkbook.cli import main
from aiworkbook.proofs.device import cuda_available
from aiworkbook.proofs.result import ProofResult


def test_prove_vram_cli_writes_json(tmp_path, capsys):
    out = tmp_path / "v.json"
    assert (
        main(["prove", "vram", "tiny-llama", "--quick", "--device", "cpu", "--seq", "32", "--json", str(out)])
        == 0
    )
    text = capsys.readouterr().out
    assert "[pass] vram on cpu" in text and "optimizer" in text
    assert ProofResult.load(out).proof == "vram"


def test_prove_kv_cli(capsys):
    assert main(["prove", "kv", "tiny-llama", "--quick", "--device", "cpu"]) == 0
    assert "capacity at" in capsys.readouterr().out


@pytest.mark.skipif(cuda_available(), reason="checks the no-CUDA error path")
def test_prove_cuda_without_gpu_is_a_clean_error(capsys):
    assert main(["prove", "vram", "tiny-llama", "--device", "cuda"]) == 2
    assert "error: field 'device'" in capsys.readouterr().err


def test_unknown_model_is_a_clean_error(capsys):
    assert main(["prove", "vram", "no-such-model", "--quick"]) == 2
    assert "error:" in capsys.readouterr().err
