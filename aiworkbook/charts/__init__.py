"""aiworkbook.charts: pure Altair builders, data in, `alt.Chart` out. No Jupyter import here; the
widgets wrap these charts, reports render them to SVG with `render.to_svg` (offline)."""

from importlib import import_module
from typing import Any

from aiworkbook import _lazy_iri  # noqa: F401  (before altair: ~1.3 s less to import it; see its docstring)

#: name -> its module: imported on first use (PEP 562), so `aiworkbook.charts.colours` and the other
#: altair-free modules load without altair (~0.25 s a kernel); `widgets.base.load_charts` loads them all
_LAZY = {
    "enable_offline": "render",
    "heatmap_chart": "heatmap",
    "heatmap_data": "heatmap",
    "latency_chart": "latency",
    "memory_chart": "memory",
    "proofs_chart": "proofs",
    "roofline_chart": "roofline",
    "telemetry_chart": "telemetry",
    "to_svg": "render",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    globals()[name] = value
    return value


__all__ = [
    "enable_offline",
    "heatmap_chart",
    "heatmap_data",
    "latency_chart",
    "memory_chart",
    "proofs_chart",
    "roofline_chart",
    "telemetry_chart",
    "to_svg",
]
