"""aiworkbook: size AI infrastructure, then prove the sizing on the hardware in front of you.

Importing the package is cheap: subpackages load on first use, and nothing here imports torch,
NVML or Jupyter.
"""

from typing import Any


def __getattr__(name: str) -> Any:
    """`__version__` from the installed metadata, looked up on first use: reading it scans the
    installed distributions, a cost every dashboard kernel paid at start-up for a number it never shows."""
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("aiworkbook")
    except PackageNotFoundError:  # running from a source tree without an install
        return "0.0.0+source"


__all__ = ["__version__"]
