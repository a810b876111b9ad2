"""aiworkbook.charts: pure Altair builders, data in, `alt.Chart` out. No Jupyter import here; the
widgets wrap these charts, reports render them to SVG with `render.to_svg` (offline)."""

from aiworkbook import _lazy_iri  # noqa: F401  (first: ~1.3 s less to import altair; see its docstring)
from aiworkbook.charts.heatmap import heatmap_chart, heatmap_data
from aiworkbook.charts.latency import latency_chart
from aiworkbook.charts.memory import memory_chart
from aiworkbook.charts.proofs import proofs_chart
from aiworkbook.charts.render import enable_offline, to_svg
from aiworkbook.charts.roofline import roofline_chart
from aiworkbook.charts.telemetry import telemetry_chart

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
