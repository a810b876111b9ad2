"""Will `vllm serve` start next to what already holds this GPU, and with how much KV cache?

vLLM's V1 worker takes a memory snapshot after its own CUDA context (and NCCL) exist and refuses to
start when the memory free then is below what the utilisation asks for:

    requested = ceil(total x gpu_memory_utilization)      # total: cudaMemGetInfo's
    if free_at_start < requested: ValueError("Free memory on device ... on startup is less than
                                             desired GPU memory utilization ...")

(vllm/v1/worker/utils.py `request_memory`, called from vllm/v1/worker/gpu_worker.py `init_device`,
vllm-project/vllm main 2025-26). `free_at_start` is the free memory read now less what vLLM holds
before that snapshot (before_snapshot, an estimate per tensor/pipeline-parallel size: its CUDA context,
sizing.memory.CUDA_CONTEXT_BYTES; NCCL's buffers; the custom all-reduce's), so the largest utilisation that passes is
`(free_now - context) / total`, rounded down to the 0.01 a flag is written with. Past that check the
KV cache is what vLLM's own arithmetic leaves (aiworkbook.sizing.vllm.startup, at that utilisation);
vLLM also refuses when not one request of --max-model-len fits in it ("max concurrency" < 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.preflight.gpu import Device
from aiworkbook.sizing.memory import CUDA_CONTEXT_BYTES
from aiworkbook.sizing.vllm import VllmSettings, VllmStartup, startup

MiB = 2**20


def installed_release() -> str | None:
    """The installed vLLM's release number as its package metadata gives it (importlib.metadata:
    "0.19.1", from "0.19.1+cu128" or "0.10.1rc1" the leading numbers), None where vLLM is not installed
    or its version names no release."""
    import re
    from importlib import metadata

    try:
        raw = metadata.version("vllm")
    except metadata.PackageNotFoundError:
        return None
    m = re.match(r"v?(\d+\.\d+(?:\.\d+)?)", raw or "")
    return m.group(1) if m else None


def resolve_release(given: str | None) -> tuple[str, str]:
    """(the --engine-version to size with, where it came from): the one given; else the installed vLLM's
    release, refused naming the modelled ones when this project does not model it (SpecError, exit 2:
    sizing it with another release's arithmetic would be a guess); else the newest release modelled."""
    from aiworkbook.sizing.vllm import NEWEST_RELEASE, engine_of, known_releases

    if given:
        return given, "--engine-version"
    here = installed_release()
    if here is None:
        return NEWEST_RELEASE, Msg("preflight.release.newest")
    try:
        engine_of(here)
    except SpecError:
        raise SpecError(
            "engine_version",
            f"{here} (the installed vLLM)",
            Msg("allowed.engine_releases", releases=known_releases()),
        ) from None
    return here, Msg("preflight.release.installed")


#: NCCL's buffers for one communicator on one rank, an estimate: NCCL_BUFFSIZE (4 MiB by default, NCCL's
#: environment-variable docs) for sending and receiving, over 32 channels (NCCL's MAXCHANNELS); a real
#: figure depends on the topology and NCCL's version, which only a GPU run measures
NCCL_COMMUNICATOR_BYTES = 4 * MiB * 2 * 32
#: vLLM's custom all-reduce (vllm/distributed/device_communicators/custom_all_reduce.py,
#: CustomAllreduce: _SUPPORTED_WORLD_SIZES = [2, 4, 6, 8], max_size=8192 * 1024): per rank a meta buffer
#: of meta_size() + max_size and an IPC buffer of max_size (cudaMalloc, outside torch) and rank_data, a
#: torch.empty of 8 MiB; meta_size() itself is a few KiB, left out
CUSTOM_ALL_REDUCE_SIZES = (2, 4, 6, 8)
CUSTOM_ALL_REDUCE_BYTES = 8 * MiB + 8 * MiB + 8 * MiB


def before_snapshot(tp: int, pp: int, context_bytes: int = CUDA_CONTEXT_BYTES) -> dict[str, int]:
    """What each rank of vLLM holds before its start-up snapshot, so what the free-memory check does not
    see as free, by part; an estimate. vLLM's V1 worker (vllm/v1/worker/gpu_worker.py, Worker.init_device)
    calls init_worker_distributed_environment, "BEFORE taking memory snapshot ... This ensures NCCL
    buffers are allocated before we measure available memory", then MemorySnapshot(): the CUDA context,
    one NCCL communicator per parallel group that has more than one rank (tensor, pipeline), and the
    custom all-reduce buffers at tensor-parallel sizes 2, 4, 6 and 8 (where GPU peer access works)."""
    parts = {
        "cuda_context_bytes": context_bytes,
        "nccl_bytes": NCCL_COMMUNICATOR_BYTES * ((tp > 1) + (pp > 1)),
        "custom_all_reduce_bytes": CUSTOM_ALL_REDUCE_BYTES if tp in CUSTOM_ALL_REDUCE_SIZES else 0,
    }
    return {**parts, "total_bytes": sum(parts.values())}


#: vLLM V1's start-up check (vllm/v1/worker/utils.py request_memory), in words
RULE = Msg("preflight.rule")


def _floor2(x: float) -> float:
    return math.floor(x * 100 + 1e-9) / 100


@dataclass(frozen=True)
class DeviceCheck:
    """The start-up rule on one device."""

    device: Device
    context_bytes: int
    requested_bytes: int  # ceil(total x utilisation) at the utilisation checked
    free_at_start_bytes: int  # free now less what vLLM holds before its snapshot (before_snapshot)
    passes: bool
    max_utilization: float  # the largest 0.01 step that passes (0.0: none)
    risks: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.device.to_dict(),
            "context_bytes": self.context_bytes,
            "requested_bytes": self.requested_bytes,
            "free_at_start_bytes": self.free_at_start_bytes,
            "passes_free_memory_check": self.passes,
            "max_utilization": self.max_utilization,
            "risks": list(self.risks),
        }


def risks(dev: Device) -> list[str]:
    """What sharing this device means: time-slicing without isolation, tenants NVML does not show."""
    out: list[str] = []
    if dev.tenants:
        n = len(dev.tenants)
        if dev.mig_index is None:
            out.append(Msg("preflight.risk.time_sliced", n=n, label=dev.label))
        else:
            out.append(Msg("preflight.risk.mig_shared", n=n, label=dev.label))
    unreadable = [t.pid for t in dev.tenants if t.used_bytes is None]
    if unreadable:
        out.append(Msg("preflight.risk.unreadable", pids=unreadable))
    if dev.processes_note:
        out.append(Msg("preflight.risk.no_process_list", label=dev.label, why=dev.processes_note))
    elif not dev.tenants and dev.unattributed_bytes > 2 * CUDA_CONTEXT_BYTES:
        out.append(Msg("preflight.risk.unattributed", gib=dev.unattributed_bytes / 2**30, label=dev.label))
    return out


def check_device(dev: Device, utilization: float, context_bytes: int = CUDA_CONTEXT_BYTES) -> DeviceCheck:
    total = dev.cuda_total_bytes
    free_at_start = dev.free_bytes - context_bytes
    requested = math.ceil(total * utilization)
    u = max(0.0, _floor2(free_at_start / total)) if total > 0 else 0.0
    while u > 0 and math.ceil(total * u) > free_at_start:  # float edge: step down until it passes
        u = round(u - 0.01, 2)
    return DeviceCheck(
        device=dev,
        context_bytes=context_bytes,
        requested_bytes=requested,
        free_at_start_bytes=free_at_start,
        passes=free_at_start >= requested,
        max_utilization=min(1.0, u),
        risks=tuple(risks(dev)),
    )


def gpu_for(dev: Device) -> Any:
    """A GPUSpec for the start-up arithmetic: this device's name and its memory read now (CUDA total =
    NVML total less reserved). Only name and memory enter vLLM's arithmetic; the speed figures are
    the catalogue's when the name matches one, else placeholders nothing here reads."""
    from aiworkbook.specs.detection import match_catalogue
    from aiworkbook.specs.gpu import GPUSpec, get_gpu

    memory: dict[str, Any] = {
        "name": dev.name,
        "memory_bytes": dev.total_bytes,
        "usable_memory_bytes": dev.total_bytes,
        "cuda_memory_bytes": dev.cuda_total_bytes,
        "mig_profiles": (),
        "source": f"{dev.label}: memory read now through NVML",
    }
    cat = None if dev.mig_index is not None else match_catalogue(dev.name, dev.total_bytes)
    if cat is not None:
        return get_gpu(cat).model_copy(update=memory)
    return GPUSpec(memory_bandwidth_bps=1.0, peak_flops_dense={"bf16": 1.0}, **memory)


@dataclass(frozen=True)
class Preflight:
    """The answer: does it start at the utilisation asked for, the largest that starts, what KV cache
    that gives, and who holds each device."""

    model: str
    utilization: float  # asked for (or the engine version's default)
    devices: tuple[DeviceCheck, ...]
    at_requested: VllmStartup | None  # vLLM's arithmetic at the utilisation asked for
    max_utilization: float | None  # the largest that starts (None: none does)
    at_max: VllmStartup | None
    reasons: tuple[str, ...] = ()
    settings: dict[str, Any] = field(default_factory=dict)
    visibility: dict[str, Any] | None = None  # what CUDA sees (aiworkbook.cuda_visible) when read from it

    @property
    def starts(self) -> bool:
        return not self.reasons

    @property
    def exit_code(self) -> int:
        return 0 if self.starts else 1

    @property
    def risks(self) -> list[str]:
        return [r for d in self.devices for r in d.risks]

    def to_dict(self) -> dict[str, Any]:
        def kv(s: VllmStartup | None) -> dict[str, Any] | None:
            if s is None:
                return None
            return {
                "kv_cache_tokens": s.kv_cache_tokens,
                "kv_cache_bytes": s.kv_cache_bytes,
                "max_concurrency": s.max_concurrency,
                "max_model_len": s.max_model_len,
                "available_kv_bytes": s.available_kv_bytes,
                "vllm": s.to_dict(),
            }

        return {
            "kind": "aiworkbook-preflight-vllm",
            "model": self.model,
            "gpu_found": True,
            "starts": self.starts,
            "exit_code": self.exit_code,
            "utilization": self.utilization,
            "reasons": list(self.reasons),
            "max_utilization": self.max_utilization,
            "at_utilization": kv(self.at_requested),
            "at_max_utilization": kv(self.at_max),
            "risks": self.risks,
            "rule": RULE,
            "devices": [d.to_dict() for d in self.devices],
            "settings": self.settings,
            "visibility": self.visibility,
            "estimate": "KV figures: vLLM's start-up arithmetic (aiworkbook.sizing.vllm), an estimate; "
            "memory and processes: NVML, read now",
        }


def _startup(spec: Any, devs: list[Device], s: VllmSettings, u: float) -> VllmStartup:
    """vLLM's arithmetic at utilisation u on the device that leaves the least KV cache."""
    runs = [startup(spec, gpu_for(d), replace(s, gpu_memory_utilization=u)) for d in devs]
    return min(runs, key=lambda r: r.kv_cache_tokens)


def preflight(
    spec: Any,
    devices: list[Device],
    settings: VllmSettings | None = None,
    *,
    context_bytes: int = CUDA_CONTEXT_BYTES,
) -> Preflight:
    """Apply vLLM's start-up rule and arithmetic to `spec` on `devices` (one per tensor/pipeline rank)
    with the co-tenants they hold now."""
    s = settings or VllmSettings()
    s.check()
    if not devices:
        raise SpecError("device", "none", Msg("allowed.one_device"))
    ranks = s.tensor_parallel_size * s.pipeline_parallel_size
    if len(devices) != ranks:
        raise SpecError(
            "device",
            ",".join(d.selector for d in devices),
            Msg("allowed.devices_per_rank", n=ranks),
        )
    if isinstance(context_bytes, bool) or not isinstance(context_bytes, int) or context_bytes < 0:
        raise SpecError("context_bytes", context_bytes, Msg("allowed.int_min", low=0))
    u = s.utilization
    held = before_snapshot(s.tensor_parallel_size, s.pipeline_parallel_size, context_bytes)
    context_bytes = held["total_bytes"]
    checks = [check_device(d, u, context_bytes) for d in devices]
    reasons: list[str] = []
    gib = 2**30
    for c in checks:
        if not c.passes:
            reasons.append(
                Msg(
                    "preflight.why.free_memory",
                    device=c.device.label,
                    at_start=c.free_at_start_bytes / gib,
                    free=c.device.free_bytes / gib,
                    held=context_bytes / gib,
                    u=u,
                    requested=c.requested_bytes / gib,
                    total=c.device.cuda_total_bytes / gib,
                )
            )
    at_req = _startup(spec, list(devices), s, u)
    if not at_req.starts and not reasons:
        reasons.append(Msg("preflight.why.refused", u=u, why=at_req.refusal))
    u_max: float | None = min(c.max_utilization for c in checks)
    at_max = None
    if u_max and u_max > 0:
        at_max = _startup(spec, list(devices), s, u_max)
        if not at_max.starts:  # even the most that passes the free-memory check holds no request
            u_max, at_max = None, None
    else:
        u_max = None
    return Preflight(
        model=spec.name,
        utilization=u,
        devices=tuple(checks),
        at_requested=at_req,
        max_utilization=u_max,
        at_max=at_max,
        reasons=tuple(reasons),
        settings={
            "tensor_parallel_size": s.tensor_parallel_size,
            "pipeline_parallel_size": s.pipeline_parallel_size,
            "max_model_len": at_req.max_model_len,
            "max_num_seqs": at_req.max_num_seqs,
            "max_num_batched_tokens": at_req.max_num_batched_tokens,
            "engine": s.engine,
            "engine_version": s.version,
            "before_snapshot": {**held, "source": "estimate (aiworkbook.preflight.vllm.before_snapshot)"},
        },
    )


def no_gpu(model: str, why: str) -> dict[str, Any]:
    """The answer where no NVIDIA GPU can be read: vLLM cannot start here (exit 1)."""
    return {
        "kind": "aiworkbook-preflight-vllm",
        "model": model,
        "gpu_found": False,
        "starts": False,
        "exit_code": 1,
        "reasons": [why],
    }


def run(
    model: str,
    settings: VllmSettings | None = None,
    selectors: list[str] | None = None,
    *,
    context_bytes: int = CUDA_CONTEXT_BYTES,
    engine_source: str = "--engine-version",
) -> Preflight | dict[str, Any]:
    """Load `model`, read the devices (default: the first tp x pp that CUDA shows, select_visible) and
    apply the rule: a Preflight, or no_gpu()'s dict when no NVIDIA GPU can be read. Bad input raises
    SpecError before NVML is touched. `engine_source` says where the release came from
    (resolve_release)."""
    from aiworkbook import cuda_visible
    from aiworkbook.preflight.gpu import NoGPU, read_devices
    from aiworkbook.specs import load_model

    s = settings or VllmSettings()
    s.check()
    spec = load_model(model)
    ranks = s.tensor_parallel_size * s.pipeline_parallel_size
    try:
        devices = read_devices(selectors, ranks=ranks)
    except NoGPU as exc:
        return no_gpu(spec.name, exc.args[0])  # a Msg: said in a dashboard's language by its id
    pf = preflight(spec, devices, s, context_bytes=context_bytes)
    vis = cuda_visible.read()
    return replace(
        pf,
        visibility={**vis.to_dict(), "selected_by": "--device" if selectors else "environment"},
        settings={**pf.settings, "engine_version_source": engine_source},
    )
