"""Shared test fixtures. GPU-only tests are marked `gpu` and skipped here when CUDA is absent."""

from __future__ import annotations

import importlib.util
import os

import pytest

# The machine's facts a proof sizes itself by (last-level cache, cores) are fixed for the whole run,
# subprocesses and notebook kernels included, so no result depends on the machine that runs the
# suite (aiworkbook/hostfacts.py). Set AIWORKBOOK_HOST yourself to run the suite as another machine,
# e.g. AIWORKBOOK_HOST=llc=512MiB,cores=16,threads=16 make test (docs/contributing.md).
os.environ.setdefault("AIWORKBOOK_HOST", "llc=32MiB,cores=2,threads=2")


def _cuda_available() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config, items):
    if _cuda_available():
        return
    skip = pytest.mark.skip(
        reason="needs a CUDA GPU; this machine has none (the CPU path is tested separately)"
    )
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
