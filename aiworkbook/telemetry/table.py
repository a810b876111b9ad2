"""The terminal table of `aiworkbook monitor`: one line per GPU and one for the host."""

from __future__ import annotations

from typing import Any

from aiworkbook.i18n_format import fixed
from aiworkbook.message import Msg, words
from aiworkbook.telemetry.na import is_number
from aiworkbook.telemetry.sample import Sample
from aiworkbook.units import GiB, fmt_bytes, fmt_rate


def _f(v: Any, digits: int, unit: str = "", lang: str = "en") -> str:
    """A reading with `digits` decimals in `lang`'s format, n/a in its words when not a number."""
    if not is_number(v):
        return Msg("value.na").render(lang)
    return (f"{v:.{digits}f}" if lang == "en" else fixed(v, digits, lang, group=False)) + unit


def _rate(v: Any, lang: str = "en") -> str:
    """Host disk and network rates in decimal units (kB/s, MB/s, GB/s), like every rate in the kit."""
    return fmt_rate(v, "auto", lang) if is_number(v) else Msg("value.na").render(lang)


def render_table(sample: Sample, names: list[str] | None = None, status: str = "", lang: str = "en") -> str:
    """The GPUs' and the host's latest readings, in `lang` (its words and number format)."""
    names = names or []
    col = {
        k: Msg(f"monitor.col.{k}").render(lang) for k in ("name", "util", "mem", "power", "temp", "throttle")
    }
    head = (
        f"{'GPU':<4}{col['name']:<26}{col['util']:>6}{col['mem']:>24}{col['power']:>16}{col['temp']:>6}"
        f"{'SM MHz':>12}  {col['throttle']}"
    )
    lines = [words(status, lang), head] if status else [head]
    for g in sample.gpus:
        i = g.get("index", 0)
        name = (names[i] if i < len(names) else "")[:25]
        used, total = g.get("mem_used_bytes"), g.get("mem_total_bytes")
        mem = (
            f"{_f(used / GiB if is_number(used) else None, 1, lang=lang)}/"
            f"{_f(total / GiB if is_number(total) else None, 1, lang=lang)} GiB"
        )
        power = f"{_f(g.get('power_w'), 0, lang=lang)}/{_f(g.get('power_limit_w'), 0, lang=lang)} W"
        clocks = f"{_f(g.get('sm_clock_mhz'), 0, lang=lang)}/{_f(g.get('sm_clock_max_mhz'), 0, lang=lang)}"
        thr = g.get("throttle_reasons")
        none, na = Msg("passive.value.none").render(lang), Msg("value.na").render(lang)
        thr = ",".join(thr) or none if isinstance(thr, list) else na
        lines.append(
            f"{i:<4}{name:<26}{_f(g.get('util_gpu_pct'), 0, '%', lang):>6}{mem:>24}{power:>16}"
            f"{_f(g.get('temp_gpu_c'), 0, 'C', lang):>6}{clocks:>12}  {thr}"
        )
    h = sample.host
    if h:
        ram = (
            fmt_bytes(h["ram_used_bytes"], lang=lang)
            if is_number(h.get("ram_used_bytes"))
            else _f(None, 0, lang=lang)
        )
        line = Msg(
            "monitor.host",
            cpu=_f(h.get("cpu_pct"), 0, "%", lang),
            load=_f(h.get("load_1m"), 2, lang=lang),
            ram=ram,
            disk_r=_rate(h.get("disk_read_bps"), lang),
            disk_w=_rate(h.get("disk_write_bps"), lang),
            rx=_rate(h.get("net_rx_bps"), lang),
            tx=_rate(h.get("net_tx_bps"), lang),
        )
        lines.append(line.render(lang))
    if sample.phase:
        lines.append(Msg("monitor.phase", phase=sample.phase).render(lang))
    return "\n".join(lines)
