"""Rendering without a network: SVG through vl-convert (reports, tests) and offline Jupyter charts.

Altair's default HTML loads vega from a CDN, which never loads in CI or behind a firewall.
"""

from __future__ import annotations

from typing import Any


def to_svg(chart: Any) -> str:
    """The chart as a standalone SVG string, rendered in-process by vl-convert (no browser, no CDN)."""
    import vl_convert as vlc

    return vlc.vegalite_to_svg(chart.to_dict(), vl_version=_vl_version())


def _vl_version() -> str | None:
    """Altair's Vega-Lite version as vl-convert names it ("v6.4.1" -> "6.4"); None (vl-convert's
    default) when this vl-convert does not bundle it."""
    import altair as alt
    import vl_convert as vlc

    major, minor = alt.SCHEMA_VERSION.lstrip("v").split(".")[:2]
    version = f"{major}.{minor}"
    return version if version in vlc.get_vegalite_versions() else None


def enable_offline() -> None:
    """Make `alt.JupyterChart` load its JavaScript from the installed packages (call once per kernel)."""
    import altair as alt

    alt.JupyterChart.enable_offline()
