"""The terminal table of `aiworkbook monitor`: one line per GPU and one for the host."""

from __future__ import annotations

from typing import Any

from aiworkbook.telemetry.na import is_number
from aiworkbook.telemetry.sample import Sample
from aiworkbook.units import GiB, fmt_bytes, fmt_rate


def _f(v: Any, fmt: str, unit: str = "") -> str:
    return f"{v:{fmt}}{unit}" if is_number(v) else "n/a"


def _rate(v: Any) -> str:
    """Host disk and network rates in decimal units (kB/s, MB/s, GB/s), like every rate in the kit."""
    return fmt_rate(v, "auto") if is_number(v) else "n/a"


def render_table(sample: Sample, names: list[str] | None = None, status: str = "") -> str:
    names = names or []
    head = f"{'GPU':<4}{'name':<26}{'util':>6}{'mem used/total':>24}{'power/limit':>16}{'temp':>6}{'SM MHz':>12}  throttle"
    lines = [status, head] if status else [head]
    for g in sample.gpus:
        i = g.get("index", 0)
        name = (names[i] if i < len(names) else "")[:25]
        used, total = g.get("mem_used_bytes"), g.get("mem_total_bytes")
        mem = (
            f"{_f(used / GiB if is_number(used) else None, '.1f')}/"
            f"{_f(total / GiB if is_number(total) else None, '.1f')} GiB"
        )
        power = f"{_f(g.get('power_w'), '.0f')}/{_f(g.get('power_limit_w'), '.0f')} W"
        clocks = f"{_f(g.get('sm_clock_mhz'), '.0f')}/{_f(g.get('sm_clock_max_mhz'), '.0f')}"
        thr = g.get("throttle_reasons")
        thr = ",".join(thr) or "none" if isinstance(thr, list) else "n/a"
        lines.append(
            f"{i:<4}{name:<26}{_f(g.get('util_gpu_pct'), '.0f', '%'):>6}{mem:>24}{power:>16}"
            f"{_f(g.get('temp_gpu_c'), '.0f', 'C'):>6}{clocks:>12}  {thr}"
        )
    h = sample.host
    if h:
        lines.append(
            f"host  cpu {_f(h.get('cpu_pct'), '.0f', '%')}  load {_f(h.get('load_1m'), '.2f')}  "
            f"ram {fmt_bytes(h['ram_used_bytes']) if is_number(h.get('ram_used_bytes')) else 'n/a'}  "
            f"disk r {_rate(h.get('disk_read_bps'))} w {_rate(h.get('disk_write_bps'))}  "
            f"net rx {_rate(h.get('net_rx_bps'))} tx {_rate(h.get('net_tx_bps'))}"
        )
    if sample.phase:
        lines.append(f"phase: {sample.phase}")
    return "\n".join(lines)
