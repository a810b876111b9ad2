"""`fit`/`size` with vLLM flags size inference (issue 23, item 6): any vLLM flag or a serving engine
implies --mode infer; a training mode given with them is refused (exit 2, naming the conflict)."""

from __future__ import annotations

import json

import pytest

from aiworkbook.cli import main


def test_fit_with_vllm_flags_sizes_inference_and_prints_vllms_figures(capsys):
    assert main(["fit", "llama-3-8b", "--engine", "vllm", "--max-model-len", "8192", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["kv_cache_tokens"] > 0 and "vllm" in doc  # vLLM's start-up arithmetic ran
    assert doc.get("max_context") is not None  # an inference report, not a training one


@pytest.mark.parametrize(
    "args",
    [
        ["--max-model-len", "8192"],
        ["--engine", "vllm"],
        ["--engine", "vllm", "--gpu-memory-utilization", "0.8"],
        ["--engine", "vllm", "--engine-version", "v0"],
    ],
)
def test_a_vllm_flag_or_engine_implies_infer(capsys, args):
    assert main(["size", "llama-3-8b", "--json", *args]) == 0
    assert json.loads(capsys.readouterr().out)["workload"]["mode"] == "infer"


def test_no_vllm_flag_still_means_train(capsys):
    assert main(["size", "llama-3-8b", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["workload"]["mode"] == "train"


@pytest.mark.parametrize("mode", ["train", "lora"])
def test_a_training_mode_with_vllm_flags_is_refused(capsys, mode):
    assert main(["fit", "llama-3-8b", "--mode", mode, "--engine", "vllm", "--max-model-len", "8192"]) == 2
    err = capsys.readouterr().err
    assert "mode" in err and "--engine vllm" in err and "--max-model-len" in err and "Traceback" not in err


def test_explicit_infer_with_vllm_flags_is_fine(capsys):
    assert main(["fit", "llama-3-8b", "--mode", "infer", "--engine", "vllm", "--max-model-len", "4096"]) == 0
    assert "vLLM start-up" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("flag", "value", "field"),
    [
        ("--quantization", "bogus", "--quantization"),
        ("--dtype", "bogus", "--dtype"),
        ("--block-size", "7", "--block-size"),
        ("--engine-version", "zz", "--engine-version"),
        ("--engine-version", "0.6.x", "--engine-version"),  # only 0.6.4 on is modelled: not every 0.6
        ("--kv-cache-dtype", "int3", "--kv-cache-dtype"),
    ],
)
@pytest.mark.parametrize("gpu", [[], ["--gpu", "H100-SXM"]])
def test_a_bad_vllm_flag_is_refused_with_or_without_a_gpu(capsys, flag, value, field, gpu):
    """Refused naming the option as typed (not the setting's Python name), exit 2, no traceback."""
    assert main(["size", "llama-3-8b", "--engine", "vllm", flag, value, *gpu]) == 2
    err = capsys.readouterr().err
    assert f"'{field}'" in err and "allowed" in err and "Traceback" not in err


def test_a_vllm_flag_without_the_engine_is_checked_too(capsys):
    assert main(["size", "llama-3-8b", "--block-size", "7"]) == 2
    assert "'--block-size'" in capsys.readouterr().err


def test_the_release_the_error_offers_is_accepted(capsys):
    """The refusal lists "0.19.x" among the releases: typed back, it sizes with 0.19's arithmetic."""
    assert main(["size", "llama-3-8b", "--engine", "vllm", "--engine-version", "zz"]) == 2
    offered = capsys.readouterr().err.split("allowed: ")[1]
    assert "0.19.x" in offered
    assert main(["fit", "llama-3-8b", "--engine", "vllm", "--engine-version", "0.19.x"]) == 0
    assert "estimated for vLLM 0.19.x (arithmetic v1-019)" in capsys.readouterr().out


def test_fit_refuses_an_unknown_device(capsys):
    assert main(["fit", "llama-3-8b", "--device", "tpu"]) == 2
    err = capsys.readouterr().err
    assert "'device'" in err and "cuda, cpu" in err


def test_the_vllm_section_says_it_is_an_estimate_and_whose_arithmetic(capsys):
    assert main(["fit", "llama-3-8b", "--engine", "vllm", "--engine-version", "v1-019"]) == 0
    out = capsys.readouterr().out
    assert "vLLM start-up, estimated for arithmetic v1-019 (vLLM 0.19.x)" in out
    assert main(["fit", "llama-3-8b", "--engine", "vllm", "--engine-version", "0.10.2"]) == 0
    assert "estimated for vLLM 0.10.2 (arithmetic v1)" in capsys.readouterr().out  # the release, named
    assert main(["size", "llama-3-8b", "--engine", "vllm", "--gpu", "H100-SXM"]) == 0
    out = capsys.readouterr().out  # the default: the newest release modelled, named
    assert (
        "estimated for vLLM 0.19.x (arithmetic v1-019)" in out
        and "engine_version                 0.19" in out
    )
