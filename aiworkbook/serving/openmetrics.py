"""The engine's KV pool and queue as OpenMetrics text (what a Prometheus scrape of /metrics reads)."""

from __future__ import annotations

from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from aiworkbook.telemetry.exposition import openmetrics_text

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


def families(stats: dict[str, Any], prefix: str = "aiworkbook_serve_") -> list[Metric]:
    """The engine's stats as metric families: gauges, and counters (their samples end in _total)."""
    out: list[Metric] = []
    for key, (kind, help_) in _HELP.items():
        if key in stats:
            family = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
            out.append(family(prefix + _NAMES.get(key, key), help_, value=stats[key]))
    return out


def render(stats: dict[str, Any], prefix: str = "aiworkbook_serve_") -> str:
    """OpenMetrics 1.0 text (written by prometheus_client; ends with "# EOF")."""
    return openmetrics_text(families(stats, prefix))
