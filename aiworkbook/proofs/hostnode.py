"""CPU node proof (the classical-ML pattern): host memory bandwidth, a real gradient-boosted fit
(scikit-learn's HistGradientBoosting) on generated tabular data with rows/s against threads 1..N and
peak RSS beside the data's in-memory size (the RAM headroom feature engineering needs), and
Parquet columnar read throughput (pyarrow) cold and warm.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from aiworkbook import hostfacts
from aiworkbook.message import Msg
from aiworkbook.proofs import flags as F
from aiworkbook.proofs import fsio, scratch
from aiworkbook.proofs.control import NULL, Control
from aiworkbook.proofs.environment import capture
from aiworkbook.proofs.inputs import HostInputs
from aiworkbook.proofs.progress import steps as progress_steps
from aiworkbook.proofs.progress import units as progress_units
from aiworkbook.proofs.registry import Plan
from aiworkbook.proofs.result import ProofResult
from aiworkbook.units import MiB

ITER_CHUNK = 5  # boosting iterations per unit of work (warm_start continues the fit): cancel lands between


def data_bytes(rows: int, cols: int) -> int:
    """In-memory size of the generated table: float64 features + a float64 target."""
    return rows * (cols + 1) * 8


def make_table(rows: int, cols: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Features N(0, 1); a non-linear target with noise, so boosting has something to learn."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols))
    y = np.sin(x[:, 0]) + x[:, 1] * x[:, 2 % cols] + 0.1 * rng.standard_normal(rows)
    return x, y


def thread_counts(n: int | None = None) -> list[int]:
    """1, 2, 4, ... up to the CPU count, and the CPU count itself."""
    top = n or hostfacts.logical_cpus()
    out, t = [], 1
    while t < top:
        out.append(t)
        t *= 2
    return [*out, top]


class PeakRSS:
    """Samples this process's RSS every few ms in a thread; `peak` is the highest seen."""

    def __init__(self, interval: float = 0.005) -> None:
        import psutil

        self._proc = psutil.Process()
        self.interval = interval
        self.peak = self._proc.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, self._proc.memory_info().rss)

    def __enter__(self) -> PeakRSS:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._proc.memory_info().rss)


def fit(x: np.ndarray, y: np.ndarray, threads: int, iterations: int, control: Control, label: str) -> float:
    """Seconds for a HistGradientBoostingRegressor fit of `iterations` trees on `threads` OpenMP threads."""
    from sklearn.ensemble import HistGradientBoostingRegressor
    from threadpoolctl import threadpool_limits

    model = HistGradientBoostingRegressor(max_iter=0, early_stopping=False, warm_start=True, random_state=0)
    elapsed = 0.0
    with threadpool_limits(limits=threads):
        done = 0
        while done < iterations:
            done = min(iterations, done + ITER_CHUNK)
            model.set_params(max_iter=done)
            t0 = time.perf_counter()
            model.fit(x, y)
            elapsed += time.perf_counter() - t0
            progress_units(control, done, iterations, label)
    if model.n_iter_ != iterations:
        raise RuntimeError(f"the fit ran {model.n_iter_} iterations, not {iterations}")
    return elapsed


def parquet_read(directory: Path, x: np.ndarray, control: Control) -> dict[str, Any]:
    """Write the table as Parquet (fsynced), then read it cold (cache dropped) and warm."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = directory / "table.parquet"
    table = pa.table({f"f{i}": x[:, i] for i in range(x.shape[1])})
    pq.write_table(table, path)
    fsio.fsync_path(path)
    fsio.fsync_path(directory)
    out: dict[str, Any] = {"file_bytes": path.stat().st_size, "table_bytes": table.nbytes}
    ok, why = fsio.drop_cache(path)
    out["cache_cold"], out["cold_note"] = ok, why
    for kind in progress_steps(
        ("cold", "warm"),
        lambda _i, k: Msg("progress.parquet.cold") if k == "cold" else Msg("progress.parquet.warm"),
        control=control,
    ):
        t0 = time.perf_counter()
        got = pq.read_table(path)
        dt = time.perf_counter() - t0
        if got.num_rows != x.shape[0]:
            raise RuntimeError("the Parquet table read back a different row count")
        out[kind] = {"seconds": dt, "file_bps": out["file_bytes"] / dt, "table_bps": out["table_bytes"] / dt}
    return out


def _sizes(quick: bool, rows: int | None, cols: int | None, iterations: int | None) -> tuple[int, int, int]:
    # a typed 0 is refused by the model (HostInputs' bounds), never replaced by the default
    r = (20_000 if quick else 1_000_000) if rows is None else rows
    c = (20 if quick else 50) if cols is None else cols
    it = (10 if quick else 50) if iterations is None else iterations
    return r, c, it


def plan(inputs: HostInputs) -> Plan:
    r, c, it = _sizes(inputs.quick, inputs.rows, inputs.cols, inputs.iterations)
    import psutil

    need = data_bytes(r, c)
    avail = psutil.virtual_memory().available
    ts = thread_counts(inputs.threads)
    return Plan(
        proof="host",
        device="cpu",
        predicted=float(need),
        predicted_label=Msg("host.data_size"),
        unit="B",
        sizes={
            "rows": r,
            "cols": c,
            "iterations": it,
            "threads": ts,
            "data_bytes": need,
            "available_ram": avail,
        },
        fits=3 * need < avail,
        rough_s=len(ts) * r * it * 2e-7 + 5.0,
        notes=(Msg("host.plan", rows=r, cols=c, size=need, trees=it, threads=ts),),
    )


def run(inputs: HostInputs, *, control: Control = NULL) -> ProofResult:
    from aiworkbook.proofs.roofline import bandwidth

    dir, rows, cols, iterations = inputs.dir, inputs.rows, inputs.cols, inputs.iterations
    threads, quick, keep = inputs.threads, inputs.quick, inputs.keep
    r, c, it = _sizes(quick, rows, cols, iterations)
    d = scratch.root(dir)
    need = data_bytes(r, c)
    fsio.check_free(d, need)
    progress_units(control, 0, 1, Msg("progress.host_bandwidth"))
    bw = bandwidth(
        "cpu", buffer_bytes=(64 if quick else 512) * MiB, trials=3 if quick else 10, threads=threads
    )
    import psutil

    wx, wy = make_table(500, c)  # imports and OpenMP start-up kept out of the RSS growth and the clock
    fit(wx, wy, 1, 1, NULL, "warm-up")
    del wx, wy
    before = psutil.Process().memory_info().rss
    with PeakRSS() as peak:
        x, y = make_table(r, c)
        scaling = []
        for t in thread_counts(threads):
            s = fit(x, y, t, it, control, Msg("progress.hgb_fit", threads=t))
            scaling.append({"threads": t, "seconds": s, "rows_per_s": r * it / s})
    grown = peak.peak - before
    with scratch.scratch(d, "host", keep=keep) as own:
        pq = parquet_read(own.path, x, control)
    del x, y
    base = scaling[0]["rows_per_s"]
    for row in scaling:
        row["speedup"] = row["rows_per_s"] / base
    top = scaling[-1]
    flags = [F.LLC_RESIDENT] if bw["cache_resident"] else []
    if pq["cache_cold"]:
        flags.append(F.CACHE_COLD)
    notes: list[str] = [
        Msg("host.rss", grown=grown, need=need, ratio=grown / need),
        Msg("host.hgb", rows=top["rows_per_s"], threads=top["threads"], speedup=top["speedup"]),
        Msg("host.memory", copy=bw["copy_bps"], read=bw["read_bps"]),
        Msg("host.parquet", size=pq["file_bytes"], cold=pq["cold"]["file_bps"], warm=pq["warm"]["file_bps"]),
    ]
    if not pq["cache_cold"]:
        notes.append(Msg("cache.not_cold.parquet", why=pq["cold_note"]))
    notes.append(own.note())
    return ProofResult(
        proof="host",
        device="cpu",
        inputs={"rows": r, "cols": c, "iterations": it, "threads": threads, "quick": quick, "dir": str(d)},
        measured=float(grown),
        unit="B",
        predicted=float(need),
        predicted_label=Msg("host.data_size"),
        verdict="info",  # a fit needs more than its data; the ratio is the headroom, not an error
        flags=flags,
        environment=capture("cpu"),
        details={
            "scaling": scaling,
            "peak_rss_bytes": peak.peak,
            "rss_before_bytes": before,
            "rss_growth_bytes": grown,
            "data_bytes": need,
            "bandwidth": {k: v for k, v in bw.items() if not k.endswith("samples_bps")},
            "parquet": pq,
            "scratch": str(own.path),
            "kept": own.keep,
        },
        notes=notes,
    )
