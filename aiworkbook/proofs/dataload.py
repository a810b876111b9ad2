"""Dataset read and input wait: shards generated on disk, read through a torch DataLoader (workers,
pin_memory, prefetch swept) cold and warm, then a training loop whose compute step is a real model step
or a calibrated sleep, reporting the input-wait fraction (time blocked in `next(loader)` over the step
window, as torchtitan counts it) beside GPU utilisation from telemetry in the same window and the
same loop on synthetic on-device data. The red flag: GPUs idle while data loads (> 10 % wait, docs/architecture.md).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from aiworkbook import hostfacts
from aiworkbook.errors import SpecError
from aiworkbook.message import Joined, Msg, quoted
from aiworkbook.proofs import flags as F
from aiworkbook.proofs import fsio, scratch
from aiworkbook.proofs.control import NULL, Control
from aiworkbook.proofs.device import resolve_device
from aiworkbook.proofs.environment import capture
from aiworkbook.proofs.inputs import DataloadInputs
from aiworkbook.proofs.progress import steps as progress_steps
from aiworkbook.proofs.progress import units as progress_units
from aiworkbook.proofs.registry import Plan
from aiworkbook.proofs.result import ProofResult
from aiworkbook.units import KiB

THRESHOLD = 0.10  # the red flag (docs/architecture.md): more than 10 % of the step window waiting for input


class ShardDataset(Dataset):
    """Fixed-size samples in raw shard files, read with pread (one descriptor per worker process)."""

    def __init__(self, files: list[Path], samples_per_shard: int, sample_bytes: int) -> None:
        self.files = [str(f) for f in files]
        self.per = samples_per_shard
        self.size = sample_bytes
        self._fds: dict[tuple[int, int], int] = {}

    def __len__(self) -> int:
        return len(self.files) * self.per

    def _fd(self, shard: int) -> int:
        key = (os.getpid(), shard)  # a forked worker must not share its parent's descriptors' offsets
        if key not in self._fds:
            self._fds[key] = os.open(self.files[shard], os.O_RDONLY)
        return self._fds[key]

    def __getitem__(self, i: int) -> torch.Tensor:
        shard, k = divmod(int(i), self.per)
        data = os.pread(self._fd(shard), self.size, k * self.size)
        return torch.frombuffer(bytearray(data), dtype=torch.uint8)

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


def generate(
    directory: Path, shards: int, samples_per_shard: int, sample_bytes: int, control: Control = NULL
) -> list[Path]:
    """Random shards, fsynced, so the first epoch reads storage (after a cache drop)."""
    rng = np.random.default_rng(0)
    files = []
    for s in progress_steps(
        range(shards), lambda i, _: Msg("progress.generate_shard", i=i + 1, n=shards), control=control
    ):
        path = directory / f"shard-{s:05d}.bin"
        with open(path, "wb") as f:
            left = samples_per_shard * sample_bytes
            while left:
                n = min(left, fsio.CHUNK)
                f.write(rng.integers(0, 256, n, dtype=np.uint8).tobytes())
                left -= n
            f.flush()
            os.fsync(f.fileno())
        files.append(path)
    fsio.fsync_path(directory)
    return files


def loader(
    ds: ShardDataset, batch: int, workers: int, pin: bool, prefetch: int, shuffle: bool = False
) -> DataLoader:
    kw: dict[str, Any] = {"prefetch_factor": prefetch, "persistent_workers": False} if workers else {}
    return DataLoader(ds, batch_size=batch, num_workers=workers, pin_memory=pin, shuffle=shuffle, **kw)


def read_epoch(ds: ShardDataset, dl: DataLoader, control: Control, label: str) -> dict[str, Any]:
    n = len(dl)
    t0 = time.perf_counter()
    samples = 0
    for i, b in enumerate(dl):
        samples += b.shape[0]
        progress_units(control, i + 1, n, label)
    dt = time.perf_counter() - t0
    return {"seconds": dt, "samples_per_s": samples / dt, "bytes_per_s": samples * ds.size / dt}


def sweep(
    ds: ShardDataset, files: list[Path], configs: list[tuple[int, bool, int]], batch: int, control: Control
) -> list[dict[str, Any]]:
    """A cold epoch (page cache dropped) and a warm one per (workers, pin_memory, prefetch)."""
    rows = []
    for workers, pin, prefetch in configs:
        row: dict[str, Any] = {
            "workers": workers,
            "pin_memory": pin,
            "prefetch": prefetch if workers else None,
        }
        cold = [fsio.drop_cache(f) for f in files]
        row["cache_cold"] = all(c[0] for c in cold)
        row["cold_note"] = next((c[1] for c in cold if not c[0]), "")
        for kind in ("cold", "warm"):
            said = Msg("progress.epoch.cold") if kind == "cold" else Msg("progress.epoch.warm")
            label = Msg("progress.epoch", epoch=said, workers=workers, pin=pin, prefetch=prefetch)
            row[kind] = read_epoch(ds, loader(ds, batch, workers, pin, prefetch), control, label)
        rows.append(row)
    return rows


def calibrated_sleep(step_s: float) -> float:
    """The sleep argument that lasts `step_s` on this host (time.sleep overshoots by a roughly fixed amount)."""
    over = []
    for _ in range(5):
        t0 = time.perf_counter()
        time.sleep(step_s)
        over.append(time.perf_counter() - t0 - step_s)
    return max(0.0, step_s - float(np.median(over)))


class _Step:
    """The compute step: a calibrated sleep, or a real forward/backward/AdamW step of a small MLP."""

    def __init__(self, compute: str, step_s: float, sample_bytes: int, device: str) -> None:
        self.compute, self.device = compute, device
        if compute == "sleep":
            self.arg = calibrated_sleep(step_s)
        else:
            width = min(sample_bytes, 4096)
            self.width = width
            self.net = torch.nn.Sequential(
                torch.nn.Linear(width, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 1)
            ).to(device)
            self.opt = torch.optim.AdamW(self.net.parameters(), lr=1e-4)

    def __call__(self, batch: torch.Tensor) -> None:
        if self.compute == "sleep":
            time.sleep(self.arg)
            # the batch's non_blocking copy overlaps the sleep; the step ends when it lands
            if self.device == "cuda":
                torch.cuda.synchronize()
            return
        x = batch[:, : self.width].to(self.device, non_blocking=True).float().div_(255)
        loss = self.net(x).square().mean()
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        if self.device == "cuda":
            torch.cuda.synchronize()


def train_loop(batches, step: _Step, steps: int, device: str, control: Control, label: str) -> dict[str, Any]:
    """Run `steps` steps after one warm-up step; wait = time blocked in next(batches)."""
    it = iter(batches)
    t_first = time.perf_counter()
    step(next(it))  # workers spin up here: kept out of the window
    first = time.perf_counter() - t_first
    waits, steps_s = [], []
    t_start = time.monotonic()
    w0 = time.perf_counter()
    for i in range(steps):
        t0 = time.perf_counter()
        try:
            b = next(it)
        except StopIteration:
            break
        t1 = time.perf_counter()
        if device == "cuda" and b.device.type == "cpu":
            b = b.to(device, non_blocking=True)
        step(b)
        waits.append(t1 - t0)
        steps_s.append(time.perf_counter() - t0)
        progress_units(control, i + 1, steps, label)
    window = time.perf_counter() - w0
    return {
        "steps": len(waits),
        "window_s": window,
        "wait_s": float(sum(waits)),
        "input_wait_fraction": float(sum(waits)) / window if window else 0.0,
        "step_s_median": float(np.median(steps_s)) if steps_s else None,
        # the step alone, its wait for input left out: with compute="model" this is what the GPU took, not step_ms
        "compute_s_median": float(np.median(np.subtract(steps_s, waits))) if steps_s else None,
        "first_batch_s": first,
        "t_start": t_start,
        "t_end": time.monotonic(),
    }


def _synthetic(batch: int, sample_bytes: int, device: str):
    b = torch.randint(0, 256, (batch, sample_bytes), dtype=torch.uint8, device=device)
    while True:
        yield b


def gpu_utilisation(since: float, until: float, device: str) -> dict[str, Any]:
    """Mean GPU utilisation in the window from the shared sampler; 'not available' (with why) otherwise."""
    if device != "cuda":
        return {"available": False, "why": Msg("dataload.util_na", why=Msg("dataload.util_no_gpu"))}
    try:
        from aiworkbook.telemetry import get_sampler

        s = get_sampler().window(since, until).summary()
    except Exception as exc:
        return {
            "available": False,
            "why": Msg("dataload.util_na", why=quoted(f"{type(exc).__name__}: {exc}")),
        }
    m = {k: v["mean"] for k, v in s["metrics"].items() if k.endswith(".util_gpu_pct")}
    if not m:
        why = next((r for k, r in s["unavailable"].items() if k.endswith(".util_gpu_pct")), None)
        return {
            "available": False,
            "why": Msg("dataload.util_na", why=why or Msg("dataload.util_no_samples")),
        }
    return {"available": True, "mean_pct": m, "n_samples": s["n_samples"]}


def utilisation_words(util: dict[str, Any]) -> Msg | str:
    """Each GPU's mean utilisation as a percentage in the language ("gpu0 8.0%"), or why there is none
    (the H200 note printed the sampler's dict: "{'gpu0.util_gpu_pct': 8.0}")."""
    means = util.get("mean_pct")
    if not isinstance(means, dict) or not means:
        why = util.get("why", "")
        return why if isinstance(why, Msg) else str(why)  # why there is none, a message where it is ours
    parts: list[Any] = []
    for i, (key, pct) in enumerate(sorted(means.items())):
        parts += [", "] if i else []
        parts.append(Msg("dataload.gpu_util_one", gpu=key.split(".")[0], share=pct / 100))
    return Joined(*parts)


def _sizes(
    quick: bool, shards: int | None, samples_per_shard: int | None, sample_kb: float | None
) -> tuple[int, int, int]:
    sh = shards or (2 if quick else 8)
    per = samples_per_shard or (64 if quick else 1024)
    size = int((sample_kb or (16 if quick else 128)) * KiB)
    for name, v in (("shards", sh), ("samples_per_shard", per), ("sample_kb", size)):
        if v < 1:
            raise SpecError(name, v, ">= 1")
    return sh, per, size


def _ints(value: str | int | list[int], field: str, low: int) -> list[int]:
    """'0,2,4', 3 or [0, 2] as a list of ints >= low; anything else is a SpecError naming the field."""
    try:
        items = [int(v) for v in (str(value).split(",") if isinstance(value, str | int) else value)]
    except ValueError:
        items = []
    if not items or any(v < low for v in items):
        raise SpecError(field, value, f"integers >= {low}, comma-separated")
    return items


def _configs(
    workers: str | int | list[int] | None, quick: bool, device: str, prefetch: str | int | list[int]
) -> list[tuple[int, bool, int]]:
    """(workers, pin_memory, prefetch) to sweep; prefetch varies only where there are workers."""
    if workers is None:
        cpus = hostfacts.logical_cpus()
        ws = [0, 2] if quick else sorted({0, 1, 2, min(4, cpus), min(8, cpus)})
    else:
        ws = _ints(workers, "workers", 0)
    pfs = _ints(prefetch, "prefetch", 1)
    pins = [False, True] if device == "cuda" and not quick else [device == "cuda"]
    return [(w, p, f) for w in ws for p in pins for f in (pfs if w else pfs[:1])]


def plan(inputs: DataloadInputs) -> Plan:
    i = inputs
    sh, per, size = _sizes(i.quick, i.shards, i.samples_per_shard, i.sample_kb)
    dev = resolve_device(i.device).device
    cfgs = _configs(i.workers, i.quick, dev, i.prefetch)
    total = sh * per * size
    return Plan(
        proof="dataload",
        device=dev,
        predicted=THRESHOLD,
        predicted_label=Msg("dataload.threshold"),
        unit="fraction",
        sizes={
            "dataset_bytes": total,
            "shards": sh,
            "samples": sh * per,
            "sample_bytes": size,
            "configs": len(cfgs),
        },
        rough_s=2.0 * len(cfgs) + total / 2e8,
        notes=(Msg("dataload.plan", shards=sh, samples=per, size=size, total=total, configs=len(cfgs)),),
    )


def _check_threshold(threshold: float) -> None:
    """The red-flag fraction, open at both ends (the model states the other inputs' bounds)."""
    if not 0 < threshold < 1:
        raise SpecError("threshold", threshold, "0 < threshold < 1")


def _timed_loops(
    ds,
    files,
    best: dict,
    compute: str,
    step_ms: float,
    size: int,
    dev: str,
    batch: int,
    n_steps: int,
    control: Control,
):
    """The training loop on the best loader (page cache dropped first), then on synthetic on-device data."""
    step = _Step(compute, step_ms / 1000, size, dev)
    sub = _subscribe(dev)
    try:
        for f in files:
            fsio.drop_cache(f)
        dl = loader(ds, batch, best["workers"], best["pin_memory"], best["prefetch"] or 2, shuffle=True)
        real = train_loop(dl, step, n_steps, dev, control, Msg("progress.train_loader"))
        synth = train_loop(
            _synthetic(batch, size, dev),
            step,
            n_steps,
            dev,
            control,
            Msg("progress.train_synthetic"),
        )
    finally:
        if sub is not None:
            sub.close()
    return real, synth


def _step_words(compute: str, step_ms: float, real: dict) -> Msg:
    """The step as it ran: a sleep lasts step_ms; a model step lasts what the device took (measured)."""
    if compute == "sleep" or real.get("compute_s_median") is None:
        return Msg("dataload.step_set", compute=compute, step_ms=step_ms)
    return Msg("dataload.step_measured", step_ms=real["compute_s_median"] * 1000)


def loop_loader(rows: list[dict]) -> dict:
    """The swept loader the training loop runs on: the fastest warm epoch among those with worker
    processes, since workers=0 reads each batch inside the step and can never overlap it with compute
    (its epoch alone is fastest, with no inter-process copy, yet it stalls a fast GPU step the most:
    67.7 % input wait on an H200, data/reference-runs/). workers=0 only when it is
    all that was swept."""
    overlapping = [r for r in rows if r["workers"] > 0]
    return max(overlapping or rows, key=lambda r: r["warm"]["samples_per_s"])


def _notes(
    real: dict,
    synth: dict,
    best: dict,
    rows: list,
    util: dict,
    compute: str,
    step_ms: float,
    threshold: float,
) -> list[str | Msg]:
    """What the input-wait fraction came from, and whether the cold epochs really were cold."""
    frac = real["input_wait_fraction"]
    notes: list[str] = [
        Msg(
            "dataload.summary",
            wait=frac,
            steps=real["steps"],
            step=_step_words(compute, step_ms, real),
            workers=best["workers"],
            pin=best["pin_memory"],
            prefetch=best["prefetch"],
            synthetic=synth["input_wait_fraction"],
            threshold=threshold,
        ),
        Msg("dataload.gpu_util", util=utilisation_words(util)),
    ]
    if best["workers"] > 0 and any(r["workers"] == 0 for r in rows):
        notes.append(Msg("dataload.overlap", workers=best["workers"]))
    why = next((r["cold_note"] for r in rows if r["cold_note"]), "")
    if why:
        notes.append(Msg("cache.not_cold.epochs", why=why))
    return notes


def run(inputs: DataloadInputs, *, control: Control = NULL) -> ProofResult:
    i = inputs
    dir, shards, samples_per_shard, sample_kb = i.dir, i.shards, i.samples_per_shard, i.sample_kb
    batch, workers, prefetch, compute, step_ms = i.batch, i.workers, i.prefetch, i.compute, i.step_ms
    steps, threshold, device, quick, keep = i.steps, i.threshold, i.device, i.quick, i.keep
    _check_threshold(threshold)
    choice = resolve_device(device)
    dev = choice.device
    sh, per, size = _sizes(quick, shards, samples_per_shard, sample_kb)
    cfgs = _configs(workers, quick, dev, prefetch)
    d = scratch.root(dir)
    fsio.check_free(d, sh * per * size)
    n_steps = steps or min(sh * per // batch - 1, 20 if quick else 200)
    if n_steps < 1:
        raise SpecError(
            "steps", n_steps, Msg("allowed.steps_dataset", batches=sh * per // batch, batch=batch)
        )
    with scratch.scratch(d, "dataload", keep=keep) as own:
        files = generate(own.path, sh, per, size, control)
        ds = ShardDataset(files, per, size)
        try:
            rows = sweep(ds, files, cfgs, batch, control)
            best = loop_loader(rows)
            real, synth = _timed_loops(ds, files, best, compute, step_ms, size, dev, batch, n_steps, control)
        finally:
            ds.close()
    util = gpu_utilisation(real["t_start"], real["t_end"], dev)
    frac = real["input_wait_fraction"]
    flags = [*choice.flags]
    if all(r["cache_cold"] for r in rows):
        flags.append(F.CACHE_COLD)
    notes = _notes(real, synth, best, rows, util, compute, step_ms, threshold)
    notes.append(own.note())
    return ProofResult(
        proof="dataload",
        device=dev,
        inputs={
            "dir": str(d),
            "shards": sh,
            "samples_per_shard": per,
            "sample_bytes": size,
            "batch": batch,
            "workers": str(workers),
            "prefetch": prefetch,
            "compute": compute,
            "step_ms": step_ms,
            "steps": n_steps,
            "threshold": threshold,
            "device": device,
            "quick": quick,
        },
        measured=frac,
        unit="fraction",
        predicted=threshold,
        predicted_label=Msg("dataload.threshold"),
        verdict="pass" if frac <= threshold else "fail",
        flags=flags,
        environment=capture(dev),
        details={
            "sweep": [{k: v for k, v in r.items()} for r in rows],
            "loop": {k: v for k, v in real.items() if not k.startswith("t_")},
            "synthetic": {k: v for k, v in synth.items() if not k.startswith("t_")},
            "slowdown_vs_synthetic": real["window_s"] / synth["window_s"] if synth["window_s"] else None,
            "gpu_utilisation": util,
            "dataset_bytes": sh * per * size,
            "scratch": str(own.path),
            "kept": own.keep,
            "fs": fsio.fs_type(d),
        },
        notes=notes,
    )


def _subscribe(device: str):
    """Keep the shared sampler running for the loop's window (GPU runs only)."""
    if device != "cuda":
        return None
    try:
        from aiworkbook.telemetry import get_sampler

        return get_sampler().subscribe(lambda batch: None, interval=0.1)
    except Exception:
        return None
