"""Sizing speed: one estimate, the 64 × 64 heatmap and the import, each beside a reference timed in the
same run (budgets from issue 3: estimate < 1 ms, heatmap < 20 ms, import < 150 ms)."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time


def _median(fn, n: int) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _import_time(module: str) -> float:
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    runs = [
        float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
        for _ in range(5)
    ]
    return statistics.median(runs)


def run() -> list[dict]:
    import numpy as np

    from aiworkbook.sizing import Workload, components, estimate, memory_grid
    from aiworkbook.specs import get_gpu, load_model

    spec, gpu = load_model("llama-3-8b"), get_gpu("H100-SXM")
    w = Workload(mode="infer", seq_len=4096, new_tokens=512, concurrency=8)
    est = _median(lambda: estimate(spec, w, gpu=gpu), 200)
    core = _median(lambda: components(spec, w, 8, 4608), 200)
    b, c = np.arange(1, 65), np.linspace(256, 32768, 64).astype(np.int64)
    grid = _median(lambda: memory_grid(spec, w, b, c), 50)
    loop = _median(lambda: [components(spec, w, int(x), int(y)) for x in b for y in c], 3)
    imp = _import_time("aiworkbook.sizing")
    base = _import_time("aiworkbook.specs")
    return [
        {
            "name": "sizing.estimate (llama-3-8b infer, H100)",
            "value": est * 1e3,
            "unit": "ms",
            "reference": core * 1e3,
            "ratio": est / core,
            "note": "reference: the vectorised memory core alone (scalar); budget 1 ms",
        },
        {
            "name": "sizing.memory_grid 64x64",
            "value": grid * 1e3,
            "unit": "ms",
            "reference": loop * 1e3,
            "ratio": grid / loop,
            "note": "reference: the same 4096 cells as a Python loop; budget 20 ms",
        },
        {
            "name": "import aiworkbook.sizing",
            "value": imp * 1e3,
            "unit": "ms",
            "reference": base * 1e3,
            "ratio": imp / base,
            "note": "reference: import aiworkbook.specs (pydantic catalogue, loaded lazily by sizing); budget 150 ms",
        },
    ]


if __name__ == "__main__":
    for row in run():
        print(row)
