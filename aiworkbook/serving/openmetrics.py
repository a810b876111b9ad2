"""The engine's KV pool and queue as OpenMetrics text (what a Prometheus scrape of /metrics reads)."""

from __future__ import annotations

from typing import Any

_HELP = {
    "kv_blocks_total": ("gauge", "KV blocks in the pool"),
    "kv_blocks_used": ("gauge", "KV blocks reserved by running sequences"),
    "kv_blocks_peak": ("gauge", "most KV blocks reserved at once since start"),
    "kv_bytes_used": ("gauge", "bytes of the reserved KV blocks"),
    "kv_bytes_total": ("gauge", "bytes of the whole KV pool"),
    "running": ("gauge", "sequences running"),
    "waiting": ("gauge", "sequences waiting for a slot or KV blocks"),
    "rejected": ("counter", "requests refused with HTTP 429"),
    "finished": ("counter", "sequences finished"),
    "cancelled": ("counter", "sequences whose client went away before their last token"),
    "tokens": ("counter", "tokens generated"),
    "prompt_tokens": ("counter", "prompt tokens prefilled (whole prompts and chunks)"),
    "iterations": ("counter", "forward passes (a static prefill, a decode step or a mixed iteration)"),
    "busy_s": ("counter", "seconds the engine spent inside forward passes"),
}
#: OpenMetrics names where the stats key differs (a unit suffix spelled out)
_NAMES = {"busy_s": "busy_seconds"}


def render(stats: dict[str, Any], prefix: str = "aiworkbook_serve_") -> str:
    lines: list[str] = []
    for key, (kind, help_) in _HELP.items():
        if key not in stats:
            continue
        name = prefix + _NAMES.get(key, key)
        lines += [f"# TYPE {name} {kind}", f"# HELP {name} {help_}"]
        lines.append(f"{name}{'_total' if kind == 'counter' else ''} {stats[key]}")
    lines.append("# EOF")
    return "\n".join(lines) + "\n"
