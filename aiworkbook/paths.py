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
