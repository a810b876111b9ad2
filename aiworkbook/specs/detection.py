"""detect(): this machine as a NodeProfile, without importing torch and without needing a GPU.

GPU facts come from NVML through aiworkbook.nvml (initialised once per process, shared with the
telemetry); when there is no driver, no library or no device, the profile says
"no NVIDIA GPU found (<reason>)" instead.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
from importlib.metadata import PackageNotFoundError, version
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import psutil

from aiworkbook import nvml
from aiworkbook.message import Msg, record
from aiworkbook.specs.gpu import list_gpus
from aiworkbook.specs.node import DetectedGPU, NodeProfile


def cpu_model() -> str:
    """The CPU's marketing name from /proc/cpuinfo (Linux), else platform.processor()."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def storage_type(path: str = ".") -> str:
    """'ssd', 'hdd', 'nvme' or 'unknown' for the block device holding `path` (Linux sysfs)."""
    try:
        dev = os.stat(path).st_dev
        major, minor = os.major(dev), os.minor(dev)
        sys_dev = Path(f"/sys/dev/block/{major}:{minor}").resolve()
        # a partition's parent holds queue/rotational
        for cand in (sys_dev, sys_dev.parent):
            rot = cand / "queue" / "rotational"
            if rot.exists():
                name = cand.name
                if name.startswith("nvme"):
                    return "nvme"
                return "hdd" if rot.read_text().strip() == "1" else "ssd"
    except (OSError, ValueError):
        pass
    return "unknown"


def torch_versions() -> tuple[str | None, str | None]:
    """(torch version, CUDA version torch was built for) read from files, not by importing torch."""
    try:
        tv = version("torch")
    except PackageNotFoundError:
        return None, None
    cuda = None
    spec = find_spec("torch")
    if spec and spec.origin:
        vfile = Path(spec.origin).parent / "version.py"
        try:
            m = re.search(r"^cuda(?::\s*\S+)?\s*=\s*['\"]([^'\"]+)['\"]", vfile.read_text(), re.M)
            cuda = m.group(1) if m else None
        except OSError:
            pass
    return tv, cuda


def host_facts() -> dict[str, Any]:
    """This host once, for every caller (detect, telemetry.environment, proofs.environment):
    hostname, CPU model, physical cores and threads, CPU MHz, RAM, OS, Python, torch and its CUDA."""
    tv, cuda = torch_versions()
    freq = None
    try:
        f = psutil.cpu_freq()
        freq = float(f.current) if f else None
    except Exception:  # no cpufreq on some VMs and containers
        pass
    return {
        "hostname": platform.node(),
        "cpu_model": cpu_model(),
        "cores": psutil.cpu_count(logical=False) or psutil.cpu_count() or 1,
        "threads": psutil.cpu_count() or 1,
        "cpu_freq_mhz": freq,
        "ram_bytes": int(psutil.virtual_memory().total),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "torch_version": tv,
        "torch_cuda": cuda,
    }


def nvml_gpus() -> tuple[list[DetectedGPU], str, str | None]:
    """(GPUs, status line, driver version) through aiworkbook.nvml (the process-wide NVML state the
    telemetry shares); never raises."""
    why = nvml.ensure()
    if why is not None:
        return [], Msg("gpu.none_found", why=why), None
    driver, _ = nvml.attempt("nvmlSystemGetDriverVersion")
    driver = None if driver is None else str(nvml.text(driver))
    n, why = nvml.attempt("nvmlDeviceGetCount")
    if why is not None:
        return [], Msg("gpu.none_found", why=why), None
    if not n:
        return [], Msg("gpu.none_found", why=Msg("gpu.zero_devices")), driver
    gpus = []
    for i in range(int(n)):
        h, why = nvml.attempt("nvmlDeviceGetHandleByIndex", i)
        if why is not None:
            return [], Msg("gpu.none_found", why=Msg("gpu.unreadable", index=i, why=why)), driver
        name, _ = nvml.attempt("nvmlDeviceGetName", h)
        name = str(nvml.text(name)) if name is not None else f"GPU {i}"
        mem_info, _ = nvml.attempt("nvmlDeviceGetMemoryInfo", h)
        mem = int(mem_info.total) if mem_info is not None else 0
        cc, _ = nvml.attempt("nvmlDeviceGetCudaComputeCapability", h)
        mig, _ = nvml.attempt("nvmlDeviceGetMigMode", h)
        uuid, _ = nvml.attempt("nvmlDeviceGetUUID", h)
        gpus.append(
            DetectedGPU(
                index=i,
                name=name,
                uuid=str(nvml.text(uuid)) if uuid is not None else "",
                memory_total_bytes=mem,
                compute_capability=".".join(map(str, cc)) if cc is not None else "",
                mig_mode="n/a" if mig is None else ("enabled" if mig[0] else "disabled"),
                catalogue_name=match_catalogue(name, mem),
            )
        )
    return gpus, Msg("gpu.found", n=len(gpus), names=gpus[0].name), driver


#: How far the reported memory may be from the catalogue's usable_memory_bytes and still match.
MEMORY_TOLERANCE = 0.10


def match_catalogue(nvml_name: str, memory_bytes: int = 0) -> str | None:
    """Map an NVML name ('NVIDIA H100 80GB HBM3') and its memory total to a catalogue entry, or None.

    The catalogue entry lists the NVML names it answers to (`nvml_names` in data/gpus/gpus.json);
    the name must be one of them (case and spacing aside), and `memory_bytes` within MEMORY_TOLERANCE
    of the entry's usable_memory_bytes; unknown memory (0) matches nothing."""
    wanted = _normal(nvml_name)
    for spec in list_gpus():
        if wanted not in {_normal(n) for n in spec.nvml_names}:
            continue
        if memory_bytes > 0 and abs(memory_bytes - spec.usable_memory_bytes) <= (
            MEMORY_TOLERANCE * spec.usable_memory_bytes
        ):
            return spec.name
    return None


def _normal(name: str) -> str:
    return " ".join(name.upper().split())


def detect(path: str = ".") -> NodeProfile:
    """This machine: CPU, cores, RAM, disk free and type, GPUs (or why none), torch and CUDA."""
    gpus, status, driver = nvml_gpus()
    host = host_facts()
    disk = shutil.disk_usage(path)
    cat = gpus[0].catalogue_name if gpus else None
    name = Msg("node.this", host=host["hostname"] or "localhost")
    return NodeProfile(
        name=name,
        description="detected",
        gpu=cat,
        gpu_count=len(gpus),
        cpu_model=host["cpu_model"],
        cpu_cores=host["cores"],
        cpu_threads=host["threads"],
        ram_bytes=host["ram_bytes"],
        local_storage_bytes=int(disk.total),
        disk_free_bytes=int(disk.free),
        storage_type=storage_type(path),
        detected=True,
        gpus_detected=tuple(gpus),
        gpu_status=status,
        messages={k: r for k, r in (("name", record(name)), ("gpu_status", record(status))) if r is not None},
        os=host["os"],
        python=host["python"],
        torch_version=host["torch_version"],
        cuda_version=host["torch_cuda"],
        driver_version=driver,
    )
