"""Where the shipped catalogues (data/) live: the source tree, or the installed wheel."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path


@cache
def data_dir() -> Path:
    """The catalogue folder: $AIWORKBOOK_DATA, else the repository's data/, else the wheel's copy."""
    env = os.environ.get("AIWORKBOOK_DATA")
    if env:
        return Path(env)
    source = Path(__file__).resolve().parents[1] / "data"
    if (source / "models").is_dir():
        return source
    from importlib.resources import files

    return Path(str(files("aiworkbook._data")))
