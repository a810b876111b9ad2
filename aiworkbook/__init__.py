"""aiworkbook: size AI infrastructure, then prove the sizing on the hardware in front of you.

Importing the package is cheap: subpackages load on first use, and nothing here imports torch,
NVML or Jupyter.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("aiworkbook")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0+source"

__all__ = ["__version__"]
