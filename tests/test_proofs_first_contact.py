"""What would break on a first real GPU run, mended and checked on the CPU (issue 23, item 3): the second
cuBLAS workspace of backward's thread, the dataload copy that never synchronised, bf16 on GPUs without
it, MIG UUIDs, and the throttle flag of GPUs this process cannot see."""

from __future__ import annotations

import types

import pytest

from aiworkbook.proofs import environment as E
from aiworkbook.proofs import flags as F
from aiworkbook.sizing import Workload
from aiworkbook.sizing.memory import CUBLAS_WORKSPACE_BYTES, memory_breakdown
from aiworkbook.specs import load_model

torch = pytest.importorskip("torch")

from aiworkbook.proofs import device as D  # noqa: E402


def test_training_counts_backward_threads_cublas_workspace_inference_one():
    spec = load_model("tiny-llama")
    train = memory_breakdown(spec, Workload(mode="train", seq_len=64, optimizer_impl="fused"))
    infer = memory_breakdown(spec, Workload(mode="infer", seq_len=64))
    assert "64.00 MiB cuBLAS (2 handles" in train.formulas["workspace"]
    assert (
        infer.formulas["workspace"].startswith("32.00 MiB cuBLAS")
        and "handles" not in infer.formulas["workspace"]
    )
    assert infer.workspace < 2 * CUBLAS_WORKSPACE_BYTES <= train.workspace


def test_dataload_sleep_step_waits_for_the_non_blocking_copy(monkeypatch):
    from aiworkbook.proofs import dataload

    order = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: order.append("sync"))
    monkeypatch.setattr(dataload.time, "sleep", lambda s: order.append("sleep"))
    step = dataload._Step("sleep", 0.0, 16, "cuda")
    order.clear()
    step(torch.zeros(2, 16, dtype=torch.uint8))
    assert order == ["sleep", "sync"]  # the copy overlaps the sleep, and the step ends when it has landed
    cpu = dataload._Step("sleep", 0.0, 16, "cpu")
    order.clear()
    cpu(torch.zeros(2, 16, dtype=torch.uint8))
    assert order == ["sleep"]


def _fake_cuda(monkeypatch, *, bf16: bool, name="Tesla V100-SXM2-32GB"):
    monkeypatch.setattr(
        torch.cuda, "is_bf16_supported", lambda including_emulation=True: bf16 or including_emulation
    )
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=None: name)


def test_half_dtype_falls_back_to_fp16_without_native_bf16(monkeypatch):
    _fake_cuda(monkeypatch, bf16=False)
    half, why = D.half_dtype("cuda")
    assert half == "fp16" and "V100" in why  # torch's default would say yes (emulated): not asked
    _fake_cuda(monkeypatch, bf16=True, name="NVIDIA H200")
    assert D.half_dtype("cuda") == ("bf16", None)
    assert D.half_dtype("cpu") == ("bf16", None)
    assert F.BF16_UNSUPPORTED in F.FLAGS


def test_vram_and_kv_defaults_fall_back_and_flag(monkeypatch):
    from aiworkbook.proofs import kv, vram

    _fake_cuda(monkeypatch, bf16=False)
    monkeypatch.setattr(D, "cuda_available", lambda: True)
    monkeypatch.setattr(D, "_cuda_name", lambda: "Tesla V100 (fake)")
    for mod in (vram, kv):
        monkeypatch.setattr(mod, "resolve_device", lambda d: D.DeviceChoice("cuda", d, "fake"))
    st = vram._prepare("tiny-llama", device="cuda", quick=True, budget_bytes=2**40, check_fit=False)
    assert st.w.precision == "fp16" and F.BF16_UNSUPPORTED in st.flags
    given = vram._prepare(
        "tiny-llama", device="cuda", quick=True, precision="bf16", budget_bytes=2**40, check_fit=False
    )
    assert given.w.precision == "bf16"  # asked for: kept (torch emulates it)
    k = kv._prepare("tiny-llama", device="cuda", quick=True, budget_bytes=2**34)
    assert k.dtype_name == "fp16" and F.BF16_UNSUPPORTED in k.flags


@pytest.mark.parametrize(
    "name,visible,expected",
    [
        ("NVIDIA A100-SXM4-40GB MIG 1g.5gb", None, "MIG-"),
        ("NVIDIA H100 80GB HBM3", None, "GPU-"),
        ("NVIDIA H100 80GB HBM3", "MIG-4b6c9a2e-0000-0000-0000-000000000000", "MIG-"),
        ("NVIDIA H100 80GB HBM3", "0", "GPU-"),
    ],
)
def test_cuda_uuid_uses_nvmls_mig_prefix(monkeypatch, name, visible, expected):
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    props = types.SimpleNamespace(uuid="4b6c9a2e-1111-2222-3333-444455556666", name=name)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: props)
    assert D.cuda_uuid() == expected + props.uuid
    assert D.nvml_uuid("MIG-abc", name) == "MIG-abc" and D.nvml_uuid("GPU-abc", name) == "GPU-abc"


GPUS = [
    {"index": 0, "uuid": "GPU-aaaa-0", "throttle_reasons": ["hw_slowdown"], "mig_instances": []},
    {
        "index": 1,
        "uuid": "GPU-bbbb-1",
        "throttle_reasons": ["gpu_idle"],
        "mig_instances": [{"index": 0, "uuid": "MIG-cccc-1"}],
    },
]


@pytest.mark.parametrize(
    "visible,throttled",
    [
        (None, True),  # unset: every GPU is visible
        ("1", False),
        ("0", True),
        ("1,0", True),
        ("GPU-bbbb", False),  # a unique prefix, as CUDA accepts
        ("MIG-cccc-1", False),  # a MIG device reads its parent
        ("GPU-aaaa-0", True),
        ("", False),  # nothing visible
        ("1,x,0", False),  # torch stops at the first entry it cannot read
    ],
)
def test_throttle_flag_reads_only_the_visible_gpus(monkeypatch, visible, throttled):
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert E.throttled({"gpus": GPUS}) is throttled


@pytest.mark.parametrize(
    ("nvidia", "throttled"), [("MIG-cccc-1", False), ("0", True), ("all", True), ("none", False)]
)
def test_throttle_flag_reads_a_containers_nvidia_visible_devices_when_cudas_is_unset(
    monkeypatch, nvidia, throttled
):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv(
        "NVIDIA_VISIBLE_DEVICES", nvidia
    )  # a Kubernetes pod's, as the container runtime sets it
    assert E.throttled({"gpus": GPUS}) is throttled
