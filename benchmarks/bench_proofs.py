"""Proof kit benchmark: the CPU bandwidth proof against numpy.copyto on the same buffer, same run.

The issue's bar: the proof's copy reaches >= 90 % of numpy.copyto's rate. numpy.copyto is one
thread; the proof uses torch with the thread count it reports, so both are shown: at the proof's
threads and at one thread (the like-for-like comparison). Bytes as traffic (2 x buffer) on both sides.
"""

from __future__ import annotations

import time

import numpy as np


def _median_rate(fn, nbytes: int, trials: int = 7) -> float:
    fn()
    fn()
    ts = []
    for _ in range(trials):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return 2 * nbytes / float(np.median(ts))


def _numpy_copy_rate(size: int) -> float:
    src = np.random.default_rng(0).random(size // 8)  # random float64: the same bytes as the proof's buffer
    dst = np.empty_like(src)
    return _median_rate(lambda: np.copyto(dst, src), src.nbytes)


def run() -> list[dict]:
    from aiworkbook.hostfacts import llc_bytes
    from aiworkbook.proofs.roofline import bandwidth

    cache, _ = llc_bytes()
    size = max(4 * cache, 256 * 2**20)
    ref = _numpy_copy_rate(size)
    rows = []
    for threads in (None, 1):
        bw = bandwidth("cpu", buffer_bytes=size, trials=7, threads=threads)
        rows.append(
            {
                "name": f"cpu copy bandwidth ({bw['threads']} thread{'s' if bw['threads'] > 1 else ''})",
                "value": bw["copy_bps"] / 1e9,
                "unit": "GB/s (traffic)",
                "reference": ref / 1e9,
                "ratio": bw["copy_bps"] / ref,
                "note": f"numpy.copyto (1 thread) on {size / 2**20:.0f} MiB = 4x LLC; bar: ratio >= 0.90",
            }
        )
    bw = bandwidth("cpu", buffer_bytes=size, trials=7)
    rows.append(
        {
            "name": "cpu read-only bandwidth",
            "value": bw["read_bps"] / 1e9,
            "unit": "GB/s (read once)",
            "reference": bw["copy_bps"] / 2e9,
            "ratio": bw["read_bps"] / (bw["copy_bps"] / 2),
            "note": "reduction vs the copy's read half, same buffer, same run",
        }
    )
    return rows


if __name__ == "__main__":
    for r in run():
        print(r)
