"""Sweeps: total memory over numpy grids in one vectorised pass (for heatmaps and widgets)."""

from __future__ import annotations

from aiworkbook.sizing.memory import components
from aiworkbook.sizing.workload import Workload


def memory_grid(spec, w: Workload, batches, lengths, device: str = "cuda", component: str = "total"):
    """A len(batches) × len(lengths) int64 array of one component (default: total bytes).

    Training: micro-batch × sequence length. Inference: concurrency × context.
    """
    import numpy as np

    w.check_against(spec)
    b = np.asarray(batches, dtype=np.int64)[:, None]
    s = np.asarray(lengths, dtype=np.int64)[None, :]
    out = components(spec, w, b, s, device)[component]
    return np.broadcast_to(np.asarray(out, dtype=np.int64), (b.shape[0], s.shape[1])).copy()
