"""The environment a proof ran on: telemetry's snapshot plus torch's build and the threads it used."""

from __future__ import annotations

import os
import platform
from typing import Any


def capture(device: str = "cpu", attention: bool = False) -> dict[str, Any]:
    """JSON-safe snapshot: GPUs, driver, clocks and throttle reasons (telemetry), torch, CUDA, CPU;
    with `attention`, the SDPA backend the pinned policy runs here and its version (proofs.attention).

    Telemetry failures never stop a proof: they become {"na": reason}.
    """
    env: dict[str, Any] = {}
    try:
        from aiworkbook.telemetry import environment

        env.update(environment())
    except Exception as exc:  # telemetry is optional for a proof; say why it is missing
        env["telemetry"] = {"na": f"{type(exc).__name__}: {exc}"}
        env.setdefault("host", _host())
    import torch

    env["torch"] = {
        "version": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "num_threads": torch.get_num_threads(),
    }
    env["python"] = platform.python_version()
    env["device"] = device
    env["matmul_precision"] = matmul_flags()
    if attention:
        from aiworkbook.proofs.attention import record

        try:
            env["attention"] = record(device if device in ("cpu", "cuda") else "cpu")
        except Exception as exc:  # the record never stops a proof
            env["attention"] = {"na": f"{type(exc).__name__}: {exc}"}
    if device == "cuda" and torch.cuda.is_available():
        idx = torch.cuda.current_device()
        p = torch.cuda.get_device_properties(idx)
        env["cuda_device"] = {
            "index": idx,
            "name": p.name,
            "capability": f"{p.major}.{p.minor}",
            "total_memory": int(p.total_memory),
            "multiprocessors": p.multi_processor_count,
            "l2_cache_bytes": int(getattr(p, "L2_cache_size", 0) or 0) or None,
            "uuid": str(getattr(p, "uuid", "")) or None,
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        }
    return env


def matmul_flags() -> dict[str, Any]:
    """The fp32 matmul precision in force (TF32 or IEEE) and reduced-precision reductions, read without
    the legacy getters: torch >= 2.9 raises when `allow_tf32` is read after the new API set the flag."""
    import torch

    out: dict[str, Any] = {}
    m = torch.backends.cuda.matmul
    for key in (
        "fp32_precision",
        "allow_bf16_reduced_precision_reduction",
        "allow_fp16_reduced_precision_reduction",
    ):
        try:
            v = getattr(m, key)
            out[key] = v if isinstance(v, (bool, str, int, float)) or v is None else str(v)
        except Exception as exc:  # a build without the attribute, or the mixed-API check
            out[key] = {"na": f"{type(exc).__name__}: {str(exc)[:120]}"}
    return out


def throttled(env: dict[str, Any]) -> bool:
    """True when any GPU in the snapshot reports a throttle reason other than the benign ones
    (telemetry.gpu_metrics.is_throttled, the one definition)."""
    from aiworkbook.telemetry.gpu_metrics import is_throttled

    gpus = [g for g in env.get("gpus", []) or [] if isinstance(g, dict)]
    return any(is_throttled(g.get("throttle_reasons")) for g in visible_gpus(gpus))


def _mig_uuids(gpu: dict[str, Any]) -> list[str]:
    """The UUIDs of a GPU's MIG devices (none when telemetry could not list them: an NA)."""
    instances = gpu.get("mig_instances")
    if not isinstance(instances, list):
        return []
    return [str(m.get("uuid", "")) for m in instances if isinstance(m, dict)]


def visible_gpus(gpus: list[dict[str, Any]], visible: str | None = None) -> list[dict[str, Any]]:
    """The GPUs (telemetry entries, NVML order) this process's CUDA can see, in CUDA's order: `visible`
    (a CUDA_VISIBLE_DEVICES value), else what the environment says (aiworkbook.cuda_visible:
    CUDA_VISIBLE_DEVICES, else NVIDIA_VISIBLE_DEVICES, else every GPU). Indices, GPU-/MIG- UUIDs or
    their unique prefixes up to the first entry that names none; a MIG device counts as its parent GPU,
    whose clocks it shares."""
    from aiworkbook import cuda_visible

    if visible is None:
        items = cuda_visible.read().entries
        if items is None:
            return gpus
    else:
        items = tuple(cuda_visible.entries(visible))
    cands = [(g, g.get("index"), str(g.get("uuid", ""))) for g in gpus]
    cands += [(g, -1, u) for g in gpus for u in _mig_uuids(g)]  # a MIG device has no CUDA index
    out: list[dict[str, Any]] = []
    for item in items:
        k = cuda_visible.match(item, [c[1] for c in cands], [c[2] for c in cands])
        if k is None:  # CUDA (and torch's parser) stop at the first entry that names no device
            break
        if cands[k][0] not in out:
            out.append(cands[k][0])
    return out


def throttle_window(since: float) -> dict[str, dict[str, float]] | None:
    """Share of samples per throttle reason since monotonic time `since`, from the shared telemetry
    sampler when it is running (None otherwise: a proof never starts the sampler itself)."""
    try:
        from aiworkbook.telemetry.sampler import existing_sampler

        s = existing_sampler()  # reuse, never create: creating one would open NVML for nothing
        if s is None or not s.running:
            return None
        return s.window(since=since).throttle_share()
    except Exception:
        return None


def throttle_check(env: dict[str, Any], since: float | None, details: dict[str, Any]) -> bool:
    """Throttled during the proof? The snapshot taken after it (often idle by then) and, when the shared
    sampler ran, every sample since `since`; the window's shares go to details["throttle_share"]."""
    hit = throttled(env)
    share = throttle_window(since) if since is not None else None
    if share is not None:
        details["throttle_share"] = share
        from aiworkbook.telemetry.gpu_metrics import is_throttled

        hit = hit or any(is_throttled([r for r, v in g.items() if v > 0]) for g in share.values())
    return hit


def _host() -> dict[str, Any]:
    """The host when telemetry failed: the same collector telemetry and detect use."""
    from aiworkbook.specs.detection import host_facts

    return host_facts()
