"""The pre-flight's devices as CUDA and vLLM see them (issue 36, item 4): one table per rule of
aiworkbook.cuda_visible / preflight.gpu.select_visible, read through the fake NVML."""

from __future__ import annotations

import json

import pytest
from fake_nvml import DATACENTER, MIG, FakeNVML

from aiworkbook.cli import main
from aiworkbook.errors import SpecError
from aiworkbook.preflight.gpu import NoGPU, read_devices

IDLE = {**DATACENTER, "mem_used": 300 * 2**20, "processes": []}
#: four H100s with their own UUIDs (two sharing a long prefix), as nvidia-smi -L lists them
FOUR = [
    {**IDLE, "uuid": f"GPU-{u}", "bus_id": f"00000000:{18 + i:02x}:00.0"}
    for i, u in enumerate(("1a2b3c4d-0000", "5e6f7a8b-0000", "9c0d1e2f-0001", "9c0d1e2f-0002"))
]
SLICED = {**MIG, "mig": [(0, "MIG-7a7a-0", 20_000_000_000, 5_000_000), (1, "MIG-7b7b-1", 40_000_000_000, 0)]}


def _picked(profiles, env: dict[str, str], ranks: int = 1) -> list[str]:
    with FakeNVML(profiles):
        return [d.selector for d in read_devices(ranks=ranks, environ=env, name_of=lambda pid: "?")]


def _case(profiles, env, ranks, want):
    if isinstance(want, type):
        with pytest.raises(want):
            _picked(profiles, env, ranks)
    else:
        assert _picked(profiles, env, ranks) == want


@pytest.mark.parametrize(
    ("value", "ranks", "want"),
    [
        ("0,1,2,3", 1, ["0"]),  # Slurm's 4-GPU allocation, tp 1: the first
        ("0,1,2,3", 2, ["0", "1"]),  # tp 2: the first two
        ("2,3,0,1", 2, ["2", "3"]),  # in the variable's order, not NVML's: rank i on entry i
        ("3,1", 2, ["3", "1"]),
        ("0,1", 4, SpecError),  # fewer visible than tp x pp
    ],
)
def test_the_first_tp_times_pp_visible_devices(value, ranks, want):
    _case(FOUR, {"CUDA_VISIBLE_DEVICES": value}, ranks, want)


@pytest.mark.parametrize(
    ("env", "want"),
    [
        ({"CUDA_VISIBLE_DEVICES": ""}, NoGPU),  # empty: CUDA sees no GPU
        ({"CUDA_VISIBLE_DEVICES": " "}, NoGPU),
        ({"CUDA_VISIBLE_DEVICES": "", "NVIDIA_VISIBLE_DEVICES": "all"}, NoGPU),  # CUDA's wins
        ({"NVIDIA_VISIBLE_DEVICES": "none"}, NoGPU),
        ({"NVIDIA_VISIBLE_DEVICES": "void"}, NoGPU),
    ],
)
def test_empty_means_none(env, want):
    _case(FOUR, env, 1, want)


@pytest.mark.parametrize(
    ("value", "ranks", "want"),
    [
        ("1", 1, ["1"]),
        ("1,x,2", 1, ["1"]),  # CUDA stops at the first entry it cannot use...
        ("1,x,2", 2, SpecError),  # ... so only one is visible
        ("7,0", 1, NoGPU),  # no GPU 7: nothing after it counts either
        ("1,1", 1, ["1"]),
    ],
)
def test_indices_up_to_the_first_invalid_entry(value, ranks, want):
    _case(FOUR, {"CUDA_VISIBLE_DEVICES": value}, ranks, want)


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ("GPU-5e6f7a8b-0000", ["1"]),  # the whole UUID
        ("GPU-5e6f", ["1"]),  # a unique prefix, which CUDA accepts
        ("GPU-9c0d1e2f-0002", ["3"]),
        ("GPU-9c0d1e2f", NoGPU),  # a prefix of two GPUs names neither
        ("GPU-ffff", NoGPU),
        ("GPU-9c0d1e2f-0001,0", ["2"]),
    ],
)
def test_uuids_and_uuid_prefixes(value, want):
    _case(FOUR, {"CUDA_VISIBLE_DEVICES": value}, 1, want)


@pytest.mark.parametrize(
    ("env", "ranks", "want"),
    [
        ({"CUDA_VISIBLE_DEVICES": "MIG-7b7b-1"}, 1, ["1:1"]),  # the slice itself, on GPU 1
        ({"CUDA_VISIBLE_DEVICES": "MIG-7a7a"}, 1, ["1:0"]),  # a unique prefix
        ({"CUDA_VISIBLE_DEVICES": "1"}, 1, SpecError),  # a whole GPU in MIG mode runs no CUDA process
        ({"CUDA_VISIBLE_DEVICES": "MIG-7b7b-1,MIG-7a7a-0"}, 2, ["1:1", "1:0"]),
    ],
)
def test_mig_uuids(env, ranks, want):
    _case([IDLE, SLICED], env, ranks, want)


@pytest.mark.parametrize(
    ("env", "ranks", "want"),
    [
        ({"NVIDIA_VISIBLE_DEVICES": "MIG-7b7b-1"}, 1, ["1:1"]),  # a Kubernetes MIG pod
        ({"NVIDIA_VISIBLE_DEVICES": "MIG-7b7b-1", "CUDA_VISIBLE_DEVICES": "0"}, 1, ["0"]),  # CUDA's first
        ({"NVIDIA_VISIBLE_DEVICES": "all"}, 2, ["0", "1:0"]),  # every device, a MIG GPU as its slices
        ({}, 3, ["0", "1:0", "1:1"]),  # neither set: the same
        ({}, 4, SpecError),
    ],
)
def test_nvidia_visible_devices_when_cudas_is_unset(env, ranks, want):
    _case([IDLE, SLICED], env, ranks, want)


def test_slurm_is_reported_and_the_cli_reads_tp_devices(monkeypatch, capsys):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    monkeypatch.setenv("SLURM_JOB_GPUS", "4,5,6,7")  # host numbering; CUDA reads its own variable
    monkeypatch.delenv("SLURM_STEP_GPUS", raising=False)
    with FakeNVML(FOUR):
        code = main(
            [
                "preflight",
                "vllm",
                "llama-3-8b",
                "--tensor-parallel-size",
                "2",
                "--max-model-len",
                "4096",
                "--json",
            ]
        )
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and [d["device"] for d in doc["devices"]] == ["0", "1"]
    vis = doc["visibility"]
    assert vis["variable"] == "CUDA_VISIBLE_DEVICES" and vis["slurm"] == {"SLURM_JOB_GPUS": "4,5,6,7"}


def test_an_empty_cuda_visible_devices_is_no_gpu_for_the_cli(monkeypatch, capsys):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with FakeNVML(FOUR):
        code = main(["preflight", "vllm", "llama-3-8b", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and doc["gpu_found"] is False and "no GPU visible to CUDA" in doc["reasons"][0]


def test_a_uuid_prefix_gets_its_nvml_baseline(monkeypatch):
    """The VRAM proof's device-level baseline (proofs.device.nvml_reading) finds the GPU a prefix names;
    NVML's own lookup by UUID wants the whole UUID."""
    from aiworkbook.proofs.device import nvml_reading

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-5e6f")
    with FakeNVML(FOUR):
        assert nvml_reading()["uuid"] == "GPU-5e6f7a8b-0000"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-9c0d1e2f")  # two GPUs: no guess
    with FakeNVML(FOUR):
        assert nvml_reading() is None


@pytest.mark.parametrize(
    ("tp", "pp", "nccl", "custom_ar"),
    [(1, 1, 0, 0), (2, 1, 1, 1), (4, 1, 1, 1), (3, 1, 1, 0), (8, 1, 1, 1), (1, 2, 1, 0), (2, 2, 2, 1)],
)
def test_memory_outside_torch_before_vllms_snapshot_grows_with_parallelism(tp, pp, nccl, custom_ar):
    """NCCL per parallel group of more than one rank, custom all-reduce at tp 2/4/6/8 (vLLM's
    CustomAllreduce._SUPPORTED_WORLD_SIZES), the CUDA context always; the check subtracts all of it."""
    from aiworkbook.preflight.vllm import (
        CUSTOM_ALL_REDUCE_BYTES,
        NCCL_COMMUNICATOR_BYTES,
        before_snapshot,
        preflight,
    )
    from aiworkbook.sizing.memory import CUDA_CONTEXT_BYTES
    from aiworkbook.sizing.vllm import VllmSettings
    from aiworkbook.specs import load_model

    held = before_snapshot(tp, pp)
    want = CUDA_CONTEXT_BYTES + nccl * NCCL_COMMUNICATOR_BYTES + custom_ar * CUSTOM_ALL_REDUCE_BYTES
    assert held["total_bytes"] == want
    with FakeNVML(FOUR * 2):
        devs = read_devices([str(i) for i in range(tp * pp)], name_of=lambda pid: "?")
    s = VllmSettings(tensor_parallel_size=tp, pipeline_parallel_size=pp, max_model_len=4096)
    pf = preflight(load_model("llama-3-8b"), devs, s)
    assert all(c.free_at_start_bytes == c.device.free_bytes - want for c in pf.devices)
    assert pf.to_dict()["settings"]["before_snapshot"]["source"].startswith("estimate")
