"""Pre-flight for a serving engine on a shared GPU: who holds the memory now (NVML) and whether the
engine's own start-up rule lets it start next to them (vLLM: aiworkbook.preflight.vllm)."""

from aiworkbook.preflight.gpu import Device, NoGPU, Tenant, cgroup_of, read_devices
from aiworkbook.preflight.vllm import Preflight, check_device, preflight, run

__all__ = [
    "Device",
    "NoGPU",
    "Preflight",
    "Tenant",
    "cgroup_of",
    "check_device",
    "preflight",
    "read_devices",
    "run",
]
