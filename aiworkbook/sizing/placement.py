"""Where a workload runs: the workload as its engine deploys it (vLLM's tensor-parallel size), the GPU
or MIG slice it gets, and the Kubernetes resource name and count. Sizing's answer and the profile's
deployment snippets both read it, so it lives in sizing (below profile)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg

if TYPE_CHECKING:
    from aiworkbook.specs.protocol import ModelSpecLike


def vllm_workload(spec: ModelSpecLike, w: Any, gpu: Any) -> Any:
    """The workload as vLLM would run it: engine vllm, at its tensor-parallel size, or the smallest
    one that fits when it does not (SpecError when no size does)."""
    from aiworkbook.sizing import capacity

    if w.training:
        raise SpecError("mode", w.mode, Msg("allowed.vllm_infer"))
    wv = w.replace(engine="vllm")
    if not capacity.fits(spec, wv, gpu)["fits"]:
        tp = capacity.gpus_needed(spec, wv, gpu)
        if tp is None:
            raise SpecError(
                "gpu", getattr(gpu, "name", gpu), Msg("allowed.gpu_fits_some_tp", model=spec.name)
            )
        wv = wv.replace(tp=tp)
    return wv


@dataclass(frozen=True)
class Placement:
    """Where the workload runs: the workload as deployed (tp, engine), the GPU or MIG slice it gets
    (a GPUSpec whose memory is the slice's), and the Kubernetes resource name and count; `mig`: the
    MIG profile ("" for whole GPUs)."""

    workload: Any
    gpu: Any
    resource: str
    count: int
    mig: str = ""


def instance_name(gpu: str, profile: str) -> str:
    """How a MIG instance is named beside its GPU: `H100-SXM MIG 1g.10gb`."""
    return f"{gpu} MIG {profile}"


def mig_share(gpu: Any, profile: str) -> tuple[float, float]:
    """The share of the whole GPU one MIG instance of `profile` gets: (compute, memory). Compute: its
    compute slices over the GPU's (`3g.40gb` on an H100: 3 of 7, NVIDIA's "fraction of SMs"); memory:
    its memory over the GPU's usable memory, and with it the share of the memory controllers, so of the
    bandwidth and the L2 (`3g.40gb`: 4 of 8 memory slices)."""
    p = next(m for m in gpu.mig_profiles if m.name == profile)
    return p.compute_slices / gpu.mig_compute_slices, min(1.0, p.memory_bytes / gpu.usable_memory_bytes)


def mig_slice(gpu: Any, profile: str) -> Any:
    """A GPUSpec for one MIG instance: the profile's memory (cudaMemGetInfo reports the instance's, so
    no CUDA-visible total of the whole GPU), its compute share of every peak, the SMs and the power,
    its memory share of the bandwidth and the L2, its compute share of the GPU's $/hour (the rest of
    the GPU serves other instances), and no scale-up link (an instance has no peer access)."""
    from aiworkbook.sizing.cost import instance_hour_price

    p = next(m for m in gpu.mig_profiles if m.name == profile)
    c, m = mig_share(gpu, profile)
    return gpu.model_copy(
        update={
            "name": instance_name(gpu.name, p.name),
            "memory_bytes": p.memory_bytes,
            "usable_memory_bytes": p.memory_bytes,
            "cuda_memory_bytes": None,
            "memory_bandwidth_bps": gpu.memory_bandwidth_bps * m,
            "peak_flops_dense": {k: v * c for k, v in gpu.peak_flops_dense.items()},
            "peak_flops_sparse": {k: v * c for k, v in gpu.peak_flops_sparse.items()},
            "sm_count": int(gpu.sm_count * c),
            "tdp_watts": gpu.tdp_watts * c,
            "l2_cache_bytes": int(gpu.l2_cache_bytes * m),
            "scale_up": "",
            "scale_up_bps": 0.0,
            "scale_up_gpus": 1,
            "price_per_hour_usd": instance_hour_price(gpu.price_per_hour_usd, c),
            "mig_profiles": (),
            "mig_compute_slices": 0,
        }
    )


def mig_placement(spec: ModelSpecLike, w: Any, gpu: Any) -> Placement | None:
    """The placement of `w` on one `gpu` when it is a MIG instance, else None (whole GPUs, or none)."""
    try:
        pl = placement(spec, w, gpu)
    except SpecError:
        return None
    return pl if pl.mig else None


def placement(spec: ModelSpecLike, w: Any, gpu: Any, *, mig: bool = True) -> Placement:
    """The smallest resource that holds the workload: a MIG slice smaller than the whole GPU when one
    does (`mig`, tp 1, MIG 'mixed' strategy), else whole GPUs (tp for serving, tp x dp for training)
    as the vendor's device plugin names them (`nvidia.com/gpu`, `amd.com/gpu`)."""
    from aiworkbook.sizing import capacity
    from aiworkbook.specs import get_gpu

    g = get_gpu(gpu) if isinstance(gpu, str) else gpu
    if not w.training:
        w = vllm_workload(spec, w, g)
    elif not capacity.fits(spec, w, g)["fits"]:
        raise SpecError("workload", f"{w.mode} batch {w.batch}", Msg("allowed.train_fits_on", gpu=g.name))
    count = w.tp * (w.dp if w.training else 1)
    if mig and count == 1 and g.mig_profiles:
        name = capacity.mig_profile(spec, w, g)
        largest = max(p.memory_bytes for p in g.mig_profiles)
        if name is not None and next(p for p in g.mig_profiles if p.name == name).memory_bytes < largest:
            return Placement(w, mig_slice(g, name), f"nvidia.com/mig-{name}", 1, name)
    return Placement(w, g, g.device_resource, count)
