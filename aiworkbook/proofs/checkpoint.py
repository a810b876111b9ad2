"""Checkpoint proof: save a model + optimizer state durably in three formats (torch.save, safetensors,
torch.distributed.checkpoint sync and async), restore it from a cold page cache, check every tensor
against the saved one, and set the figures beside plain sequential I/O of the same size in the same
directory and beside the estimate's storage section (size, write time, Young/Daly interval).

A checkpoint is a folder `<root>/<format>/step-<n>` written under a temporary name, fsynced (files and
folder) and renamed; `<root>/<format>/LATEST` (written atomically) names the newest one. A save killed
at any point leaves the previous checkpoint and its LATEST untouched.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from aiworkbook import diskfull
from aiworkbook.errors import SpecError, printable, quote
from aiworkbook.message import Msg
from aiworkbook.persist import atomic_write_text
from aiworkbook.proofs import flags as F
from aiworkbook.proofs import fsio, scratch, shardio
from aiworkbook.proofs.control import NULL, Cancelled, Control
from aiworkbook.proofs.environment import capture
from aiworkbook.proofs.inputs import CheckpointInputs, RestoreInputs
from aiworkbook.proofs.progress import byte_counter
from aiworkbook.proofs.progress import counted_bytes as progress_bytes
from aiworkbook.proofs.progress import steps as progress_steps
from aiworkbook.proofs.progress import units as progress_units
from aiworkbook.proofs.registry import Plan
from aiworkbook.proofs.result import ProofResult
from aiworkbook.proofs.stats import summarize
from aiworkbook.signature import then
from aiworkbook.units import MiB

#: DCP says this on every single-process save and load, from its own threads too (dcp-async finishes after
#: any `catch_warnings` around the call has ended): one process is what the proof runs, so it is no news
warnings.filterwarnings(
    "ignore", message="torch.distributed is disabled, unavailable or uninitialized", category=UserWarning
)

if TYPE_CHECKING:
    from aiworkbook.specs.protocol import ModelSpecLike

FORMATS = ("safetensors", "torch", "dcp", "dcp-async")
READERS = ("populate", "safetensors")  # how safetensors shards are read (load_checkpoint)
MANIFEST = "manifest.json"
QUICK_BYTES = 32 * MiB
SHARD_BYTES = 64 * MiB  # one file per shard: a cancel lands between shards
#: safetensors shards are larger (Hugging Face's save_pretrained shards at up to 5 GB): the writer
#: reports and honours a cancel every 32 MiB inside a shard (shardio.write_shard); one file fsynced
#: instead of four: 1.23x the save rate, paired, 24 rounds (docs/proofs.md, "Beside fio")
SAFETENSORS_SHARD_BYTES = 1024 * MiB
_TENSOR_BYTES = 4 * MiB  # synthetic state: tensors of this size


# ---- the state ------------------------------------------------------------------------------------
def synthetic_state(nbytes: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """Random fp32 'weights' plus AdamW's exp_avg and exp_avg_sq for each (1/3 of the bytes each)."""
    if nbytes < 3 * 4:
        raise SpecError("size_bytes", nbytes, ">= 12 bytes")
    gen = torch.Generator().manual_seed(seed)
    per = nbytes // 3 // 4  # fp32 elements per role
    out: dict[str, torch.Tensor] = {}
    i = 0
    while per > 0:
        n = min(per, _TENSOR_BYTES // 4)
        out[f"model.w{i}"] = torch.randn(n, generator=gen)
        out[f"optim.w{i}.exp_avg"] = torch.randn(n, generator=gen)
        out[f"optim.w{i}.exp_avg_sq"] = torch.rand(n, generator=gen)
        per -= n
        i += 1
    out["optim.step"] = torch.tensor(1.0)
    return out


def model_state(spec: ModelSpecLike, seed: int = 0) -> dict[str, torch.Tensor]:
    """A DecoderModel (fp32, CPU) and its AdamW state after one step, flattened to name -> tensor."""
    from aiworkbook.proofs.model import DecoderModel

    torch.manual_seed(seed)
    model = DecoderModel(spec)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for p in model.parameters():
        p.grad = torch.randn_like(p)
    opt.step()
    names = {id(p): n for n, p in model.named_parameters()}
    out: dict[str, torch.Tensor] = {}
    seen: set[int] = set()
    for n, t in model.state_dict().items():
        out[f"model.{n}"] = t.clone() if t.data_ptr() in seen else t  # safetensors refuses shared storage
        seen.add(t.data_ptr())
    for param, st in opt.state.items():
        for k, v in st.items():
            out[f"optim.{names[id(param)]}.{k}"] = v if torch.is_tensor(v) else torch.tensor(v)
    return out


def state_bytes(state: dict[str, torch.Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in state.values())


def digest(t: torch.Tensor) -> str:
    """blake2b of the tensor's bytes (dtype and shape recorded beside it in the manifest)."""
    b = t.detach().contiguous().reshape(-1).view(torch.uint8).numpy()
    return hashlib.blake2b(b.tobytes() if not b.flags.c_contiguous else b.data, digest_size=16).hexdigest()


def touch(t: torch.Tensor) -> int:
    """Read every byte (a lazily mapped tensor is loaded only once touched): a wrapping sum of 8-byte
    words (~10 GB/s; a uint8 sum in torch runs at ~0.1 GB/s and would time the checksum, not the disk)."""
    import numpy as np

    b = t.detach().reshape(-1).view(torch.uint8).numpy()
    n = b.size - b.size % 8
    return int(b[:n].view(np.uint64).sum(dtype=np.uint64)) + int(b[n:].sum())


def shards(state: dict[str, torch.Tensor], shard_bytes: int = SHARD_BYTES) -> list[dict[str, torch.Tensor]]:
    out: list[dict[str, torch.Tensor]] = [{}]
    size = 0
    for k, t in state.items():
        n = t.numel() * t.element_size()
        if out[-1] and size + n > shard_bytes:
            out.append({})
            size = 0
        out[-1][k] = t
        size += n
    return out


# ---- save and load --------------------------------------------------------------------------------
def _check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise SpecError("format", fmt, ", ".join(FORMATS))
    return fmt


def start_save(
    root: str | os.PathLike,
    state: dict[str, torch.Tensor],
    fmt: str,
    step: int,
    *,
    control: Control = NULL,
    manifest: dict[str, Any] | None = None,
    keep: int = 1,
) -> PendingSave:
    """Begin a save: sync formats write here; dcp-async returns once async_save has staged the state,
    and the write goes on in DCP's thread. `.wait()` makes it durable, renames it and moves LATEST."""
    _check_format(fmt)
    base = Path(root) / fmt
    base.mkdir(parents=True, exist_ok=True)
    man = manifest if manifest is not None else make_manifest(state)
    tag = os.urandom(4).hex()
    tmp = base / f"{fsio.TMP_PREFIX}step-{step}-{tag}"
    final = base / f"step-{step}"
    if final.exists():  # a re-saved step gets a new folder: the old one stays until LATEST has moved
        final = base / f"step-{step}.{tag}"
    tmp.mkdir()
    t0 = time.perf_counter()
    nbytes = state_bytes(state)
    try:
        futures = _write(tmp, state, fmt, control)
    except BaseException as exc:
        full = _no_space(exc, tmp, nbytes)
        shutil.rmtree(tmp, ignore_errors=True)
        if full is not None:
            raise full from None
        raise
    return PendingSave(tmp, final, man, futures, t0, time.perf_counter() - t0, keep, nbytes)


def _no_space(exc: BaseException, tmp: Path, nbytes: int) -> diskfull.NoSpace | None:
    """A save's failure as a full disk (diskfull.is_full: ENOSPC in the chain, or torch's zip writer's
    and DCP's errors with less than the checkpoint free), read before the partial files are removed."""
    if isinstance(exc, Cancelled):
        return None
    return diskfull.as_no_space(exc, tmp, nbytes)


def _step_order(p: Path) -> tuple[int, int]:
    """Oldest first: by step number, then by when the folder was published (a re-saved step)."""
    return int(p.name[5:].split(".")[0]), p.stat().st_mtime_ns


class PendingSave:
    """A save under way: `done()` says whether its background write finished; `wait()` publishes it."""

    def __init__(
        self,
        tmp: Path,
        final: Path,
        man: dict[str, Any],
        futures: list[Any],
        t0: float,
        blocked: float,
        keep: int,
        nbytes: int = 0,
    ) -> None:
        self.tmp, self.final, self.man, self.futures = tmp, final, man, futures
        self.t0, self.blocked, self.keep, self.nbytes = t0, blocked, keep, nbytes

    def done(self) -> bool:
        return all(f.done() for f in self.futures)

    def wait(self) -> dict[str, Any]:
        try:
            for fut in self.futures:
                fut.result()
            # a plain new file: the folder is not published yet, and publish() fsyncs every file in
            # it (a temp file, fsync and rename of its own cost one more disk flush, ~4 ms here)
            with open(self.tmp / MANIFEST, "x", encoding="utf-8") as fh:
                fh.write(json.dumps(self.man, allow_nan=False))
            fsio.publish(self.tmp, self.final)
            write_s = time.perf_counter() - self.t0
        except BaseException as exc:
            full = _no_space(exc, self.tmp, self.nbytes)
            if full is not None:
                raise full from None
            raise
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)
        base = self.final.parent
        atomic_write_text(base / "LATEST", self.final.name)
        fsio.fsync_path(base)
        # the one LATEST names is never pruned, even when a restarted job saves a lower step number
        steps = sorted((p for p in base.glob("step-*") if p.is_dir() and p != self.final), key=_step_order)
        for old in steps[: max(0, len(steps) - self.keep)]:
            shutil.rmtree(old, ignore_errors=True)
        return {
            "path": str(self.final),
            "bytes": fsio.tree_bytes(self.final),
            "write_s": write_s,
            "stall_s": self.blocked if self.futures else write_s,
        }


def make_manifest(state: dict[str, torch.Tensor]) -> dict[str, Any]:
    return {
        k: {"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape), "blake2b": digest(t)}
        for k, t in state.items()
    }


def _write(tmp: Path, state: dict[str, torch.Tensor], fmt: str, control: Control) -> list[Any]:
    """Write the files; returns the futures still running (dcp-async) or []."""
    parts = shards(state, _shard_bytes(fmt) or SHARD_BYTES)
    if fmt in ("safetensors", "torch"):
        total, before = state_bytes(state), 0
        for i, part in enumerate(parts):
            msg = Msg("progress.shard_write", format=fmt, i=i + 1, n=len(parts))
            progress_bytes(control, before, total, msg)
            path = tmp / f"shard-{i:05d}.{'safetensors' if fmt == 'safetensors' else 'pt'}"
            if fmt == "safetensors":
                shardio.write_shard(path, part, byte_counter(control, total, msg, before))
            else:
                torch.save(part, path)
                shardio.start_writeback(path)
            before += state_bytes(part)
            # no fsync per shard: the disk writes this shard while the next is built; publish()
            # fsyncs every file, then the folders (torch.save and safetensors do not fsync)
        return []
    import torch.distributed.checkpoint as dcp

    progress_units(control, 0, 1, Msg("progress.dcp_save", format=fmt))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "assuming the intent is to save in a single process"
        if fmt == "dcp":
            dcp.save(state, checkpoint_id=str(tmp))
            return []
        resp = dcp.async_save(state, checkpoint_id=str(tmp))
        from concurrent.futures import Future

        # a Future, or (newer torch with a stager) an AsyncSaveResponse holding staging + upload futures
        return [resp] if isinstance(resp, Future) else [resp.staging_completion, resp.upload_completion]


def latest(root: str | os.PathLike, fmt: str) -> Path:
    """The folder LATEST names; SpecError when there is no complete checkpoint. LATEST must be a
    regular file naming one folder beside it (a link, a FIFO or a path out of the folder is refused)."""
    base = Path(root) / _check_format(fmt)
    pointer = base / "LATEST"
    allowed = f"a folder holding a {fmt} checkpoint ({pointer} naming a step folder beside it)"
    if pointer.is_symlink() or not pointer.is_file():
        raise SpecError("dir", str(root), allowed)
    try:
        with open(pointer, encoding="utf-8") as fh:
            name = fh.read(256).strip()
    except (OSError, UnicodeDecodeError):
        raise SpecError("dir", str(root), allowed) from None
    if not name or name in (".", "..") or "/" in name or "\\" in name or not (base / name).is_dir():
        raise SpecError("dir", str(root), allowed)
    return base / name


def load_checkpoint(
    path: str | os.PathLike,
    fmt: str,
    *,
    control: Control = NULL,
    template: dict[str, torch.Tensor] | None = None,
    reader: str = "populate",
) -> dict[str, torch.Tensor]:
    """Load every tensor of a checkpoint folder with every byte read (lazy mmap loads count only when
    read: mapped shards are populated by the kernel or else touched). DCP loads in place into
    `template` (built from the manifest when not given). safetensors `reader`: "populate"
    (shardio.load_shard, the default) or "safetensors" (its own load_file, then a touch of each byte)."""
    _check_format(fmt)
    if reader not in READERS:
        raise SpecError("reader", reader, ", ".join(READERS))
    p = Path(path)
    if fmt in ("safetensors", "torch"):
        out: dict[str, torch.Tensor] = {}
        files = sorted(p.glob("shard-*"))
        for f in progress_steps(
            files, lambda i, _: Msg("progress.shard_load", format=fmt, i=i + 1, n=len(files)), control=control
        ):
            read = False
            if fmt == "torch":
                part = _torch_shard(f)
            elif reader == "populate":
                part, read = shardio.load_shard(f)
            else:
                from safetensors.torch import load_file

                part = load_file(str(f))
            if not read:
                for t in part.values():
                    touch(t)
            out.update(part)
        return out
    import torch.distributed.checkpoint as dcp

    from aiworkbook.proofs.dcp_safe import SafeReader, read_metadata

    read_metadata(str(p))  # a clear SpecError here; SafeReader checks the file DCP reads again
    tpl = template if template is not None else empty_like_manifest(read_manifest(p))
    progress_units(control, 0, 1, Msg("progress.load", format=fmt))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        dcp.load(tpl, storage_reader=SafeReader(str(p)))  # DCP's own reader unpickles .metadata
    for t in tpl.values():
        touch(t)
    return tpl


MANIFEST_BYTES = 64 * MiB  # a manifest lists names, dtypes, shapes and digests: far below this


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _torch_shard(f: Path) -> dict[str, torch.Tensor]:
    """A torch.save shard read with weights_only (no code in a pickle runs); what it refuses (a blocked
    global, a truncated or corrupt zip) is a SpecError naming the file."""
    import pickle

    try:
        part = torch.load(f, weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, AttributeError, OSError) as exc:
        why = printable(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__, 160)
        raise SpecError("dir", str(f), f"a torch shard torch.load(weights_only=True) reads ({why})") from None
    if not isinstance(part, dict) or not all(isinstance(t, torch.Tensor) for t in part.values()):
        raise SpecError("dir", str(f), "a torch shard holding a dict of tensors")
    return part


def read_manifest(path: str | os.PathLike) -> dict[str, Any]:
    """The manifest of a checkpoint folder, checked before anything is allocated from it (it may be a
    folder someone else wrote): an object mapping each tensor name to a torch dtype, a shape of
    integers 0..2^63-1 and a blake2b digest, whose tensors together are no larger than the folder's
    files. Anything else is a SpecError naming the folder (exit 2), never an allocation of a typed size."""
    p = Path(path)
    allowed = f"a checkpoint whose {MANIFEST} maps each tensor name to its dtype, shape and blake2b"
    try:
        with open(p / MANIFEST, "rb") as fh:
            raw = fh.read(MANIFEST_BYTES + 1)
        if len(raw) > MANIFEST_BYTES:
            raise ValueError("too large")
        doc = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    except (OSError, ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError included
        raise SpecError("dir", str(path), allowed) from None
    if not isinstance(doc, dict):
        raise SpecError("dir", str(path), allowed + " (it is not a JSON object)")
    total = 0
    for name, entry in doc.items():
        dtype = getattr(torch, entry.get("dtype", "") if isinstance(entry, dict) else "", None)
        shape = entry.get("shape") if isinstance(entry, dict) else None
        if (
            not isinstance(dtype, torch.dtype)
            or not isinstance(shape, list)
            or not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2**63 for d in shape)
            or not isinstance(entry.get("blake2b"), str)
        ):
            raise SpecError("dir", str(path), f"{allowed} (tensor {quote(name)} does not)")
        count = 1
        for d in shape:
            count *= d
        total += count * dtype.itemsize
    on_disk = fsio.tree_bytes(p)
    if total > on_disk:
        raise SpecError(
            "dir", str(path), f"{allowed} (its tensors are {total:,} bytes, the folder holds {on_disk:,})"
        )
    return doc


def empty_like_manifest(man: dict[str, Any]) -> dict[str, torch.Tensor]:
    return {k: torch.empty(v["shape"], dtype=getattr(torch, v["dtype"])) for k, v in man.items()}


def verify(loaded: dict[str, torch.Tensor], man: dict[str, Any]) -> list[str]:
    """Names whose restored tensor differs from the saved one (missing, extra, dtype, shape or bytes)."""
    bad = sorted(set(man) ^ set(loaded))
    for k, m in man.items():
        t = loaded.get(k)
        if t is None:
            continue
        if (
            str(t.dtype).removeprefix("torch.") != m["dtype"]
            or list(t.shape) != m["shape"]
            or digest(t) != m["blake2b"]
        ):
            bad.append(k)
    return bad


def restore_latest(root: str | os.PathLike, fmt: str) -> tuple[Path, list[str]]:
    """Load the checkpoint LATEST names and check it; (its folder, tensors that differ)."""
    p = latest(root, fmt)
    return p, verify(load_checkpoint(p, fmt), read_manifest(p))


# ---- the proof ------------------------------------------------------------------------------------
def _inputs(model: str | None, size_mb: float | None, quick: bool) -> tuple[Any, int]:
    """(ModelSpec or None, bytes to save): a model when named, else a byte budget."""
    if model:
        from aiworkbook.specs import load_model

        spec = load_model(model)
        return spec, spec.params * 12  # fp32 weights + AdamW m, v: what model_state saves
    if size_mb is None:
        return None, QUICK_BYTES if quick else 512 * MiB
    if not size_mb > 0:
        raise SpecError("size_mb", size_mb, Msg("allowed.mib_to_save"))
    return None, int(size_mb * MiB)


def estimate_storage(spec: ModelSpecLike | None, nbytes: int) -> dict[str, Any]:
    """The estimate's storage section (fp32 AdamW training, the state this proof saves) and assumptions."""
    from aiworkbook.sizing.assumptions import Assumptions

    a = Assumptions()
    out: dict[str, Any] = {
        "assumed_write_bps": a.storage_write_bps,
        "assumed_read_bps": a.storage_read_bps,
        "gpu_mtbf_s": a.gpu_mtbf_hours * 3600.0,
        "restart_s": a.restart_s,
    }
    if spec is not None:
        from aiworkbook.sizing.estimate import estimate
        from aiworkbook.sizing.workload import Workload

        st = estimate(
            spec, Workload(mode="train", precision="fp32", recipe="fp32-adamw"), None, "cpu"
        ).storage
        out.update(resumable_bytes=st["resumable_bytes"], write_s=st["write_s"], restore_s=st["restore_s"])
    else:
        out.update(
            resumable_bytes=nbytes,
            write_s=nbytes / a.storage_write_bps,
            restore_s=nbytes / a.storage_read_bps,
        )
    return out


def plan(inputs: CheckpointInputs) -> Plan:
    model, size_mb, dir, formats = inputs.model, inputs.size_mb, inputs.dir, inputs.formats
    trials, quick = inputs.trials, inputs.quick
    spec, nbytes = _inputs(model, size_mb, quick)
    fmts = parse_formats(formats)
    n = trials or (1 if quick else 3)
    est = estimate_storage(spec, nbytes)
    from aiworkbook.proofs.checkpoint_room import copies_at_once

    # the data of the checkpoints on disk at once; the run adds each format's measured overhead
    need = copies_at_once(n) * nbytes
    fits = None
    if dir:
        import shutil

        d = Path(dir).expanduser()
        while not d.exists() and d != d.parent:
            d = d.parent
        fits = shutil.disk_usage(d).free >= need * 1.05
    import psutil

    if 2 * nbytes > psutil.virtual_memory().available:
        fits = False  # the state and one loaded copy must fit in host RAM
    write_s = nbytes / est["assumed_write_bps"]
    read_s = nbytes / est["assumed_read_bps"]
    return Plan(
        proof="checkpoint",
        device="cpu",
        predicted=est["assumed_write_bps"],
        predicted_label=Msg("checkpoint.write_speed"),
        unit="B/s",
        sizes={
            "state_bytes": nbytes,
            "formats": list(fmts),
            "trials": n,
            "disk_needed_bytes": need,
            "estimate_resumable_bytes": est["resumable_bytes"],
            "estimate_write_s": est["write_s"],
        },
        fits=fits,
        rough_s=(len(fmts) + 1) * n * (write_s + read_s) + 2.0,
        notes=(
            Msg("checkpoint.plan", size=nbytes, formats=len(fmts), trials=n, need=need),
            Msg("checkpoint.save_time", rate=est["assumed_write_bps"], seconds=write_s),
        ),
    )


def parse_formats(formats: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    items = formats.split(",") if isinstance(formats, str) else list(formats)
    out = tuple(_check_format(f.strip()) for f in items if f.strip())
    if not out:
        raise SpecError("formats", formats, ", ".join(FORMATS))
    return out


def baseline(work: Path, nbytes: int, trials: int, control: Control) -> dict[str, Any]:
    """Plain sequential write (fsynced) and cold read of the same size in the same directory."""
    writes, reads, cold = [], [], []
    path = work / "baseline.bin"
    for i in range(trials):
        msg = Msg("progress.baseline_write", i=i + 1, n=trials)
        writes.append(fsio.write_sequential(path, nbytes, byte_counter(control, nbytes, msg)))
        ok, why = fsio.drop_cache(path)
        cold.append((ok, why))
        msg = Msg("progress.baseline_read", i=i + 1, n=trials)
        reads.append(fsio.read_sequential(path, byte_counter(control, nbytes, msg)))
        path.unlink()
    return {
        "bytes": nbytes,
        "write_s": summarize(writes).median,
        "read_s": summarize(reads).median,
        "write_bps": nbytes / summarize(writes).median,
        "read_bps": nbytes / summarize(reads).median,
        "cache_cold": all(c[0] for c in cold),
        "cold_note": next((c[1] for c in cold if not c[0]), ""),
    }


def timed_restore(
    path: str | os.PathLike,
    fmt: str,
    man: dict[str, Any],
    control: Control = NULL,
    reader: str = "populate",
) -> tuple[float, list[str], tuple[bool, str]]:
    """One cold restore: evict the folder from the page cache, load every tensor with every byte read
    (timed), then compare each with the manifest (not timed). Returns (seconds, differing names,
    (cold, why not))."""
    cold = fsio.drop_cache(path)
    template = empty_like_manifest(man) if fmt.startswith("dcp") else None  # allocated before the clock
    r0 = fsio.storage_read_bytes()
    t0 = time.perf_counter()
    loaded = load_checkpoint(path, fmt, control=control, template=template, reader=reader)
    seconds = time.perf_counter() - t0
    r1 = fsio.storage_read_bytes()
    read = None if r0 is None or r1 is None else r1 - r0
    cold = fsio.confirm_cold(cold, read, sum(t.numel() * t.element_size() for t in loaded.values()))
    return seconds, verify(loaded, man), cold


def loop_stall(
    work: Path,
    state: dict[str, torch.Tensor],
    man: dict[str, Any],
    fmt: str,
    control: Control = NULL,
    max_steps: int = 2000,
) -> dict[str, Any]:
    """The stall a training loop sees: a fixed CPU step (matmuls) timed alone, then with a save after
    it. A sync save stalls the step by its whole write; an async one by its staging, then slows the
    steps that overlap its background write (extra time over the median step), and whatever is left
    at the end is waited for. loop_stall_s is the sum."""
    a = torch.randn(256, 256) / 16

    def step() -> float:
        t0 = time.perf_counter()
        b = a
        for _ in range(8):
            b = torch.tanh(b @ a)
        return time.perf_counter() - t0

    alone = [step() for _ in range(9)][2:]
    med = summarize(alone).median
    t0 = time.perf_counter()
    step()
    s0 = time.perf_counter()
    pending = start_save(work / "loop", state, fmt, 0, control=control, manifest=man)
    if not pending.futures:
        pending.wait()  # a sync save: the loop waits until it is durable
    ckpt_step = time.perf_counter() - t0
    blocked = time.perf_counter() - s0
    overlapped: list[float] = []
    while pending.futures and not pending.done() and len(overlapped) < max_steps:
        overlapped.append(step())
        control.check("training loop during an async save")
    t1 = time.perf_counter()
    if pending.futures:
        pending.wait()
    tail = time.perf_counter() - t1
    extra = sum(max(0.0, x - med) for x in overlapped)
    return {
        "step_s": med,
        "checkpoint_step_s": ckpt_step,
        "blocked_s": blocked,
        "overlapped_steps": len(overlapped),
        "overlapped_extra_s": extra,
        "tail_wait_s": tail,
        "loop_stall_s": max(blocked, ckpt_step - med) + extra + tail,
    }


def measure_format(
    work: Path, state: dict[str, torch.Tensor], man: dict[str, Any], fmt: str, trials: int, control: Control
) -> dict[str, Any]:
    """Save `trials` times (each a new step, the previous kept until durable), restore each cold, verify."""
    writes, stalls, reads, bad, cold = [], [], [], [], []
    nbytes = 0
    warm = {"w": torch.zeros(4)}  # first-call costs (imports, DCP planners, thread pools) stay off the clock
    save_checkpoint(work / "warmup", warm, fmt, 0, manifest=make_manifest(warm))
    load_checkpoint(latest(work / "warmup", fmt), fmt)
    for i in range(trials):
        s = save_checkpoint(work, state, fmt, i, control=control, manifest=man)
        writes.append(s["write_s"])
        stalls.append(s["stall_s"])
        nbytes = s["bytes"]
        seconds, differ, c = timed_restore(s["path"], fmt, man, control)
        reads.append(seconds)
        bad.extend(differ)
        cold.append(c)
    ws, rs = summarize(writes).median, summarize(reads).median
    loop = loop_stall(work, state, man, fmt, control)
    return {
        "format": fmt,
        **({"writer": shardio.WRITER, "reader": shardio.READER} if fmt == "safetensors" else {}),
        "bytes": nbytes,
        "write_s": ws,
        "write_bps": nbytes / ws,
        "stall_s": summarize(stalls).median,
        "loop_stall_s": loop["loop_stall_s"],
        "loop": loop,
        "restore_s": rs,
        "read_bps": nbytes / rs,
        "write_samples_s": writes,
        "restore_samples_s": reads,
        "integrity": "ok" if not bad else f"{len(set(bad))} tensors differ",
        "mismatched": sorted(set(bad))[:10],
        "cache_cold": all(c[0] for c in cold),
        "cold_note": next((c[1] for c in cold if not c[0]), ""),
    }


def _shard_bytes(fmt: str) -> int | None:
    """The most bytes per shard file of a sharded format; None for DCP (one data file per process)."""
    return {"safetensors": SAFETENSORS_SHARD_BYTES, "torch": SHARD_BYTES}.get(fmt)


def disk_peak(
    work: Path, state: dict[str, torch.Tensor], man: dict[str, Any], fmts: tuple[str, ...], trials: int
) -> int:
    """The most bytes the proof's run holds on disk at once (see proofs/checkpoint_room.py), each
    format's overhead measured by saving a miniature of `state` under `work`."""
    from aiworkbook.proofs import checkpoint_room

    def save(where: Path, mini: dict[str, torch.Tensor], fmt: str) -> Path:
        return Path(save_checkpoint(where, mini, fmt, 0, manifest=man)["path"])

    def files(fmt: str) -> int:
        per = _shard_bytes(fmt)
        return 1 if per is None else len(shards(state, per))

    rooms = [checkpoint_room.footprint(work, state, f, save, files(f)) for f in fmts]
    return checkpoint_room.peak(rooms, state_bytes(state), trials, checkpoint_room.block_size(work))


def measure(
    *,
    model: str | None = None,
    size_mb: float | None = None,
    dir: str | None = None,
    formats: str = "safetensors,torch,dcp,dcp-async",
    trials: int | None = None,
    quick: bool = False,
    control: Control = NULL,
    keep: bool = False,
    proof: str = "checkpoint",
) -> dict[str, Any]:
    """Every format and the baseline in the proof's own new folder inside `dir` (see proofs/scratch.py),
    removed afterwards. `keep` keeps that folder, holding one checkpoint of the first format as
    `<folder>/<format>/step-0` (for `prove restore --dir <folder>`); nothing else in `dir` is touched."""
    d = scratch.root(dir)
    spec, nbytes = _inputs(model, size_mb, quick)
    fmts = parse_formats(formats)
    n = trials or (1 if quick else 3)
    if n < 1:
        raise SpecError("trials", n, ">= 1")
    what = model or f"{size_mb} MiB"
    fsio.check_ram(2 * nbytes, "model" if spec is not None else "size_mb", what)  # the state + one load
    from aiworkbook.proofs import checkpoint_room

    # the data alone, before the state is built; each format's files are counted below, before writing
    fsio.check_free(d, checkpoint_room.copies_at_once(n) * nbytes)
    state = model_state(spec) if spec is not None else synthetic_state(nbytes)
    nbytes = state_bytes(state)
    man = make_manifest(state)
    rows = []
    with scratch.scratch(d, proof, keep=keep) as own:
        work = own.path / "measure"
        try:
            work.mkdir()
            try:
                fsio.check_free(d, disk_peak(work, state, man, fmts, n))
                base = baseline(work, nbytes, n, control)
                for fmt in fmts:
                    rows.append(measure_format(work, state, man, fmt, n, control))
                    for folder in (work / fmt, work / "loop", work / "warmup"):  # one format at a time
                        shutil.rmtree(folder, ignore_errors=True)
            finally:
                shutil.rmtree(work, ignore_errors=True)
            if keep:
                save_checkpoint(own.path, state, fmts[0], 0, control=control, manifest=man)
        except BaseException as exc:
            full = _no_space(exc, own.path, nbytes)
            if full is None:
                raise
            own.remove()  # kept or not: a disk that filled up keeps nothing of this run
            # the folder the user named (not a temporary gone by now) and one checkpoint's bytes: the
            # write that failed may be a small one (a warm-up, a manifest) in a folder already full
            needed = nbytes if full.needed is None else max(nbytes, full.needed)  # the run's peak, refused
            raise diskfull.NoSpace(d, needed, free=full.free) from None
    return {
        "spec": spec,
        "bytes": nbytes,
        "baseline": base,
        "formats": rows,
        "dir": str(d),
        "scratch": own,
        "fs": fsio.fs_type(d),
    }


def _flags(m: dict[str, Any]) -> list[str]:
    out = [F.FSYNCED]
    if m["baseline"]["cache_cold"] and all(r["cache_cold"] for r in m["formats"]):
        out.append(F.CACHE_COLD)
    return out


def _notes(m: dict[str, Any]) -> list[str]:
    notes: list[str] = []
    cold = [m["baseline"].get("cold_note")] + [r.get("cold_note") for r in m["formats"]]
    why = next((c for c in cold if c), "")
    if why:
        notes.append(Msg("cache.not_cold.reads", why=why))
    bad = [r["format"] for r in m["formats"] if r["integrity"] != "ok"]
    if bad:
        notes.append(Msg("checkpoint.integrity_failed_for", formats=", ".join(bad)))
    return notes


def young_daly(write_s: float, restore_s: float, est: dict[str, Any], gpus: int = 1) -> dict[str, Any]:
    """The measured write time fed into Young/Daly for a job of `gpus` GPUs at the assumed MTBF."""
    from aiworkbook.sizing import storage as S

    m = S.system_mtbf(est["gpu_mtbf_s"], gpus)
    tau = S.daly_interval(write_s, m)
    return {
        "gpus": gpus,
        "system_mtbf_s": m,
        "write_s": write_s,
        "young_interval_s": S.young_interval(write_s, m),
        "daly_interval_s": tau,
        "waste_fraction": S.waste_fraction(write_s, tau, m, est["restart_s"] + restore_s),
    }


def run(inputs: CheckpointInputs, *, control: Control = NULL) -> ProofResult:
    """The checkpoint proof: durable write throughput of `format` against the assumed storage speed."""
    fmt = _check_format(inputs.format)
    fmts = parse_formats(inputs.formats)
    fmts = (fmt, *(f for f in fmts if f != fmt))  # the headline format first: the one `keep` leaves
    m = measure_inputs(inputs, fmts, control, "checkpoint")
    return result("checkpoint", m, fmt, inputs.gpus, recorded(inputs), restore=False)


def measure_inputs(
    inputs: CheckpointInputs | RestoreInputs, fmts: tuple[str, ...], control: Control, proof: str
) -> dict[str, Any]:
    """`measure` of these formats with the rest of the checkpoint or restore proof's inputs."""
    i = inputs
    return measure(
        model=i.model, size_mb=i.size_mb, dir=i.dir, formats=",".join(fmts), trials=i.trials,
        quick=i.quick, control=control, keep=i.keep, proof=proof,
    )  # fmt: skip


def recorded(inputs: CheckpointInputs | RestoreInputs) -> dict[str, Any]:
    """The inputs a checkpoint or restore result records: those named, but for the formats and the two
    it records itself after them (the headline format and the GPUs)."""
    return {k: v for k, v in inputs.given().items() if k not in ("format", "gpus", "formats")}


def result(
    proof: str, m: dict[str, Any], fmt: str, gpus: int, inputs: dict[str, Any], *, restore: bool
) -> ProofResult:
    """A ProofResult for the checkpoint (write) or restore (read) view of one measurement."""
    est = estimate_storage(m["spec"], m["bytes"])
    row = next(r for r in m["formats"] if r["format"] == fmt)
    base = m["baseline"]
    for r in m["formats"]:
        r["write_vs_baseline"] = r["write_bps"] / base["write_bps"]
        r["read_vs_baseline"] = r["read_bps"] / base["read_bps"]
    at_measured = {
        "estimate_resumable_bytes": est["resumable_bytes"],
        "saved_bytes": m["bytes"],
        "size_ratio": m["bytes"] / est["resumable_bytes"] if est["resumable_bytes"] else None,
        "estimate_write_s_assumed": est["write_s"],
        "estimate_write_s_at_measured": est["resumable_bytes"] / row["write_bps"],
        "estimate_restore_s_at_measured": est["resumable_bytes"] / row["read_bps"],
    }
    key, pred = ("read_bps", est["assumed_read_bps"]) if restore else ("write_bps", est["assumed_write_bps"])
    samples = row["restore_samples_s" if restore else "write_samples_s"]
    rates = [row["bytes"] / s for s in samples]
    notes = _notes(m)
    notes.append(
        Msg(
            "checkpoint.summary",
            format=fmt,
            size=row["bytes"],
            write_s=row["write_s"],
            write_bps=row["write_bps"],
            write_x=row["write_vs_baseline"],
            restore_s=row["restore_s"],
            read_bps=row["read_bps"],
            read_x=row["read_vs_baseline"],
            stall_s=row["stall_s"],
            loop_s=row["loop_stall_s"],
        )
    )
    yd = young_daly(row["write_s"] * est["resumable_bytes"] / m["bytes"], row["restore_s"], est, gpus)
    notes.append(
        Msg(
            "checkpoint.young_daly",
            size=est["resumable_bytes"],
            gpus=gpus,
            minutes=yd["daly_interval_s"] / 60,
            waste=yd["waste_fraction"],
        )
    )
    if m["fs"] in fsio.MEMORY_FS:
        notes.append(Msg("checkpoint.memory_fs", dir=str(m["dir"]), fs=m["fs"]))
    notes.append(m["scratch"].note())
    if m["scratch"].keep:
        command = f"aiworkbook prove restore --dir {shlex.quote(str(m['scratch'].path))} --format {fmt}"
        notes.append(Msg("checkpoint.restore_with", command=command))
    return ProofResult(
        proof=proof,
        device="cpu",
        inputs={
            k: v
            for k, v in {**inputs, "format": fmt, "gpus": gpus}.items()
            if isinstance(v, str | int | float | bool | type(None))
        },
        measured=row[key],
        unit="B/s",
        predicted=pred,
        predicted_label=Msg("restore.read_speed") if restore else Msg("checkpoint.write_speed"),
        verdict="fail"
        if any(r["integrity"] != "ok" for r in m["formats"])
        else "",  # "": against the estimate
        samples=rates,
        stats=summarize(rates),
        flags=_flags(m),
        environment=capture("cpu"),
        details={
            "formats": m["formats"],
            "baseline": base,
            "estimate": at_measured,
            "young_daly": yd,
            "dir": m["dir"],
            "scratch": str(m["scratch"].path),
            "kept": m["scratch"].keep,
            "fs": m["fs"],
        },
        notes=notes,
    )


save_checkpoint = then(
    start_save,
    PendingSave.wait,
    "save_checkpoint",
    """Save `state` atomically as `<root>/<fmt>/step-<step>` and point LATEST at it (start_save, then
    waited for). Returns write_s (until files, folder and rename are durable), stall_s (how long the
    caller was blocked: the whole write for sync formats, until async_save returned for dcp-async),
    bytes, path. `keep` older checkpoints survive (the previous one is kept until the new one is
    durable).""",
)
