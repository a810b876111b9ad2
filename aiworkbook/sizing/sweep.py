"""Sweeps: total memory over numpy grids in one vectorised pass (for heatmaps and widgets)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiworkbook.sizing.memory import evaluate
from aiworkbook.sizing.onepass import sizing_pass
from aiworkbook.sizing.workload import Workload

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from aiworkbook.specs.protocol import ModelSpecLike


def memory_grid(
    spec: ModelSpecLike,
    w: Workload,
    batches: npt.ArrayLike,
    lengths: npt.ArrayLike,
    device: str = "cuda",
    component: str = "total",
) -> npt.NDArray[np.int64]:
    """A len(batches) × len(lengths) int64 array of one component (default: total bytes).

    Training: micro-batch × sequence length. Inference: concurrency × context.
    """
    import numpy as np

    from aiworkbook.errors import SpecError

    w.check_against(spec)
    b = np.asarray(batches, dtype=np.int64)[:, None]
    s = np.asarray(lengths, dtype=np.int64)[None, :]
    for name, arr in (("batches", b), ("lengths", s)):
        if arr.size == 0 or arr.min() < 1:
            raise SpecError(name, arr.ravel().tolist()[:4], "one or more integers >= 1")
    # every component grows with b and s: if the largest corner is exact in int64, every cell is
    p = sizing_pass(spec, w, device)  # the terms once; both shapes below are evaluated from them
    corner = evaluate(p, int(b.max()), int(s.max())).components
    if max(int(v) for v in corner.values()) > 2**62:
        raise SpecError("lengths", int(s.max()), "a grid whose largest cell stays below 2**62 bytes (int64)")
    out = evaluate(p, b, s).components[component]
    view = np.broadcast_to(np.asarray(out, dtype=np.int64), (b.shape[0], s.shape[1]))
    return np.array(view, dtype=np.int64, order="C")  # a writable copy
