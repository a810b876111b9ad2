"""Restore proof: cold-cache restore throughput, every tensor checked against the saved one.

A checkpoint with its manifest found in `dir` (the folder `prove checkpoint --keep` printed, or a
folder `checkpoint.save_checkpoint` wrote in a training script), or else in the newest
`aiworkbook-checkpoint-*` folder inside `dir`, is restored as it is, read-only; otherwise the proof saves
the same state as the checkpoint proof first, so a restore always reads a checkpoint it can verify.
Either way it is set beside a plain sequential cold read of the same size, written like everything
this proof writes in its own new folder inside `dir` (proofs/scratch.py).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.proofs import checkpoint as C
from aiworkbook.proofs import flags as F
from aiworkbook.proofs import fsio, scratch
from aiworkbook.proofs.control import NULL, Control
from aiworkbook.proofs.environment import capture
from aiworkbook.proofs.inputs import CheckpointInputs, RestoreInputs
from aiworkbook.proofs.registry import Plan
from aiworkbook.proofs.result import ProofResult
from aiworkbook.proofs.stats import summarize


def existing(dir: str | None, fmt: str) -> Path | None:
    """The checkpoint to restore as it is (see the module's doc), or None. Read-only."""
    for folder in scratch.kept(dir, "checkpoint"):
        try:
            p = C.latest(folder, fmt)
        except SpecError:
            continue
        if (p / C.MANIFEST).is_file():
            return p
    return None


def plan(inputs: RestoreInputs) -> Plan:
    fmt = C._check_format(inputs.format)
    p = C.plan(CheckpointInputs.of({k: v for k, v in inputs.given().items() if k != "format"}))
    est = C.estimate_storage(*C._inputs(inputs.model, inputs.size_mb, bool(inputs.quick)))
    found = existing(inputs.dir, fmt)
    sizes = dict(p.sizes)
    if found is not None:
        sizes.update(state_bytes=fsio.tree_bytes(found), existing=str(found))
    how = Msg("restore.existing", path=str(found)) if found is not None else Msg("restore.saves_first")
    return replace(
        p,
        proof="restore",
        predicted=est["assumed_read_bps"],
        predicted_label=Msg("restore.read_speed"),
        sizes=sizes,
        notes=(*p.notes, Msg("restore.plan", how=how, rate=est["assumed_read_bps"])),
    )


def run(inputs: RestoreInputs, *, control: Control = NULL) -> ProofResult:
    fmt = C._check_format(inputs.format)
    scratch.root(inputs.dir)  # a bad --dir is refused before any lookup
    found = existing(inputs.dir, fmt)
    if found is not None:
        return _restore_existing(found, fmt, inputs, control)
    fmts = C.parse_formats(fmt if inputs.formats is None else inputs.formats)
    fmts = (fmt, *(f for f in fmts if f != fmt))
    m = C.measure_inputs(inputs, fmts, control, "restore")
    return C.result("restore", m, fmt, inputs.gpus, C.recorded(inputs), restore=True)


def _restore_existing(path: Path, fmt: str, inputs: RestoreInputs, control: Control) -> ProofResult:
    d = scratch.root(inputs.dir)
    n = inputs.trials or (1 if inputs.quick else 3)
    man = C.read_manifest(path)  # checked before anything is allocated from it: a SpecError saying why
    nbytes = fsio.tree_bytes(path)
    fsio.check_free(d, nbytes)  # the baseline file
    reads, bad, cold = [], [], []
    for _ in range(n):
        seconds, differ, c = C.timed_restore(path, fmt, man, control)
        reads.append(seconds)
        bad.extend(differ)
        cold.append(c)
    with scratch.scratch(d, "restore", keep=bool(inputs.keep)) as own:
        base = C.baseline(own.path, nbytes, n, control)
    est = C.estimate_storage(None, nbytes)
    rates = [nbytes / s for s in reads]
    rs = summarize(reads).median
    flags = [F.FSYNCED]
    if all(c[0] for c in cold) and base["cache_cold"]:
        flags.append(F.CACHE_COLD)
    notes: list[str] = [
        Msg(
            "restore.summary",
            path=str(path),
            size=nbytes,
            seconds=rs,
            rate=nbytes / rs,
            ratio=nbytes / rs / base["read_bps"],
            integrity=Msg("restore.integrity_ok")
            if not bad
            else Msg("restore.integrity_failed", tensors=len(set(bad))),
        )
    ]
    why = next((c[1] for c in cold if not c[0]), "") or base["cold_note"]
    if why:
        notes.append(Msg("cache.not_cold.reads", why=why))
    notes.append(Msg("restore.read_only", path=str(path), scratch=own.note()))
    row = {
        "format": fmt,
        "path": str(path),
        "bytes": nbytes,
        "restore_s": rs,
        "read_bps": nbytes / rs,
        "read_vs_baseline": nbytes / rs / base["read_bps"],
        "restore_samples_s": reads,
        "integrity": "ok" if not bad else f"{len(set(bad))} tensors differ",
        "mismatched": sorted(set(bad))[:10],
    }
    return ProofResult(
        proof="restore",
        device="cpu",
        inputs={"dir": str(d), "format": fmt, "trials": n, "existing": str(path)},
        measured=nbytes / rs,
        unit="B/s",
        predicted=est["assumed_read_bps"],
        predicted_label=Msg("restore.read_speed"),
        verdict="fail" if bad else "",
        samples=rates,
        stats=summarize(rates),
        flags=flags,
        environment=capture("cpu"),
        details={
            "formats": [row],
            "baseline": base,
            "existing": True,
            "dir": str(d),
            "scratch": str(own.path),
            "kept": own.keep,
            "fs": fsio.fs_type(d),
        },
        notes=notes,
    )
