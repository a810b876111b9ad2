"""Host metrics through psutil: CPU per core, load, RAM and swap, disk and network throughput,
disk latency and network errors. Rates come from counter deltas between two reads, so the first
read of a rate is NA ("first sample"). Every failing call becomes an NA, never an exception.

CPU is read at most every `cpu_interval_s` (default 0.5 s): /proc/stat counts in USER_HZ ticks
(100 per second), so a 100 ms window resolves a core's utilisation only in 10 % steps, and
generating /proc/stat costs the kernel about as much as the rest of a tick. The rest (memory,
load, disk, network) is read at most every `slow_interval_s` (default 1 s). Between reads the last
values are repeated; rates are computed over the real time between reads.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import psutil

from aiworkbook.telemetry.na import NA
from aiworkbook.telemetry.rates import RateTracker

#: Every host field a sample carries (cpu_per_core_pct is a list).
HOST_FIELDS: tuple[str, ...] = (
    "cpu_pct", "cpu_per_core_pct", "load_1m", "load_5m", "load_15m",
    "ram_total_bytes", "ram_used_bytes", "ram_available_bytes", "swap_total_bytes", "swap_used_bytes",
    "disk_read_bps", "disk_write_bps", "disk_read_latency_ms", "disk_write_latency_ms",
    "net_rx_bps", "net_tx_bps", "net_errors", "net_drops",
)  # fmt: skip


def _safe(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as exc:  # psutil.Error, OSError, NotImplementedError on exotic platforms
        return NA(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)


class HostReader:
    """Reads the host; keep one instance so rates have a previous read. `clock` is injectable."""

    source = "psutil"

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        psutil_module: Any = psutil,
        slow_interval_s: float = 1.0,
        cpu_interval_s: float = 0.5,
    ) -> None:
        self._clock = clock
        self._ps = psutil_module
        self._rates = RateTracker()
        self._slow_interval = slow_interval_s
        self._slow: dict[str, Any] = {}
        self._slow_t: float | None = None
        self._cpu_interval = cpu_interval_s
        self._cpu: dict[str, Any] = {}
        self._cpu_t: float | None = None
        _safe(lambda: self._ps.cpu_percent(percpu=True))  # primes psutil's per-core CPU deltas

    def read(self) -> dict[str, Any]:
        ps = self._ps
        t = self._clock()
        if self._cpu_t is None or t - self._cpu_t >= self._cpu_interval:
            cores = _safe(lambda: ps.cpu_percent(percpu=True))
            self._cpu = {
                "cpu_per_core_pct": cores,
                "cpu_pct": sum(cores) / len(cores)
                if isinstance(cores, list) and cores
                else NA("no CPU data"),
            }
            self._cpu_t = t
        out: dict[str, Any] = dict(self._cpu)
        if self._slow_t is None or t - self._slow_t >= self._slow_interval:
            self._slow = self._read_slow(t)
            self._slow_t = t
        out.update(self._slow)
        return out

    def _read_slow(self, t: float) -> dict[str, Any]:
        ps = self._ps
        out: dict[str, Any] = {}
        load = _safe(os.getloadavg)
        for k, name in enumerate(("load_1m", "load_5m", "load_15m")):
            out[name] = load if isinstance(load, NA) else float(load[k])
        vm = _safe(ps.virtual_memory)
        sw = _safe(ps.swap_memory)
        out["ram_total_bytes"] = vm if isinstance(vm, NA) else int(vm.total)
        out["ram_used_bytes"] = vm if isinstance(vm, NA) else int(vm.total - vm.available)
        out["ram_available_bytes"] = vm if isinstance(vm, NA) else int(vm.available)
        out["swap_total_bytes"] = sw if isinstance(sw, NA) else int(sw.total)
        out["swap_used_bytes"] = sw if isinstance(sw, NA) else int(sw.used)

        disk = _safe(ps.disk_io_counters)
        if disk is None:
            disk = NA("no disks")
        r = self._rates.rate
        get = lambda obj, attr: obj if isinstance(obj, NA) else getattr(obj, attr)  # noqa: E731
        out["disk_read_bps"] = r("disk.rb", get(disk, "read_bytes"), t)
        out["disk_write_bps"] = r("disk.wb", get(disk, "write_bytes"), t)
        # latency = busy milliseconds added / operations added (iostat's r_await, w_await)
        for op in ("read", "write"):
            ms = r(f"disk.{op}_time", get(disk, f"{op}_time"), t)
            n = r(f"disk.{op}_count", get(disk, f"{op}_count"), t)
            if isinstance(ms, NA) or isinstance(n, NA):
                out[f"disk_{op}_latency_ms"] = ms if isinstance(ms, NA) else n
            else:
                out[f"disk_{op}_latency_ms"] = ms / n if n > 0 else NA(f"no {op}s in the interval")

        net = _safe(ps.net_io_counters)
        if net is None:
            net = NA("no network interfaces")
        out["net_rx_bps"] = r("net.rx", get(net, "bytes_recv"), t)
        out["net_tx_bps"] = r("net.tx", get(net, "bytes_sent"), t)
        out["net_errors"] = net if isinstance(net, NA) else int(net.errin + net.errout)
        out["net_drops"] = net if isinstance(net, NA) else int(net.dropin + net.dropout)
        return out
