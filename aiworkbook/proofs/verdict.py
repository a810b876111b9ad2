"""How a reader should take a verdict: a proof that wanted a GPU and ran on the CPU (flag cpu-fallback)
says so. Imports nothing, so the dashboards' "where" line and `prove`'s headline read it cheaply."""

from __future__ import annotations

from typing import Any

#: a proof verdict run without a GPU: the figure is real for this CPU, but says nothing of a GPU
CPU_ONLY_VERDICT = "info (CPU only)"


def cpu_only(result: dict[str, Any]) -> bool:
    """A proof that wanted a GPU and ran on the CPU because there was none (flag cpu-fallback). A proof
    of the host itself (storage, data loading) run on the CPU is a real measurement, not a fallback."""
    return "cpu-fallback" in (result.get("flags") or [])


def verdict_words(result: dict[str, Any]) -> str:
    """The verdict as a reader should take it: a CPU-fallback run's pass is information, not a GPU
    pass ("info (CPU only)"); its fail still reads as a fail, qualified."""
    v = str(result.get("verdict", ""))
    if not cpu_only(result):
        return v
    if v in ("pass", "info"):
        return CPU_ONLY_VERDICT
    return f"{v} (CPU only)"
