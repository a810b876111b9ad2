"""What NVML says about a node's GPUs that a driver, firmware or MIG change moves: driver and CUDA
driver version, each GPU's VBIOS, MIG mode and the GPU-instance profiles present. `aiworkbook lock`
records them when it locks on a GPU; `check --passive` reads them again and names what changed.

Only NVML (aiworkbook.nvml): no CUDA context, no GPU time. A call a GPU does not support (MIG mode
on a GeForce card: NotSupported) is recorded as None and compares equal to None; a call that fails
otherwise (listing GPU instances needs root or the MIG monitor capability: NoPermission) is recorded
as unreadable with its reason, and is then not compared."""

from __future__ import annotations

import ctypes
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from aiworkbook import nvml
from aiworkbook.message import Msg

#: NVML's answers that mean "this device has no such thing", not "could not read it".
_ABSENT = ("not supported", "invalid argument", "not found")


class GpuFact(BaseModel):
    """One GPU. None: the GPU does not support it; `unreadable` names what could not be read, why."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    index: int = Field(ge=0)
    name: str | None = Field(default=None, max_length=256)
    vbios: str | None = Field(default=None, max_length=64)
    mig_mode: str | None = Field(default=None, max_length=64)
    #: GPU-instance profile name -> instances present (empty: MIG off or no instance)
    mig_instances: dict[str, int] | None = None
    unreadable: dict[str, str] = {}


class NvmlFacts(BaseModel):
    """The node's NVML facts, as recorded in a locked profile (node.nvml) or read now."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    driver: str | None = Field(default=None, max_length=64)
    cuda_driver: str | None = Field(default=None, max_length=16)
    gpus: list[GpuFact] = []


def _cuda(v: Any) -> str | None:
    """nvmlSystemGetCudaDriverVersion's 12040 as '12.4'."""
    return None if v is None else f"{int(v) // 1000}.{int(v) % 1000 // 10}"


def _mig(h: Any, unreadable: dict[str, str]) -> tuple[str | None, dict[str, int] | None]:
    """(mode, {GPU-instance profile: count}) through nvmlDeviceGetMigMode, then for every profile
    the GPU knows (nvmlDeviceGetGpuInstanceProfileInfo) the instances present (nvmlDeviceGetGpuInstances)."""
    mode, why = nvml.attempt("nvmlDeviceGetMigMode", h)
    if mode is None:
        if why not in _ABSENT:
            unreadable["mig_mode"] = str(why)
        return None, None
    nv = nvml.module()
    on = int(getattr(nv, "NVML_DEVICE_MIG_ENABLE", 1))
    current, pending = ("enabled" if int(m) == on else "disabled" for m in mode)
    text = current if pending == current else f"{current}, pending {pending}"  # pending: after a GPU reset
    if current != "enabled":
        return text, {}
    present: dict[str, int] = {}
    seen: set[int] = set()
    for p in range(int(getattr(nv, "NVML_GPU_INSTANCE_PROFILE_COUNT", 0))):
        info, why = nvml.attempt("nvmlDeviceGetGpuInstanceProfileInfo", h, p)
        if info is None:
            if why in _ABSENT:
                continue  # a profile this GPU does not have
            unreadable["mig_instances"] = str(why)
            return text, None
        if int(info.id) in seen:
            continue
        seen.add(int(info.id))
        count = ctypes.c_uint(0)
        slots = (nv.c_nvmlGpuInstance_t * max(1, int(info.instanceCount)))()
        _, why = nvml.attempt("nvmlDeviceGetGpuInstances", h, info.id, slots, ctypes.byref(count))
        if why is not None:
            unreadable["mig_instances"] = str(why)
            return text, None
        if count.value:
            name = str(nvml.text(getattr(info, "name", b"") or b"")).strip() or f"profile {int(info.id)}"
            present[name] = present.get(name, 0) + int(count.value)
    return text, present


def read_facts() -> NvmlFacts | None:
    """This node's facts, or None when NVML is unusable or sees no GPU (nothing to record)."""
    if nvml.ensure() is not None:
        return None
    n, _ = nvml.attempt("nvmlDeviceGetCount")
    if not n:
        return None
    driver, _ = nvml.attempt("nvmlSystemGetDriverVersion")
    cuda, _ = nvml.attempt("nvmlSystemGetCudaDriverVersion")
    gpus = []
    for i in range(int(n)):
        unreadable: dict[str, str] = {}
        h, why = nvml.attempt("nvmlDeviceGetHandleByIndex", i)
        if h is None:
            gpus.append(GpuFact(index=i, unreadable={"handle": str(why)}))
            continue
        name, _ = nvml.attempt("nvmlDeviceGetName", h)
        vbios, why = nvml.attempt("nvmlDeviceGetVbiosVersion", h)
        if vbios is None and why not in _ABSENT:
            unreadable["vbios"] = str(why)
        mode, instances = _mig(h, unreadable)
        gpus.append(
            GpuFact(
                index=i,
                name=None if name is None else str(nvml.text(name)),
                vbios=None if vbios is None else str(nvml.text(vbios)),
                mig_mode=mode,
                mig_instances=instances,
                unreadable=unreadable,
            )
        )
    return NvmlFacts(
        driver=None if driver is None else str(nvml.text(driver)), cuda_driver=_cuda(cuda), gpus=gpus
    )


#: What each compared fact is called (literal ids, so pybabel's extraction finds them).
_WHAT = {
    "driver": lambda: Msg("passive.what.driver"),
    "cuda_driver": lambda: Msg("passive.what.cuda_driver"),
    "vbios": lambda: Msg("passive.what.vbios"),
    "mig_mode": lambda: Msg("passive.what.mig_mode"),
    "mig_instances": lambda: Msg("passive.what.mig_instances"),
}


def _show(key: str, v: Any) -> Any:
    """A recorded value as shown: None is 'not supported' (no MIG instances: 'none')."""
    if key == "mig_instances":
        return Msg("passive.value.none") if not v else ", ".join(f"{k} x{n}" for k, n in sorted(v.items()))
    return Msg("passive.value.unsupported") if v is None else v


def compare(locked: NvmlFacts | None, now: NvmlFacts | None) -> tuple[list[str], list[str]]:
    """(mismatches, notes): each mismatch one short clause 'GPU 0: VBIOS 96.00.99 -> 96.00.a1'; notes
    say what was not compared (not recorded when locked, or unreadable now)."""
    if locked is None:
        return [], [Msg("passive.not_recorded")]
    if now is None:
        return [Msg("passive.no_gpu")] if locked.gpus else [], []
    bad: list[str] = []
    notes: list[str] = []
    for what, was, is_ in (
        ("driver", locked.driver, now.driver),
        ("cuda_driver", locked.cuda_driver, now.cuda_driver),
    ):
        if was is not None and was != is_:
            unknown = Msg("passive.value.unknown")
            bad.append(Msg("passive.changed", what=_WHAT[what](), was=was, now=is_ or unknown))
    for g in locked.gpus:
        cur = next((x for x in now.gpus if x.index == g.index), None)
        if cur is None:
            bad.append(Msg("passive.gpu_missing", gpu=g.index))
            continue
        for key in ("vbios", "mig_mode", "mig_instances"):
            was, is_ = getattr(g, key), getattr(cur, key)
            what = _WHAT[key]()
            if key in g.unreadable:
                notes.append(Msg("passive.gpu_not_recorded", gpu=g.index, what=what, why=g.unreadable[key]))
            elif key in cur.unreadable:
                notes.append(Msg("passive.gpu_unreadable", gpu=g.index, what=what, why=cur.unreadable[key]))
            elif was != is_:
                bad.append(
                    Msg(
                        "passive.gpu_changed",
                        gpu=g.index,
                        what=what,
                        was=_show(key, was),
                        now=_show(key, is_),
                    )
                )
    return bad, notes
