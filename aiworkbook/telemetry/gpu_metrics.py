"""What is read from each GPU per poll: metric groups (one NVML call or a few that fail together),
their field names and units, and the clocks-event (throttle) reason names.

Field names carry their unit (`_bytes`, `_pct`, `_w`, `_mhz`, `_c`, `_bps`); a group that fails
makes every one of its fields an NA with the same reason. The capability matrix is probed per group.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiworkbook.telemetry.na import NA

#: Clocks-event (throttle) reason bits as nvidia-ml-py defines them (nvmlClocksEventReason* and the
#: deprecated nvmlClocksThrottleReason* aliases, which alone name 0x200 and 0x400), by name.
#: tests/test_telemetry_nvml_api.py checks this table against the installed pynvml constants.
THROTTLE_REASONS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
    0x200: "board_limit",
    0x400: "reliability",
}


#: Each clocks-event reason in words, and whether it is information or a warning. Information: the GPU
#: is idle, runs at clocks a setting chose, or holds its power limit (sw_power_cap: any H100/H200 running
#: dense GEMMs sits at its limit; the clocks follow the power budget as designed, it is not a fault).
#: Warnings: heat (software or hardware thermal slowdown), the hardware slowdown and the power brake (an
#: external signal, e.g. the power supply), the board's limit, reliability, and any bit NVML adds later.
THROTTLE_WORDS: dict[str, tuple[str, str]] = {
    "gpu_idle": ("info", "idle: nothing runs, so the clocks are low"),
    "applications_clocks_setting": ("info", "clocks held at the application-clocks setting"),
    "sw_power_cap": ("info", "at its power limit: clocks follow the power budget, normal under full load"),
    "sync_boost": ("info", "clocks matched to the other GPUs of a sync-boost group"),
    "display_clock_setting": ("info", "clocks held at the display-clock setting"),
    "sw_thermal_slowdown": ("warning", "too hot: the driver lowers the clocks (software thermal slowdown)"),
    "hw_thermal_slowdown": ("warning", "too hot: the hardware lowers the clocks (hardware thermal slowdown)"),
    "hw_slowdown": ("warning", "hardware slowdown: the clocks are cut, for heat or power"),
    "hw_power_brake_slowdown": (
        "warning",
        "power brake: an external signal (e.g. the power supply) cuts the clocks",
    ),
    "board_limit": ("warning", "held down by a board limit"),
    "reliability": ("warning", "held down for reliability"),
}
#: the reasons that are information, not throttling (is_throttled ignores them)
BENIGN_THROTTLE: frozenset[str] = frozenset(n for n, (level, _) in THROTTLE_WORDS.items() if level == "info")


def is_throttled(reasons: Any) -> bool | None:
    """True when any reason (names as decode_throttle gives them) is a warning (THROTTLE_WORDS; an unknown
    bit is one too); None when the reasons could not be read (an NA or anything but a list)."""
    if not isinstance(reasons, list | tuple):
        return None
    return any(str(r).lower() not in BENIGN_THROTTLE for r in reasons)


def throttle_notes(reasons: Any) -> list[dict[str, str]] | None:
    """[{"reason", "level" (info or warning), "words"}] per reason; None when they could not be read."""
    if not isinstance(reasons, list | tuple):
        return None
    unknown = ("warning", "a clocks-event reason this library does not know")
    return [
        {"reason": str(r), "level": level, "words": words}
        for r in reasons
        for level, words in [THROTTLE_WORDS.get(str(r).lower(), unknown)]
    ]


def decode_throttle(mask: int) -> list[str]:
    """The names of the reasons set in a clocks-event mask (unknown bits as 'bit_0x...')."""
    names = [name for bit, name in THROTTLE_REASONS.items() if mask & bit]
    unknown = mask & ~sum(THROTTLE_REASONS)
    bit = 1
    while unknown:
        if unknown & bit:
            names.append(f"bit_{bit:#x}")
            unknown &= ~bit
        bit <<= 1
    return names


@dataclass(frozen=True)
class Group:
    """Fields read together; `read(pynvml, handle)` returns their values in order or raises NVMLError."""

    name: str
    fields: tuple[str, ...]
    read: Callable[[Any, Any], tuple]
    per_poll: bool = True  # False: identity-like, read once (not on every sample)


def _memory(nv, h) -> tuple:
    # version=nvmlMemory_v2 makes pynvml call the C symbol nvmlDeviceGetMemoryInfo_v2 and return a
    # c_nvmlMemory_v2_t (adds `reserved`: driver/ECC memory that is neither used nor free). A driver
    # without that symbol raises FunctionNotFound; one that rejects the struct version raises
    # ArgumentVersionMismatch: then fall back to v1 (c_nvmlMemory_t: total, free, used).
    fallback = tuple(
        getattr(nv, n)
        for n in (
            "NVMLError_FunctionNotFound",
            "NVMLError_NotSupported",
            "NVMLError_ArgumentVersionMismatch",
        )
        if hasattr(nv, n)
    )
    try:
        m = nv.nvmlDeviceGetMemoryInfo(h, version=nv.nvmlMemory_v2)
        return int(m.total), int(m.used), int(m.free), int(m.reserved)
    except fallback:
        m = nv.nvmlDeviceGetMemoryInfo(h)
        return int(m.total), int(m.used), int(m.free), NA("memory info v2 not available")


def _util(nv, h) -> tuple:
    u = nv.nvmlDeviceGetUtilizationRates(h)
    return float(u.gpu), float(u.memory)


def _throttle(nv, h) -> tuple:
    # nvidia-ml-py >= 12.535 always has the Python binding nvmlDeviceGetCurrentClocksEventReasons;
    # what a driver older than R535 lacks is the C symbol, so the call raises FunctionNotFound (the
    # attribute is never missing). Then ask the deprecated ThrottleReasons symbol (same bits).
    new = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None)
    if new is None:  # nvidia-ml-py older than 12.535
        mask = int(nv.nvmlDeviceGetCurrentClocksThrottleReasons(h))
    else:
        try:
            mask = int(new(h))
        except nv.NVMLError_FunctionNotFound:
            mask = int(nv.nvmlDeviceGetCurrentClocksThrottleReasons(h))
    return mask, decode_throttle(mask)


def _ecc(nv, h) -> tuple:
    f = nv.nvmlDeviceGetTotalEccErrors
    c, u = nv.NVML_MEMORY_ERROR_TYPE_CORRECTED, nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
    v, a = nv.NVML_VOLATILE_ECC, nv.NVML_AGGREGATE_ECC
    return int(f(h, c, v)), int(f(h, u, v)), int(f(h, c, a)), int(f(h, u, a))


def _remapped(nv, h) -> tuple:
    corr, unc, pending, failure = nv.nvmlDeviceGetRemappedRows(h)
    return int(corr), int(unc), bool(pending), bool(failure)


def _pcie_link(nv, h) -> tuple:
    return int(nv.nvmlDeviceGetCurrPcieLinkGeneration(h)), int(nv.nvmlDeviceGetCurrPcieLinkWidth(h))


def _pcie_tp(nv, h) -> tuple:
    # NVML reports KB/s (1024 bytes) over a 20 ms window
    tx = nv.nvmlDeviceGetPcieThroughput(h, nv.NVML_PCIE_UTIL_TX_BYTES)
    rx = nv.nvmlDeviceGetPcieThroughput(h, nv.NVML_PCIE_UTIL_RX_BYTES)
    return float(tx) * 1024.0, float(rx) * 1024.0


def _nvlink(nv, h) -> tuple:
    # nvmlDeviceGetNvLinkState(h, link) -> NVML_FEATURE_ENABLED (1) / DISABLED (0) per link. A link
    # index the device does not have raises InvalidArgument, a device (or a single floor-swept link)
    # without NVLink NotSupported: ask every link up to NVML_NVLINK_MAX_LINKS (the constant grew
    # 6 -> 12 -> 18 -> 36 across versions) rather than stop at the first gap.
    active = 0
    seen = 0
    first_error = None
    for link in range(nv.NVML_NVLINK_MAX_LINKS):
        try:
            state = nv.nvmlDeviceGetNvLinkState(h, link)
        except nv.NVMLError as exc:
            if isinstance(exc, nv.NVMLError_GpuIsLost):
                raise
            first_error = first_error or exc
            continue
        seen += 1
        active += int(state == nv.NVML_FEATURE_ENABLED)
    if seen == 0 and first_error is not None:
        raise first_error  # no link answered: not supported on this device at all
    return active, seen


def _clocks(nv, h) -> tuple:
    return (
        float(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
        float(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)),
    )


def _max_clocks(nv, h) -> tuple:
    return (
        float(nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM)),
        float(nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_MEM)),
    )


def _processes(nv, h) -> tuple:
    from aiworkbook.nvml import compute_processes
    from aiworkbook.telemetry.processes import describe

    return (describe(compute_processes(nv, h)),)


GROUPS: tuple[Group, ...] = (
    Group("memory", ("mem_total_bytes", "mem_used_bytes", "mem_free_bytes", "mem_reserved_bytes"), _memory),
    Group("utilization", ("util_gpu_pct", "util_mem_pct"), _util),
    Group(
        "temperature",
        ("temp_gpu_c",),
        lambda nv, h: (float(nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)),),
    ),
    Group("power", ("power_w",), lambda nv, h: (nv.nvmlDeviceGetPowerUsage(h) / 1000.0,)),
    Group("power_limit", ("power_limit_w",), lambda nv, h: (nv.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0,)),
    Group("energy", ("energy_mj",), lambda nv, h: (int(nv.nvmlDeviceGetTotalEnergyConsumption(h)),)),
    Group("clocks", ("sm_clock_mhz", "mem_clock_mhz"), _clocks),
    Group("max_clocks", ("sm_clock_max_mhz", "mem_clock_max_mhz"), _max_clocks, per_poll=False),
    Group("pstate", ("pstate",), lambda nv, h: (int(nv.nvmlDeviceGetPerformanceState(h)),)),
    Group("throttle", ("throttle_mask", "throttle_reasons"), _throttle),
    Group(
        "ecc",
        (
            "ecc_volatile_corrected",
            "ecc_volatile_uncorrected",
            "ecc_aggregate_corrected",
            "ecc_aggregate_uncorrected",
        ),
        _ecc,
    ),
    Group(
        "remapped_rows",
        ("remapped_correctable", "remapped_uncorrectable", "remap_pending", "remap_failure"),
        _remapped,
    ),
    Group("pcie_link", ("pcie_gen", "pcie_width"), _pcie_link),
    Group("pcie_throughput", ("pcie_tx_bps", "pcie_rx_bps"), _pcie_tp),
    Group("nvlink", ("nvlink_active", "nvlink_links"), _nvlink, per_poll=False),
    Group("processes", ("processes",), _processes),
)

#: Every per-GPU field a sample can carry, in display order (plus the derived power_avg_w rate).
FIELDS: tuple[str, ...] = tuple(f for g in GROUPS for f in g.fields) + ("power_avg_w",)
