"""Prometheus exposition text, written by prometheus_client: every /metrics body and textfile the project
writes is a set of metric families (`prometheus_client.core.GaugeMetricFamily`, ...) collected through
a `CollectorRegistry` and rendered by the library's own `generate_latest`, so escaping, number spelling
(1.0, NaN, +Inf) and the counter rules are the reference client's, not ours.

Two things stay here because the library leaves them to the caller: a label value's control characters
other than newline (the format escapes only \\, " and newline; a raw CR or ESC would end a line for a
reader with universal newlines or move a terminal's cursor), and the content types we promise.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

#: the classic text format, what dcgm-exporter serves and node_exporter's textfile collector reads
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: OpenMetrics 1.0 (counters' samples end in _total, the body ends with "# EOF")
OPENMETRICS_CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"


def label_value(v: Any) -> str:
    """`v` as a label value whose control characters (other than newline, which the library escapes)
    are written as their visible escape text (\\r, \\x1b, \\x00), so the file parses line by line and
    a terminal showing it is safe."""
    text = str(v)
    if text.isprintable():
        return text
    return "".join(c if c == "\n" or c.isprintable() else repr(c)[1:-1] for c in text)


class _Families:
    """A collector that yields whatever `families()` builds at the moment of each collection."""

    def __init__(self, families: Callable[[], Iterable[Metric]]) -> None:
        self._families = families

    def collect(self) -> Iterable[Metric]:
        return list(self._families())


def registry(families: Callable[[], Iterable[Metric]]) -> CollectorRegistry:
    """A registry of its own (never the process-wide default) holding one collector that builds
    `families()` on every scrape or write."""
    reg = CollectorRegistry(auto_describe=False)
    reg.register(_Families(families))
    return reg


def text(families: Iterable[Metric] | CollectorRegistry) -> str:
    """The classic text format (0.0.4) of `families` (or of a registry's collection)."""
    reg = families if isinstance(families, CollectorRegistry) else registry(lambda: families)
    return generate_latest(reg).decode()


def openmetrics_text(families: Iterable[Metric] | CollectorRegistry) -> str:
    """OpenMetrics 1.0 text of `families` (or of a registry's collection), ending with "# EOF"."""
    reg = families if isinstance(families, CollectorRegistry) else registry(lambda: families)
    return generate_openmetrics(reg).decode()
