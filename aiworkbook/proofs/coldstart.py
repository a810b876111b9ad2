"""Cold start: from a weights checkpoint on disk (page cache dropped) to the first forward pass on the
device: read + touch, build the model, copy to the device, first forward (warm-up) — the number that
decides whether scale-from-zero is possible.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from aiworkbook.message import Msg
from aiworkbook.proofs import flags as F
from aiworkbook.proofs import fsio, scratch, shardio
from aiworkbook.proofs.attention import pinned
from aiworkbook.proofs.checkpoint import touch
from aiworkbook.proofs.control import NULL, Control
from aiworkbook.proofs.device import resolve_device
from aiworkbook.proofs.environment import capture
from aiworkbook.proofs.inputs import ColdstartInputs
from aiworkbook.proofs.model import TORCH_DTYPES, DecoderModel, built_bytes
from aiworkbook.proofs.progress import steps as progress_steps
from aiworkbook.proofs.progress import units as progress_units
from aiworkbook.proofs.registry import Plan
from aiworkbook.proofs.result import ProofResult
from aiworkbook.proofs.stats import summarize
from aiworkbook.specs import load_model

if TYPE_CHECKING:
    from aiworkbook.specs.protocol import ModelSpecLike

PHASES = ("load_s", "build_s", "transfer_s", "first_forward_s")


def _estimate(spec: ModelSpecLike, dtype: Any) -> dict[str, Any]:
    """The bytes the proof writes and reads (the model it builds, every weight at `dtype`: a quantised
    config's checkpoint would be smaller) and the estimate's time to read them at its read speed."""
    from aiworkbook.sizing.assumptions import Assumptions
    from aiworkbook.sizing.storage import transfer_time

    nbytes = built_bytes(spec, TORCH_DTYPES[dtype])
    return {"weights_bytes": nbytes, "load_s": transfer_time(nbytes, Assumptions().storage_read_bps)}


def plan(inputs: ColdstartInputs) -> Plan:
    model, dtype, device, quick = inputs.model, inputs.dtype, inputs.device, inputs.quick
    spec = load_model(model)
    est = _estimate(spec, dtype)
    return Plan(
        proof="coldstart",
        device=resolve_device(device).device,
        predicted=est["load_s"],
        predicted_label=Msg("coldstart.load_time"),
        unit="s",
        sizes={"weights_bytes": est["weights_bytes"], "dtype": dtype, "trials": 1 if quick else 3},
        rough_s=3 * est["load_s"] + 2.0,
        notes=(Msg("coldstart.plan", size=est["weights_bytes"], dtype=dtype),),
    )


def _write_checkpoint(spec, tdt: torch.dtype, path: Path) -> Path:
    """A random model's weights as safetensors at ``path`` (a new file), synced to disk."""
    src = DecoderModel(spec, dtype=tdt)
    shardio.write_shard(path, src.state_dict())
    fsio.fsync_path(path)
    del src
    with torch.device("meta"):  # torch's one-time meta-device set-up (~3 s once per process) stays off the
        DecoderModel(spec, dtype=tdt)  # clock: process start-up and imports are not counted either
    return path


def _one_cold_start(
    path: Path, spec, tdt: torch.dtype, dev: str, ids: torch.Tensor
) -> tuple[dict[str, float], int | None]:
    """Seconds of each phase from the (cache-dropped) checkpoint to the first logits, and the bytes
    the load read from storage (None: not counted here). The load is the checkpoint proof's reader
    (shardio.load_shard: every page faulted in by the kernel, or else touched)."""
    r0 = fsio.storage_read_bytes()
    t0 = time.perf_counter()
    sd, populated = shardio.load_shard(path)
    if not populated:
        for t in sd.values():
            touch(t)
    t1 = time.perf_counter()
    r1 = fsio.storage_read_bytes()
    with torch.device("meta"):
        m = DecoderModel(spec, dtype=tdt)
    m.load_state_dict(sd, assign=True)
    m.inv_freq = _inv_freq(spec)  # a non-persistent buffer: not in the checkpoint
    t2 = time.perf_counter()
    m = m.to(dev)
    _sync(dev)
    t3 = time.perf_counter()
    with torch.no_grad():
        out = m(ids.to(dev))
    _sync(dev)
    t4 = time.perf_counter()
    if not torch.isfinite(out.float()).all():
        raise RuntimeError("the first forward pass produced non-finite logits")
    del m, sd, out
    read = None if r0 is None or r1 is None else r1 - r0
    return dict(zip(PHASES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True)), read


@pinned()  # SDPA's backend chosen, never cuDNN's per-shape graphs (proofs.attention)
def run(inputs: ColdstartInputs, *, control: Control = NULL) -> ProofResult:

    model, dir, dtype, device = inputs.model, inputs.dir, inputs.dtype, inputs.device
    trials, quick, keep = inputs.trials, inputs.quick, inputs.keep

    n = (1 if quick else 3) if trials is None else trials  # dtype and trials: bounded by the model
    choice = resolve_device(device)
    dev = choice.device
    spec = load_model(model)
    est = _estimate(spec, dtype)
    d = scratch.root(dir)
    fsio.check_free(d, est["weights_bytes"])
    fsio.check_ram(2 * est["weights_bytes"], "model", model)  # the built model + the loaded state dict
    tdt = TORCH_DTYPES[dtype]
    rows, cold = [], []
    with scratch.scratch(d, "coldstart", keep=keep) as own:
        work = own.path
        progress_units(control, 0, n + 1, Msg("progress.coldstart_write"))
        path = _write_checkpoint(spec, tdt, work / "model.safetensors")
        ids = torch.randint(0, spec.vocab_size, (1, 8))
        size = path.stat().st_size
        for _ in progress_steps(
            range(n), lambda i, _: Msg("progress.coldstart", i=i + 1, n=n), start=1, control=control
        ):
            dropped = fsio.drop_cache(path)
            row, read = _one_cold_start(path, spec, tdt, dev, ids)
            cold.append(fsio.confirm_cold(dropped, read, size))
            rows.append(row)
    totals = [sum(r.values()) for r in rows]
    med = {k: summarize([r[k] for r in rows]).median for k in PHASES}
    flags = [*choice.flags]
    if all(c[0] for c in cold):
        flags.append(F.CACHE_COLD)
    notes: list[str] = [
        Msg(
            "coldstart.summary",
            size=est["weights_bytes"],
            load_s=med["load_s"],
            rate=est["weights_bytes"] / med["load_s"],
            build_s=med["build_s"],
            transfer_s=med["transfer_s"],
            forward_s=med["first_forward_s"],
        )
    ]
    why = next((c[1] for c in cold if not c[0]), "")
    if why:
        notes.append(Msg("cache.not_cold.reads", why=why))
    notes.append(own.note())
    return ProofResult(
        proof="coldstart",
        device=dev,
        inputs={"model": model, "dtype": dtype, "device": device, "trials": n, "quick": quick, "dir": str(d)},
        measured=summarize(totals).median,
        unit="s",
        predicted=est["load_s"],
        predicted_label=Msg("coldstart.load_time"),
        verdict="info",  # the estimate predicts the read only; build, transfer and warm-up are shown beside it
        samples=totals,
        stats=summarize(totals),
        flags=flags,
        environment=capture(dev, attention=True),
        details={
            "phases_median_s": med,
            "load_vs_estimate": med["load_s"] / est["load_s"],
            "trials": rows,
            "weights_bytes": est["weights_bytes"],
            "dir": str(d),
            "scratch": str(own.path),
            "kept": own.keep,
            "fs": fsio.fs_type(d),
        },
        notes=notes,
    )


def _inv_freq(spec: ModelSpecLike) -> torch.Tensor:
    """The rotary frequencies (a non-persistent buffer, so not in the checkpoint) rebuilt off the meta device."""
    from aiworkbook.proofs.model import rope_theta

    theta = rope_theta(spec)
    return 1.0 / (theta ** (torch.arange(0, spec.head_dim, 2, dtype=torch.float32) / spec.head_dim))


def _sync(dev: str) -> None:
    if dev == "cuda":
        torch.cuda.synchronize()
