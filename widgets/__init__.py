"""aiworkbook.widgets: the ipywidgets layer (the only package that imports ipywidgets).

Composite widgets over the library: each formats what the library computes, validates every value a
viewer sends (errors in a visible `aiwb-error` area), and carries stable CSS classes for browser tests.
Installed as `aiworkbook.widgets` from the top-level widgets/ folder; the Voilà dashboards live in
widgets/dashboards/.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_LAZY = {
    "ModelSizer": "model_sizer",
    "KVPlanner": "kv_planner",
    "GPUMonitor": "gpu_monitor",
    "FleetMonitor": "fleet_monitor",
    "ProofRunner": "proof_runner",
    "PatternPicker": "pattern_picker",
    "NodePicker": "node_picker",
    "ProfileLocker": "profile_locker",
    "PreflightPanel": "preflight_panel",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    """Widgets load on first use, so `import aiworkbook.widgets` stays cheap."""
    if name in _LAZY:
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
