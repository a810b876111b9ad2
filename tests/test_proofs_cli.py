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


@pytest.mark.parametrize(
    "argv, field",
    [
        (["prove", "vram", "tiny-llama", "--quick", "--device", "cpu", "--batch", "0"], "batch"),
        (["prove", "vram", "tiny-llama", "--quick", "--device", "cpu", "--seq", "0"], "seq_len"),
        (["prove", "kv", "bert-base-uncased", "--quick", "--device", "cpu"], "model"),
    ],
)
def test_bad_shapes_are_refused_not_replaced(argv, field, monkeypatch, capsys):
    """--batch 0 --seq 0 used to run 1 x 128 and pass; an encoder complained about new_tokens."""
    from aiworkbook.proofs import kv, vram

    def never(*a, **k):
        raise AssertionError("the proof trained or generated before rejecting its input")

    monkeypatch.setattr(vram, "_train", never)
    monkeypatch.setattr(kv, "DecoderModel", never)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"field '{field}'" in err and "Traceback" not in err


def test_kv_of_an_encoder_says_it_is_not_a_decoder():
    from aiworkbook.errors import SpecError
    from aiworkbook.proofs.kv import prove_kv

    with pytest.raises(SpecError, match="decoder") as exc:
        prove_kv("bert-base-uncased", device="cpu", quick=True)
    assert exc.value.field == "model" and "encoder-only" in str(exc.value)


@pytest.mark.parametrize(
    "proof, option",
    [("vram", "--json"), ("kv", "--json"), ("roofline", "--json"), ("roofline", "--node-out")],
)
def test_unwritable_output_fails_before_the_proof_runs(proof, option, tmp_path, monkeypatch, capsys):
    from aiworkbook.proofs import kv, roofline, vram

    def never(*a, **k):
        raise AssertionError("the proof ran before its output path was checked")

    monkeypatch.setattr(vram, "prove_vram", never)
    monkeypatch.setattr(kv, "prove_kv", never)
    monkeypatch.setattr(roofline, "prove_roofline", never)
    assert main(["prove", proof, "tiny-llama", "--quick", "--device", "cpu", option, str(tmp_path)]) == 2
    assert "not a folder" in capsys.readouterr().err
