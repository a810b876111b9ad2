"""A real small tmpfs for the full-disk tests: mounted when the tests run as root (CI's container),
else the test is skipped with the reason. Unmounted on every path."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def mounted(where: Path, size_bytes: int) -> Iterator[Path]:
    """`where` as a new tmpfs of `size_bytes` (the kernel rounds up to whole pages)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root; the monkeypatched tests cover the words")
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={int(size_bytes)}", "tmpfs", str(where)],
        capture_output=True,
        timeout=30,
    )
    if done.returncode != 0:
        pytest.skip(f"tmpfs could not be mounted here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False, timeout=30)
