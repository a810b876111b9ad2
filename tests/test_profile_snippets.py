"""Deployment snippets agree with the capacity estimate: --max-num-seqs sequences of --max-model-len
fit the KV budget of the resource the Kubernetes block asks for, and one more does not."""

from __future__ import annotations

import pytest

from aiworkbook.errors import SpecError
from aiworkbook.profile.snippets import k8s_resources, k8s_yaml, vllm_args
from aiworkbook.sizing import Workload, capacity
from aiworkbook.sizing.placement import mig_slice, placement
from aiworkbook.specs import get_gpu, load_model

CASES = [
    ("llama-3-8b", "H100-SXM", Workload(mode="infer", seq_len=4096, new_tokens=512, concurrency=8), True),
    ("llama-3-8b", "H100-SXM", Workload(mode="infer", seq_len=4096, new_tokens=512, concurrency=8), False),
    ("llama-3-8b", "L40S", Workload(mode="infer", seq_len=2048, new_tokens=256, concurrency=32), True),
    ("llama-3-70b", "H100-SXM", Workload(mode="infer", seq_len=4096, new_tokens=512, concurrency=8), True),
    ("qwen2.5-7b", "A100-40GB", Workload(mode="infer", seq_len=8192, kv_dtype="fp8", concurrency=4), True),
    ("llama-3.2-1b", "H200-SXM", Workload(mode="infer", seq_len=1024, concurrency=4), True),
]


@pytest.mark.parametrize(("model", "gpu", "w", "mig"), CASES)
def test_vllm_args_match_the_kv_capacity(model, gpu, w, mig):
    spec = load_model(model)
    args = vllm_args(spec, w, gpu, mig=mig)
    pl = placement(spec, w, gpu, mig=mig)
    wv = pl.workload
    assert wv.engine == "vllm" and args.tensor_parallel_size == wv.tp
    assert args.max_model_len == w.context_len
    assert args.gpu_memory_utilization == w.gpu_memory_utilization
    n = args.max_num_seqs
    at = wv.replace(concurrency=n, context=args.max_model_len)
    over = wv.replace(concurrency=n + 1, context=args.max_model_len)
    assert capacity.fits(spec, at, pl.gpu)["fits"]
    assert not capacity.fits(spec, over, pl.gpu)["fits"]
    assert n >= w.concurrency, "the placement holds the concurrency the workload asked for"
    assert f"--max-num-seqs={n}" in args.args()
    assert ("--kv-cache-dtype=fp8" in args.args()) == (w.kv_dtype == "fp8")


@pytest.mark.parametrize(("model", "gpu", "w", "mig"), CASES)
def test_k8s_block_names_the_placement(model, gpu, w, mig):
    spec = load_model(model)
    res = k8s_resources(spec, w, gpu, mig=mig)
    ((name, count),) = res["limits"].items()
    pl = placement(spec, w, gpu, mig=mig)
    if name.startswith("nvidia.com/mig-"):
        assert mig and count == 1 and pl.workload.tp == 1
        profile = name.removeprefix("nvidia.com/mig-")
        assert profile == capacity.mig_profile(spec, pl.workload, get_gpu(gpu))
        assert pl.gpu.usable_memory_bytes < get_gpu(gpu).usable_memory_bytes
    else:
        assert name == "nvidia.com/gpu" and count == pl.workload.tp
    assert f"    {name}: {count}" in k8s_yaml(res)


def test_mig_for_a_small_model_whole_gpus_for_a_large_one():
    small = k8s_resources(load_model("llama-3.2-1b"), Workload(mode="infer", seq_len=1024), "H100-SXM")
    assert small == {"limits": {"nvidia.com/mig-1g.10gb": 1}}
    big = k8s_resources(load_model("llama-3-70b"), Workload(mode="infer", seq_len=4096), "H100-SXM")
    assert big == {"limits": {"nvidia.com/gpu": 2}}
    no_mig = k8s_resources(load_model("llama-3.2-1b"), Workload(mode="infer", seq_len=1024), "L40S")
    assert no_mig == {"limits": {"nvidia.com/gpu": 1}}


def test_training_asks_for_tp_times_dp():
    w = Workload(mode="lora", batch=1, seq_len=1024, dp=4)
    assert k8s_resources(load_model("llama-3.2-1b"), w, "H100-SXM", mig=False) == {
        "limits": {"nvidia.com/gpu": 4}
    }
    with pytest.raises(SpecError, match="infer"):
        vllm_args(load_model("llama-3.2-1b"), w, "H100-SXM")


def test_mig_slice_is_the_slice_memory_and_its_share_of_the_bandwidth():
    h = get_gpu("H100-SXM")
    s = mig_slice(h, "1g.10gb")
    assert s.usable_memory_bytes == int(9.75 * 2**30)
    assert s.memory_bandwidth_bps == pytest.approx(
        h.memory_bandwidth_bps * 9.75 * 2**30 / h.usable_memory_bytes
    )


def test_a_workload_that_fits_at_no_tensor_parallel_size_is_refused():
    w = Workload(mode="infer", seq_len=1024, concurrency=10000)
    with pytest.raises(SpecError, match="fits at some tp"):
        vllm_args(load_model("gpt2"), w, "L4")
    with pytest.raises(SpecError, match="fits at some tp"):
        k8s_resources(load_model("gpt2"), w, "L4")


def test_a_gpu_is_asked_for_by_its_vendors_device_plugin_resource():
    """An AMD GPU is `amd.com/gpu` (ROCm's device plugin), never `nvidia.com/gpu`: the answer that sends
    llama-3-8b's full training to an MI300X deploys it there with AMD's resource name."""
    from aiworkbook.sizing.answer import answer

    w = Workload(mode="train", batch=1, seq_len=2048)
    assert k8s_resources(load_model("llama-3-8b"), w, "MI300X") == {"limits": {"amd.com/gpu": 1}}
    assert k8s_resources(load_model("llama-3-8b"), w, "B200") == {"limits": {"nvidia.com/gpu": 1}}
    a = answer(load_model("llama-3-8b"), w, "H100-SXM")
    assert not a.fits and a.on == "MI300X" and a.deployment.resource == "amd.com/gpu"
