"""Rendering without a network: SVG through vl-convert (reports, tests) and offline Jupyter charts.

Altair's default HTML loads vega from a CDN, which never loads in CI or behind a firewall.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from aiworkbook.paths import CHART_BUNDLE_PREFIX, cache_dir

_bundle_file: Path | None = None  # the cached bundle enable_offline loaded (bundle_file())


def to_svg(chart: Any) -> str:
    """The chart as a standalone SVG string, rendered in-process by vl-convert (no browser, no CDN).

    The spec is not validated against the Vega-Lite schema here: the charts are built by this
    package (tests/test_charts.py validates every builder's spec), and validation took longer than
    drawing (about 7 of 19 s for a profile report's three charts, `cProfile` of `report --html`).
    The same spec renders to the same SVG, so a few recent ones are kept (a report drawn again, a
    dashboard's download)."""
    spec = json.dumps(chart.to_dict(validate=False), sort_keys=True)
    return _svg_of(spec, _vl_version())


@functools.lru_cache(maxsize=32)
def _svg_of(spec: str, vl_version: str | None) -> str:
    import vl_convert as vlc

    return vlc.vegalite_to_svg(json.loads(spec), vl_version=vl_version)


@functools.cache
def _vl_version() -> str | None:
    """Altair's Vega-Lite version as vl-convert names it ("v6.4.1" -> "6.4"); None (vl-convert's
    default) when this vl-convert does not bundle it."""
    import altair as alt
    import vl_convert as vlc

    major, minor = alt.SCHEMA_VERSION.lstrip("v").split(".")[:2]
    version = f"{major}.{minor}"
    return version if version in vlc.get_vegalite_versions() else None


def enable_offline(cache: bool = True) -> None:
    """Make `alt.JupyterChart` load its JavaScript from the installed packages (call once per kernel).

    vl-convert bundles that JavaScript on each call (seconds of CPU at every kernel start); with
    `cache` the bundle is kept under $XDG_CACHE_HOME/aiworkbook (or ~/.cache/aiworkbook), keyed by the
    source, the Vega-Lite version and vl-convert's version, so later kernels start faster."""
    import altair as alt
    import vl_convert as vlc

    if not cache:
        alt.JupyterChart.enable_offline()
        return
    original = vlc.javascript_bundle

    version = getattr(vlc, "__version__", "unknown")

    def cached_bundle(snippet: str, vl_version: str | None = None) -> str:
        import hashlib

        global _bundle_file
        key = hashlib.sha256(f"{version}|{vl_version}|{snippet}".encode()).hexdigest()[:32]
        path = cache_dir() / f"{CHART_BUNDLE_PREFIX}{key}.js"
        try:
            bundle = path.read_text(encoding="utf-8")
            _bundle_file = path
            return bundle
        except OSError:
            pass
        bundle = original(snippet, vl_version=vl_version)
        try:
            from aiworkbook.persist import atomic_write_text

            atomic_write_text(path, bundle)
            _bundle_file = path
        except OSError:
            pass  # a read-only home: no cache, same result
        return bundle

    vlc.javascript_bundle = cached_bundle  # type: ignore[assignment]
    try:
        alt.JupyterChart.enable_offline()
    finally:
        vlc.javascript_bundle = original  # type: ignore[assignment]


def bundle_file() -> Path | None:
    """The cached file holding the JupyterChart bundle `enable_offline` loaded (None: not cached, or
    `enable_offline` not run). The dashboard server serves it, so a page loads it once for all its
    charts (aiworkbook.widgets.base.chart_view)."""
    return _bundle_file
