"""Where the shipped catalogues (data/) live: the installed wheel's copy, or the source tree's."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path


@cache
def data_dir() -> Path:
    """The catalogue folder: $AIWORKBOOK_DATA, else aiworkbook/_data (a wheel), else the repository's data/."""
    env = os.environ.get("AIWORKBOOK_DATA")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent
    for candidate in (here / "_data", here.parent / "data"):  # wheel layout, then source/editable layout
        if (candidate / "models").is_dir():
            return candidate
    raise FileNotFoundError(
        f"aiworkbook's catalogues (models/, gpus/, nodes/) are neither in {here / '_data'} nor in "
        f"{here.parent / 'data'}; reinstall the package or set AIWORKBOOK_DATA"
    )


#: cached JupyterChart bundles are `CHART_BUNDLE_PREFIX` + 32 hex digits + ".js" in cache_dir()
#: (aiworkbook.charts.render.enable_offline writes them)
CHART_BUNDLE_PREFIX = "jupyterchart-"
#: set by the dashboard server for its kernels: the URL path under which it serves those bundles, so a
#: page loads one bundle for all of its charts (aiworkbook.widgets.base.chart_view)
CHART_JS_ENV = "AIWORKBOOK_CHART_JS"
#: the dashboard token reaches the Voilà server through this variable (also read by `aiworkbook app`)
TOKEN_ENV = "AIWORKBOOK_TOKEN"


def cache_dir() -> Path:
    """aiworkbook's cache folder: $XDG_CACHE_HOME/aiworkbook, else ~/.cache/aiworkbook."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aiworkbook"
