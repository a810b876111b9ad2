"""This GPU now, for a pre-flight: total, used and free memory, and who holds it (each compute process
with its VRAM, its name and, where /proc shows it, its container or cgroup), read through the
project's one NVML layer (aiworkbook.nvml). A device is a whole GPU or one MIG slice.

NVML lists *host* PIDs; from inside a container other tenants' /proc entries are hidden, so a name
or a cgroup may be unknown ("?" / None) and is reported as such, never guessed. A process whose
memory NVML cannot read (usedGpuMemory N/A: MIG without permission, WDDM) keeps `used_bytes` None;
the memory nobody listed is `unattributed_bytes`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiworkbook import cuda_visible, nvml
from aiworkbook.cuda_visible import Visibility
from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.telemetry.processes import own_pid_namespace


class NoGPU(Exception):
    """No NVIDIA GPU can be read here; the message says why ("no NVIDIA GPU found (...)")."""


@dataclass(frozen=True)
class Tenant:
    """One compute process on the device."""

    pid: int
    name: str  # '?' when /proc hides it (another container, no permission)
    used_bytes: int | None  # None: NVML cannot read it (N/A)
    cgroup: str | None = None  # the process's cgroup path (/proc/PID/cgroup), None when unreadable
    container: str | None = None  # a container id or pod found in that path

    def to_dict(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "name": self.name,
            "used_bytes": self.used_bytes,
            "cgroup": self.cgroup,
            "container": self.container,
        }


@dataclass(frozen=True)
class Device:
    """One device as read now: a whole GPU, or a MIG slice (`mig_index` set)."""

    index: int  # NVML index of the GPU (the parent for a MIG slice)
    name: str
    uuid: str
    total_bytes: int  # NVML total (nvidia-smi's figure)
    used_bytes: int
    free_bytes: int
    reserved_bytes: int | None  # driver/ECC memory (NVML memory info v2), None when not reported
    mig_index: int | None = None
    mig_enabled: bool = False  # the GPU (or the slice's parent) runs in MIG mode
    tenants: tuple[Tenant, ...] = ()
    processes_note: str | None = None  # why the process list is missing (e.g. "no permission")
    names_note: str | None = None  # why names and cgroups are not looked up (a separate PID namespace)
    source: str = Msg("preflight.source.nvml")  # what the figures are: a device built by hand says so

    @property
    def label(self) -> str:
        return f"GPU {self.index}" + (f" MIG {self.mig_index}" if self.mig_index is not None else "")

    @property
    def selector(self) -> str:
        return f"{self.index}" + (f":{self.mig_index}" if self.mig_index is not None else "")

    @property
    def cuda_total_bytes(self) -> int:
        """What cudaMemGetInfo reports as total (vLLM's total): NVML's total less the reserved part
        NVML v2 reports (an H100 80GB: 79.65 GiB in nvidia-smi, ~79.1-79.2 GiB to CUDA)."""
        return self.total_bytes - (self.reserved_bytes or 0)

    @property
    def unattributed_bytes(self) -> int:
        """Used memory no listed process accounts for (processes NVML hides or cannot read, the driver)."""
        known = sum(t.used_bytes for t in self.tenants if t.used_bytes is not None)
        return max(0, self.used_bytes - known)

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.selector,
            "label": self.label,
            "name": self.name,
            "uuid": self.uuid,
            "mig": self.mig_index is not None,
            "mig_enabled": self.mig_enabled,
            "total_bytes": self.total_bytes,
            "cuda_total_bytes": self.cuda_total_bytes,
            "reserved_bytes": self.reserved_bytes,
            "used_bytes": self.used_bytes,
            "free_bytes": self.free_bytes,
            "unattributed_bytes": self.unattributed_bytes,
            "tenants": [t.to_dict() for t in self.tenants],
            "processes_note": self.processes_note,
            "names_note": self.names_note,
            "source": self.source,
        }


# -- containers --------------------------------------------------------------------------------
_CONTAINER = re.compile(r"(?:docker|cri-containerd|crio|libpod|containerd)[-:/]([0-9a-f]{12,64})")
_POD = re.compile(r"pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})")
_BARE_ID = re.compile(r"/([0-9a-f]{64})(?:\.scope)?$")


def cgroup_of(pid: int, proc_root: str | os.PathLike = "/proc") -> tuple[str | None, str | None]:
    """(cgroup path, container) of a process from /proc/PID/cgroup: the cgroup v2 line ("0::/...") or
    the first v1 line; the container is "docker 1a2b3c4d5e6f", "pod <uid>" (Kubernetes) or None."""
    try:
        text = (Path(proc_root) / str(int(pid)) / "cgroup").read_text(errors="replace")
    except (OSError, ValueError):
        return None, None
    lines = [ln.split(":", 2) for ln in text.splitlines() if ln.count(":") >= 2]
    v2 = [p[2] for p in lines if p[0] == "0" and p[1] == ""]
    paths = v2 or [p[2] for p in lines]
    path = paths[0] if paths else None
    if not path:
        return None, None
    path = path.strip()
    container = None
    m = _CONTAINER.search(path)
    pod = _POD.search(path)
    if m:
        runtime = path[m.start() : m.start() + path[m.start() :].find(m.group(1))].strip("-:/")
        container = f"{runtime or 'container'} {m.group(1)[:12]}"
    elif (b := _BARE_ID.search(path)) is not None:
        container = f"container {b.group(1)[:12]}"
    if pod:
        uid = pod.group(1).replace("_", "-")
        container = f"pod {uid}" + (f", {container}" if container else "")
    return path, container


#: why names and cgroups are not looked up: this process has its own PID namespace
HOST_PIDS = Msg("preflight.host_pids")


# -- NVML --------------------------------------------------------------------------------------
def _call(fn: str, *args: Any) -> Any:
    value, why = nvml.attempt(fn, *args)
    if why is not None:
        raise _Unreadable(why)
    return value


class _Unreadable(Exception):
    pass


def _memory(handle: Any) -> tuple[int, int, int, int | None]:
    """(total, used, free, reserved): memory info v2 where the driver has it, else v1 (reserved None)."""
    nv = nvml.module()
    v2, why = nvml.attempt("nvmlDeviceGetMemoryInfo", handle, version=getattr(nv, "nvmlMemory_v2", None))
    if why is None and v2 is not None and hasattr(v2, "reserved"):
        return int(v2.total), int(v2.used), int(v2.free), int(v2.reserved)
    m = _call("nvmlDeviceGetMemoryInfo", handle)
    return int(m.total), int(m.used), int(m.free), None


def _tenants(
    handle: Any, proc_root: str | os.PathLike, name_of: Callable[[int], str] | None
) -> tuple[tuple[Tenant, ...], str | None]:
    """The compute processes; `name_of` None: names and cgroups not looked up (host PIDs we cannot map)."""
    try:  # NVML is initialised: _inventory() ensured it
        procs = nvml.compute_processes(nvml.module(), handle)
    except Exception as exc:  # an NVMLError: say why the list is missing
        return (), nvml.reason(exc)
    out = []
    for p in procs:
        pid = int(p.pid)
        used = getattr(p, "usedGpuMemory", None)
        cg, container = cgroup_of(pid, proc_root) if name_of is not None else (None, None)
        name = name_of(pid) if name_of is not None else "?"
        out.append(Tenant(pid, name, None if used is None else int(used), cg, container))
    return tuple(out), None


def _mig_handles(handle: Any) -> list[tuple[int, Any]]:
    """(MIG device index, handle) of the slices that exist on a GPU in MIG mode."""
    n, why = nvml.attempt("nvmlDeviceGetMaxMigDeviceCount", handle)
    if why is not None or not n:
        return []
    out = []
    for j in range(int(n)):
        mh, why = nvml.attempt("nvmlDeviceGetMigDeviceHandleByIndex", handle, j)
        if why is None and mh is not None:
            out.append((j, mh))
    return out


def _read(
    index: int,
    handle: Any,
    mig_index: int | None,
    mig_enabled: bool,
    proc_root: str | os.PathLike,
    name_of: Callable[[int], str] | None,
) -> Device:
    name = str(nvml.text(_call("nvmlDeviceGetName", handle)))
    uuid, _ = nvml.attempt("nvmlDeviceGetUUID", handle)
    total, used, free, reserved = _memory(handle)
    tenants, note = _tenants(handle, proc_root, name_of)
    return Device(
        index=index,
        name=name,
        uuid=str(nvml.text(uuid)) if uuid is not None else "",
        total_bytes=total,
        used_bytes=used,
        free_bytes=free,
        reserved_bytes=reserved,
        mig_index=mig_index,
        mig_enabled=mig_enabled,
        tenants=tenants,
        processes_note=note,
        names_note=HOST_PIDS if name_of is None else None,
    )


def _default_name_of(pid: int) -> str:
    from aiworkbook.telemetry.processes import process_name

    return process_name(pid)


@dataclass
class Inventory:
    """Every GPU and MIG slice NVML shows, to pick devices from."""

    gpus: list[dict[str, Any]] = field(
        default_factory=list
    )  # {index, handle, uuid, mig: [(j, handle, uuid)]}


def _inventory() -> Inventory:
    why = nvml.ensure()
    if why is not None:
        raise NoGPU(Msg("gpu.none_found", why=why))
    n, why = nvml.attempt("nvmlDeviceGetCount")
    if why is not None:
        raise NoGPU(Msg("gpu.none_found", why=why))
    if not n:
        raise NoGPU(Msg("gpu.none_found", why=Msg("gpu.zero_devices")))
    inv = Inventory()
    for i in range(int(n)):
        h, why = nvml.attempt("nvmlDeviceGetHandleByIndex", i)
        if why is not None:
            raise NoGPU(Msg("gpu.unreadable", index=i, why=why))
        mode, _ = nvml.attempt("nvmlDeviceGetMigMode", h)
        migs = _mig_handles(h) if mode is not None and mode[0] else []
        uuid, _ = nvml.attempt("nvmlDeviceGetUUID", h)
        inv.gpus.append(
            {
                "index": i,
                "handle": h,
                "uuid": str(nvml.text(uuid)) if uuid is not None else "",
                "mig_enabled": bool(mode is not None and mode[0]),
                "mig": [
                    (j, mh, str(nvml.text(nvml.attempt("nvmlDeviceGetUUID", mh)[0] or ""))) for j, mh in migs
                ],
            }
        )
    return inv


def _pick(inv: Inventory, item: str) -> tuple[dict[str, Any], int | None]:
    """One selector: an NVML index ("0"), a MIG slice ("0:1"), a GPU-/MIG- UUID (or unique prefix)."""
    item = item.strip()
    allowed = "an NVML index (0), a MIG slice (GPU:MIG, e.g. 0:1), or a GPU-/MIG- UUID"
    if item.startswith("GPU-"):
        hits = [g for g in inv.gpus if g["uuid"].startswith(item)]
        if len(hits) == 1:
            return hits[0], None
    elif item.startswith("MIG-"):
        hits2 = [(g, j) for g in inv.gpus for j, _, u in g["mig"] if u.startswith(item)]
        if len(hits2) == 1:
            return hits2[0]
    else:
        gpu, sep, mig = item.partition(":")
        if gpu.isdigit() and int(gpu) < len(inv.gpus) and (not sep or mig.isdigit()):
            g = inv.gpus[int(gpu)]
            if not sep:
                return g, None
            if any(j == int(mig) for j, _, _ in g["mig"]):
                return g, int(mig)
            allowed = f"a MIG slice of GPU {gpu}: " + (
                ", ".join(f"{gpu}:{j}" for j, _, _ in g["mig"]) or "none exists"
            )
    raise SpecError("device", item, allowed)


def select_visible(
    inv: Inventory, ranks: int = 1, environ: Mapping[str, str] | None = None
) -> tuple[list[tuple[dict[str, Any], int | None]], Visibility]:
    """The first `ranks` devices CUDA shows this process, in CUDA's order (vLLM puts rank i on the i-th):
    CUDA_VISIBLE_DEVICES' entries (indices, GPU-/MIG- UUIDs or unique prefixes, up to the first it
    cannot use; empty means none), else NVIDIA_VISIBLE_DEVICES' (a container's), else every device, a
    GPU in MIG mode standing for its slices. (GPU, MIG index or None) each, and what decided it.
    None visible: NoGPU; fewer than `ranks`: SpecError on "device"."""
    vis = cuda_visible.read(environ)
    if vis.entries is None:
        seen = [
            x
            for g in inv.gpus
            for x in ([(g, j) for j, _, _ in g["mig"]] if g["mig_enabled"] else [(g, None)])
        ]
    else:
        slices = [(g, j, u) for g in inv.gpus for j, _, u in g["mig"]]
        cands: list[tuple[dict[str, Any], int | None]] = [(g, None) for g in inv.gpus]
        cands += [(g, j) for g, j, _ in slices]
        indices = [g["index"] for g in inv.gpus] + [-1] * len(slices)  # a slice has no CUDA index
        uuids = [g["uuid"] for g in inv.gpus] + [u for _, _, u in slices]
        seen = []
        for entry in vis.entries:
            k = cuda_visible.match(entry, indices, uuids)
            if k is None:  # CUDA stops at the first entry that names no device
                break
            if cands[k] not in seen:
                seen.append(cands[k])
    if not seen:
        said = f"{vis.variable}={vis.value!r}" if vis.variable else "no device"
        raise NoGPU(f"no GPU visible to CUDA ({said}): vLLM cannot start here")
    if len(seen) < ranks:
        said = f"{vis.variable}={vis.value!r}" if vis.variable else "this machine"
        raise SpecError("device", said, Msg("allowed.visible_per_rank", n=ranks))
    return seen[:ranks], vis


def read_devices(
    selectors: list[str] | None = None,
    *,
    ranks: int = 1,
    proc_root: str | os.PathLike = "/proc",
    name_of: Callable[[int], str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[Device]:
    """The devices named by `selectors` (NVML names: see _pick), or else the first `ranks` that CUDA
    shows this process (select_visible), read now. Process names and cgroups come from `proc_root`
    unless this process has its own PID namespace (then "?" and a `names_note`), or from `name_of` when
    given. A whole GPU in MIG mode cannot run a CUDA process: SpecError naming its slices.
    No GPU: NoGPU with "no NVIDIA GPU found (...)" (or none visible to CUDA)."""
    inv = _inventory()
    picked = [_pick(inv, item) for item in selectors] if selectors else select_visible(inv, ranks, environ)[0]
    if name_of is None:
        name_of = None if own_pid_namespace(proc_root) else _default_name_of
    out: list[Device] = []
    seen: set[tuple[int, int | None]] = set()
    for g, j in picked:
        item = f"{g['index']}" + (f":{j}" if j is not None else "")
        if j is None and g["mig_enabled"]:
            slices = ", ".join(f"{g['index']}:{k} ({u})" for k, _, u in g["mig"]) or "none created yet"
            raise SpecError("device", item, f"a MIG slice (GPU {g['index']} is in MIG mode): {slices}")
        if (g["index"], j) in seen:
            raise SpecError("device", item, Msg("allowed.device_once"))
        seen.add((g["index"], j))
        handle = g["handle"] if j is None else next(mh for k, mh, _ in g["mig"] if k == j)
        try:
            out.append(_read(g["index"], handle, j, g["mig_enabled"], proc_root, name_of))
        except _Unreadable as exc:
            raise NoGPU(f"GPU {g['index']} cannot be read ({exc})") from None
    return out
