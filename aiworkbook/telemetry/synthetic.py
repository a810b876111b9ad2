"""A synthetic trace generator: plausible H100-SXM-like LLM serving telemetry (idle, load weights,
prefill, decode, idle) for demos and tests where no GPU and no recorded trace exist.

Every trace it makes is labelled "synthetic" in its header: it is not a measurement.
"""

from __future__ import annotations

import datetime as _dt
import random
from typing import Any

from aiworkbook.telemetry.gpu_metrics import decode_throttle
from aiworkbook.telemetry.sample import Sample
from aiworkbook.units import GiB, MiB

_PHASES = (("idle", 0.12), ("load", 0.08), ("prefill", 0.13), ("decode", 0.55), ("idle", 0.12))


def synthetic_trace(
    seconds: float = 120.0, interval: float = 1.0, seed: int = 0
) -> tuple[dict[str, Any], list[Sample]]:
    """(header, samples) of a synthetic one-GPU trace; deterministic for a given seed."""
    rng = random.Random(seed)
    n = max(2, int(seconds / interval))
    bounds, acc = [], 0.0
    for name, share in _PHASES:
        acc += share
        bounds.append((acc * n, name))
    energy_mj = 5_000_000_000
    mem_used = 600 * MiB
    t0, wall0 = 1000.0, 1_767_225_600.0  # 2026-01-01T00:00:00Z, fixed so the file is reproducible
    samples = []
    for k in range(n):
        phase = next(name for b, name in bounds if k < b)
        if phase == "idle":
            util, mem_util, power, sm, mask, rx = 0.0, 0.0, 72.0, 345.0, 0x1, 0.2e6
        elif phase == "load":
            util, mem_util, power, sm, mask, rx = 8.0, 3.0, 120.0, 1980.0, 0x0, 24e9
            mem_used = min(mem_used + 4 * GiB, 18 * GiB)
        elif phase == "prefill":
            util, mem_util, power, sm, mask, rx = 100.0, 38.0, 690.0, 1755.0, 0x4 if k % 3 else 0x0, 0.5e6
        else:
            util, mem_util, power, sm, mask, rx = 97.0, 88.0, 455.0, 1980.0, 0x0, 0.3e6
            mem_used = min(mem_used + GiB // 4, 62 * GiB)  # KV cache grows
        power = max(60.0, power + rng.gauss(0, power * 0.03))
        energy_mj += int(power * interval * 1000)
        gpu = {
            "index": 0,
            "mem_total_bytes": 85_520_809_984,
            "mem_used_bytes": mem_used,
            "mem_free_bytes": 85_520_809_984 - mem_used - 570_425_344,
            "mem_reserved_bytes": 570_425_344,
            "util_gpu_pct": util,
            "util_mem_pct": mem_util,
            "temp_gpu_c": round(32 + power / 18 + rng.gauss(0, 0.5), 1),
            "power_w": round(power, 1),
            "power_limit_w": 700.0,
            "energy_mj": energy_mj,
            "sm_clock_mhz": sm,
            "mem_clock_mhz": 2619.0,
            "pstate": 0,
            "throttle_mask": mask,
            "throttle_reasons": decode_throttle(mask),
            "ecc_volatile_corrected": 0,
            "ecc_volatile_uncorrected": 0,
            "ecc_aggregate_corrected": 0,
            "ecc_aggregate_uncorrected": 0,
            "remapped_correctable": 0,
            "remapped_uncorrectable": 0,
            "remap_pending": False,
            "remap_failure": False,
            "pcie_gen": 5,
            "pcie_width": 16,
            "pcie_tx_bps": round(rx / 20, 1),
            "pcie_rx_bps": round(rx, 1),
            "processes": []
            if phase == "idle" and k < n / 2
            else [{"pid": 4242, "name": "python", "used_bytes": mem_used - 500 * MiB}],
            "sm_clock_max_mhz": 1980.0,
            "mem_clock_max_mhz": 2619.0,
            "nvlink_active": 18,
            "nvlink_links": 18,
            "power_avg_w": round(power, 1) if k else {"na": "first sample (no delta yet)"},
        }
        host = {
            "cpu_pct": round(max(0.0, (4 if phase == "idle" else 14) + rng.gauss(0, 2)), 1),
            "load_1m": 1.2,
            "ram_total_bytes": 2 * 1024 * GiB,
            "ram_used_bytes": 40 * GiB + (30 * GiB if phase != "idle" else 0),
            "disk_read_bps": 3.2e9 if phase == "load" else 0.0,
            "disk_write_bps": 0.0,
            "net_rx_bps": 2e6 if phase in ("prefill", "decode") else 1e4,
            "net_tx_bps": 6e6 if phase == "decode" else 1e4,
        }
        from aiworkbook.telemetry.na import from_json

        samples.append(
            Sample(
                t=t0 + k * interval, wall=wall0 + k * interval, phase=phase, gpus=(from_json(gpu),), host=host
            )
        )
    header = {
        "source": "synthetic",
        "gpu": "NVIDIA H100 80GB HBM3",
        "recorded_at": _dt.datetime.fromtimestamp(wall0, _dt.timezone.utc).isoformat(timespec="seconds"),
        "interval_s": interval,
        "gpu_status": "synthetic: 1 NVIDIA GPU(s): NVIDIA H100 80GB HBM3",
        "gpus": [
            {
                "index": 0,
                "name": "NVIDIA H100 80GB HBM3",
                "uuid": "GPU-synthetic-0000",
                "bus_id": "00000000:18:00.0",
                "driver": "synthetic",
                "cuda_driver": "synthetic",
                "vbios": "synthetic",
                "compute_capability": "9.0",
                "memory_total_bytes": 85_520_809_984,
                "mig_mode": "disabled",
                "mig_instances": [],
            }
        ],
        "capabilities": [],
        "host": {"hostname": "synthetic", "os": "synthetic"},
        "note": "SYNTHETIC: generated by aiworkbook.telemetry.synthetic, not measured on any GPU. "
        "Phases idle/load/prefill/decode/idle of an LLM server, with H100-SXM-like power, clocks and memory.",
    }
    from aiworkbook.telemetry.replay import trace_label

    header["label"] = trace_label(header)
    return header, samples
