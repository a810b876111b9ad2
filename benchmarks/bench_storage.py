"""Storage benchmark: checkpoint formats against plain sequential I/O of the same size in the same
directory, same run (fsynced writes, cache-cold reads), and the input pipeline against synthetic data.

The issue's bar: the safetensors checkpoint reaches >= 80 % of the plain sequential write. The
directory is AIWB_BENCH_DIR (default: the system temp dir; on tmpfs the figures are memory speeds and
the row says so). AIWB_BENCH_STORAGE_MB sets the checkpoint size (default 256 MiB).
"""

from __future__ import annotations

import os
import shutil
import tempfile


def run() -> list[dict]:
    from aiworkbook.proofs import checkpoint as C
    from aiworkbook.proofs import dataload as D
    from aiworkbook.proofs import fsio

    size_mb = float(os.environ.get("AIWB_BENCH_STORAGE_MB", "256"))
    work = tempfile.mkdtemp(prefix="aiwb-bench-storage-", dir=os.environ.get("AIWB_BENCH_DIR"))
    try:
        fs = fsio.fs_type(work)
        m = C.measure(size_mb=size_mb, dir=work, formats="safetensors,torch,dcp,dcp-async", trials=3)
        base = m["baseline"]
        note = f"{size_mb:g} MiB on {fs or 'unknown fs'}" + (
            " (memory fs: not storage)" if fs in fsio.MEMORY_FS else ""
        )
        cold = "" if base["cache_cold"] else f"; reads NOT cold: {base['cold_note']}"
        rows = []
        for r in m["formats"]:
            rows.append(
                {
                    "name": f"checkpoint write {r['format']} / sequential",
                    "value": r["write_bps"],
                    "unit": "B/s",
                    "reference": base["write_bps"],
                    "ratio": r["write_bps"] / base["write_bps"],
                    "note": ("target >= 0.8; " if r["format"] == "safetensors" else "") + note,
                }
            )
            rows.append(
                {
                    "name": f"checkpoint restore {r['format']} / sequential",
                    "value": r["read_bps"],
                    "unit": "B/s",
                    "reference": base["read_bps"],
                    "ratio": r["read_bps"] / base["read_bps"],
                    "note": f"touched and cold{cold}",
                }
            )
        sync = next(r for r in m["formats"] if r["format"] == "dcp")
        asy = next(r for r in m["formats"] if r["format"] == "dcp-async")
        rows.append(
            {
                "name": "training-loop stall dcp-async / dcp sync",
                "value": asy["loop_stall_s"],
                "unit": "s",
                "reference": sync["loop_stall_s"],
                "ratio": asy["loop_stall_s"] / sync["loop_stall_s"] if sync["loop_stall_s"] else None,
                "note": "lower is better: staging + slowed overlapping steps vs the whole sync write",
            }
        )
        r = D.run(dir=work, quick=True, workers="0", step_ms=10, device="cpu")
        rows.append(
            {
                "name": "dataload input-wait fraction / synthetic",
                "value": r.measured,
                "unit": "fraction",
                "reference": r.details["synthetic"]["input_wait_fraction"],
                "ratio": r.details["slowdown_vs_synthetic"],
                "note": "ratio = loop window / synthetic window (1.0 = the loader never stalls the loop)",
            }
        )
        return rows
    finally:
        shutil.rmtree(work, ignore_errors=True)
