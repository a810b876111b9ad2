"""Sizing: pure functions from a Workload on a GPU to an itemised Estimate. No torch, no Jupyter.

from aiworkbook.sizing import Workload, estimate
est = estimate(load_model("llama-3-8b"), Workload(mode="infer", concurrency=8), gpu="H100-SXM")
est.memory.kv_cache, est.memory.formulas["kv_cache"], est.to_dict()
"""

from aiworkbook.sizing.assumptions import Assumptions
from aiworkbook.sizing.estimate import Estimate, estimate
from aiworkbook.sizing.memory import COMPONENTS, MemoryBreakdown, components, memory_breakdown
from aiworkbook.sizing.sweep import memory_grid
from aiworkbook.sizing.workload import Workload

__all__ = [
    "Assumptions",
    "COMPONENTS",
    "Estimate",
    "MemoryBreakdown",
    "Workload",
    "components",
    "estimate",
    "memory_breakdown",
    "memory_grid",
]
