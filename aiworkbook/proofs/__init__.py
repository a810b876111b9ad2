"""Proofs: workloads that run on this node and put a measurement next to the estimate it tests.

`import aiworkbook.proofs` stays cheap: names that need torch load on first use.
"""

from __future__ import annotations

from importlib import import_module

_LAZY = {
    "ProofResult": "result",
    "verdict_for": "result",
    "Stats": "stats",
    "summarize": "stats",
    "Timing": "timing",
    "time_trials": "timing",
    "DeviceChoice": "device",
    "DoesNotFit": "device",
    "WouldNotFit": "device",
    "resolve_device": "device",
    "check_fits": "device",
    "oom_guard": "device",
    "FLAGS": "flags",
    "prove_roofline": "roofline",
    "calibrated_spec": "roofline",
    "roofline_chart_data": "roofline",
    "prove_vram": "vram",
    "prove_kv": "kv",
    "DecoderModel": "model",
    "SavedTensorTracker": "memory_accounting",
    "model_states": "memory_accounting",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(import_module(f"aiworkbook.proofs.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'aiworkbook.proofs' has no attribute {name!r}")
