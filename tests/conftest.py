"""Shared test fixtures. GPU-only tests are marked `gpu` and skipped here when CUDA is absent."""

from __future__ import annotations

import importlib.util

import pytest


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
