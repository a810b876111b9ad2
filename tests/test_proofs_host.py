"""CPU-node proof: bandwidth, HistGradientBoosting fit scaling, peak RSS and Parquet reads, at small sizes."""

from __future__ import annotations

import mmap
import threading

import pytest

from aiworkbook.errors import SpecError
from aiworkbook.proofs import hostnode as H
from aiworkbook.proofs import registry
from aiworkbook.proofs.control import Control


def test_thread_counts_and_data_bytes():
    assert H.thread_counts(6) == [1, 2, 4, 6]
    assert H.thread_counts(1) == [1]
    assert H.data_bytes(1000, 9) == 1000 * 10 * 8


def test_fit_runs_the_requested_trees_in_chunks():
    x, y = H.make_table(2000, 5)
    seen = []
    control = Control(progress=lambda done, total, msg: seen.append(done))
    assert H.fit(x, y, 1, 12, control, "fit") > 0
    assert seen == [5, 10, 12]


def test_peak_rss_sees_an_allocation():
    # Fresh anonymous pages, each written once: the allocator cannot hand back memory that an earlier test in
    # this worker freed but kept resident (np.ones could, and then RSS did not move: seen in CI).
    size = 64 * 2**20
    with H.PeakRSS(interval=0.001) as p:
        before = p.peak
        m = mmap.mmap(-1, size)
        for off in range(0, size, mmap.PAGESIZE):
            m[off] = 1
        # held until the sampler thread has run once more (a loaded machine may not schedule it in time
        # otherwise); bounded, so a sampler that never sees it still fails
        seen = threading.Event()
        for _ in range(2000):
            if p.peak - before > 48 * 2**20:
                seen.set()
                break
            seen.wait(0.005)
        m.close()
    assert p.peak - before > 48 * 2**20


def test_host_proof_reports_scaling_rss_and_parquet(tmp_path):
    r = registry.run("host", dir=str(tmp_path), quick=True, rows=3000, cols=6, iterations=5, threads=2)
    assert r.verdict == "info" and r.unit == "B"
    assert r.predicted == H.data_bytes(3000, 6)
    assert [s["threads"] for s in r.details["scaling"]] == [1, 2]
    assert all(s["rows_per_s"] > 0 for s in r.details["scaling"])
    pq = r.details["parquet"]
    assert pq["file_bytes"] > 0 and pq["cold"]["file_bps"] > 0 and pq["warm"]["file_bps"] > 0
    assert r.details["bandwidth"]["copy_bps"] > 0
    assert list(tmp_path.iterdir()) == []


def test_cancel_and_bad_input(tmp_path):
    ev = threading.Event()
    ev.set()
    assert registry.run("host", cancel=ev, dir=str(tmp_path), quick=True).verdict == "interrupted"
    with pytest.raises(SpecError, match="rows"):
        registry.plan("host", rows=10)
    with pytest.raises(SpecError, match="threads"):
        registry.run("host", dir=str(tmp_path), quick=True, threads=0)


def test_host_cli(tmp_path, capsys):
    from aiworkbook.cli import main

    argv = [
        "prove",
        "host",
        "--dir",
        str(tmp_path),
        "--rows",
        "2000",
        "--cols",
        "4",
        "--iterations",
        "5",
        "--threads",
        "1",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "host on cpu" in out and "1 threads:" in out
