"""`make gpu-proof`: every proof on CUDA in under 8 minutes, one JSON ProofResult per proof.

    python benchmarks/gpu_proof.py [--out DIR] [--bundle FILE.tar.gz] [--only NAME ...] [--dry-run]
    python benchmarks/gpu_proof.py --missing     # the pip requirements of the proofs' missing packages

`make gpu-proof` runs it through tools/gpu_proof.sh: the machine's own python and CUDA torch (never a
torch from an index), only the packages the proofs import (`PROOF_DEPS`) installed when missing, from
carried wheels (.whl/, tools/device_wheels.sh) when there is no network, and a whole-run time limit
that leaves a margin. summary.json is rewritten after every step, so a run stopped from outside keeps
what it measured.

Writes into $OUT (else ./gpu-proof-results): `<step>.json` per proof, `summary.json` (status, verdict,
ratio, seconds, estimate per step), `trace.jsonl` (the telemetry sampler at 1 Hz, one phase per step)
and `nvidia-smi-q.txt` when nvidia-smi exists; `--bundle` also packs the folder into one tar.gz (a
machine that returns few files gets everything). A step that fails, runs out of memory or overruns
its time limit is recorded and the run goes on; a short table ends the run.

Without CUDA it says so and exits 1: it never falls back to the CPU and calls that a GPU proof.
`--dry-run` runs the same steps, in the same order, through the same code on the CPU with small
models and sizes (tests/test_proofs_gpu_script.py runs it), so the script is proven without a GPU.

Exit: 0 every step ran and passed (or is informational); 3 a step failed its tolerance, did not
fit, errored, overran or was skipped; 1 no CUDA; 130 interrupted.

Time on an H200 (141 GB, ~790 TFLOP/s bf16, ~4.3 TB/s copy), estimated from FLOPs and bytes moved
(see each step's `est_s`, with torch/CUDA start-up and model construction added): the plan totals
about 5.5 minutes; each step also has a hard limit, and a step is skipped when the budget left is
smaller than its estimate, so the run stays inside 8 minutes whatever happens.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The packages the proofs import, by import name -> pip requirement (pyproject's pins). torch is not
#: here: the kit runs on the machine's own CUDA build and never installs one.
PROOF_DEPS: dict[str, str] = {
    "numpy": "numpy>=1.24",
    "pydantic": "pydantic>=2.5,<3",
    "psutil": "psutil>=5.9",
    "tqdm": "tqdm>=4.66",
    "pynvml": "nvidia-ml-py>=12.535",
    "aiohttp": "aiohttp>=3.9",
    "safetensors": "safetensors>=0.4",
    "babel": "babel>=2.12",  # every message is read from the gettext catalogues (aiworkbook/catalogue.py)
}

BUDGET_S = 8 * 60
#: time kept back for writing the summary, the trace and nvidia-smi's report
RESERVE_S = 20
ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Step:
    """One proof: what it runs on CUDA, what it runs in the CPU dry run, and its time on an H200."""

    name: str
    proof: str  # a registry proof: roofline, vram, kv, serving, coldstart, checkpoint, restore, dataload
    model: str | None  # None: a proof that takes no model (storage, data)
    gpu: dict[str, Any]
    dry: dict[str, Any]
    est_s: float  # estimated seconds on an H200, start-up of the step included
    limit_s: float  # hard limit: the step is interrupted (memory released) after this
    why: str = ""
    dry_model: str = "tiny-llama"
    dry_budget_fraction: float | None = None  # dry run: budget = this x the estimate, forcing a proxy
    tags: tuple[str, ...] = field(default_factory=tuple)


ALL_DTYPES = ["fp32", "tf32", "bf16", "fp16", "fp8"]

PLAN: list[Step] = [
    Step(
        "roofline",
        "roofline",
        "llama-3-8b",
        gpu={},  # full sweep: 1 GiB buffers x 10 trials, 5 dtypes x (2048, 4096, 8192), 1 GiB h2d/d2h
        dry={"quick": True, "buffer_bytes": 16 * 2**20, "dtypes": ALL_DTYPES, "shapes": [128]},
        est_s=25,
        limit_s=90,
        why="bandwidth: 20 x 2 GiB of traffic ~ 10 ms; matmul: 5 dtypes x 3 shapes x 7 runs, fp32 8192^3 "
        "~ 20 ms each; host<->device: 28 x 1 GiB at 10-50 GB/s ~ 3 s; plus CUDA/cuBLAS start-up ~ 10 s",
    ),
    Step(
        "vram-smoke",
        "vram",
        "tiny-llama",
        gpu={"quick": True},
        dry={"quick": True, "precision": "bf16", "seq_len": 32},
        est_s=5,
        limit_s=60,
        why="4.9 M parameters, 2 steps: seconds, mostly kernel warm-up",
    ),
    Step(
        "vram-1b-bf16",
        "vram",
        "llama-3.2-1b",
        gpu={"seq_len": 2048},
        dry={"quick": True, "precision": "bf16", "seq_len": 32},
        est_s=15,
        limit_s=90,
        why="1.24 B params pure bf16 AdamW (~10 GB states); 3 steps x 6 x 1.24e9 x 2048 = 46 TFLOP ~ 0.1 s",
    ),
    Step(
        "vram-1b-bf16-mixed",
        "vram",
        "llama-3.2-1b",
        gpu={"precision": "bf16-mixed", "seq_len": 4096},
        dry={"quick": True, "precision": "bf16-mixed", "seq_len": 32},
        est_s=15,
        limit_s=90,
        why="fp32 master/AdamW (16 B/param ~ 20 GB) with autocast; 3 steps ~ 90 TFLOP ~ 0.3 s",
    ),
    Step(
        "vram-1b-full-ckpt",
        "vram",
        "llama-3.2-1b",
        gpu={"seq_len": 8192, "checkpointing": "full"},
        dry={"quick": True, "precision": "bf16", "seq_len": 32, "checkpointing": "full"},
        est_s=20,
        limit_s=90,
        why="full recomputation at 8k tokens: 3 steps x 8 x 1.24e9 x 8192 + attention ~ 0.3 PFLOP ~ 1 s",
    ),
    Step(
        "vram-8b-bf16",
        "vram",
        "llama-3-8b",
        gpu={"seq_len": 2048},
        dry={"quick": True, "precision": "bf16", "seq_len": 48},
        est_s=40,
        limit_s=120,
        why="8.03 B params pure bf16 AdamW: ~64 GB states + 16 GB foreach sqrt(v) at the step + ~15 GB "
        "activations/logits fit 141 GB; "
        "building 8 B params ~ 5 s, 3 steps x 6 x 8e9 x 2048 = 0.3 PFLOP ~ 1 s, AdamW ~ 0.1 s/step",
    ),
    Step(
        "vram-8b-bf16-mixed-proxy",
        "vram",
        "llama-3-8b",
        gpu={"precision": "bf16-mixed", "seq_len": 4096},
        dry={"quick": True, "precision": "bf16-mixed", "seq_len": 32},
        dry_budget_fraction=0.7,
        est_s=45,
        limit_s=120,
        why="16 B/param x 8 B = 128 GB + activations does not fit: the proof runs the deepest proxy "
        "that fits (~24 of 32 layers) and predicts the same proxy; ~0.5 PFLOP ~ 2 s plus building",
    ),
    Step(
        "kv-1b",
        "kv",
        "llama-3.2-1b",
        gpu={"quick": True},  # batches (1, 8) x contexts (512, 2048), 16 new tokens
        dry={"quick": True, "batches": (1, 2), "contexts": (16, 32), "new_tokens": 3},
        est_s=18,
        limit_s=60,
        why="4 grid points, each warmed (prefill + 2 decode steps) then timed: 16 decode steps each (~16 "
        "layers x ~15 kernels: ~3 ms/step) and capacity",
    ),
    Step(
        "serving-1b",
        "serving",
        "llama-3.2-1b",
        # concurrency 1, 4, 16 x 32 requests; static vs continuous at 16 (32 requests); contexts 64..960 at 8
        gpu={"sweep": [1, 4, 16], "requests": 32},
        dry={"quick": True},
        est_s=32,
        limit_s=120,
        why="the embedded server on CUDA (bf16, eager, ~16 layers x ~15 kernels: a few ms per forward, "
        "launch-bound): ~1,350 forwards in the sweep (32 requests x 32 tokens at loads 1, 4, 16), ~120 + "
        "~70 in static vs continuous at concurrency 16, ~260 in the context sweep (+1 warm-up request per "
        "context); 4 builds of 1.24 B params",
    ),
    Step(
        "coldstart-1b",
        "coldstart",
        "llama-3.2-1b",
        gpu={"dtype": "bf16", "trials": 1},
        dry={"quick": True, "dtype": "bf16"},
        est_s=10,
        limit_s=60,
        why="write 2.5 GB of bf16 weights, drop the page cache, read at ~1-3 GB/s, build, copy at ~25 GB/s, "
        "first forward: ~5 s",
    ),
    Step(
        "kv-8b",
        "kv",
        "llama-3-8b",
        gpu={},  # batches (1, 8, 32) x contexts (512, 2048, 8192), 32 new tokens, bf16
        dry={"quick": True, "batches": (1, 2), "contexts": (16, 32), "new_tokens": 3},
        est_s=75,
        limit_s=180,
        why="largest point: prefill 32 x 8192 tokens x 16 GFLOP/token + attention ~ 4.8 PFLOP ~ 8 s; "
        "decode 32 steps each re-copying a 34 GB cache (torch.cat) ~ 20 ms; capacity: ~100 x 1 GB caches; "
        "every point's prefill runs twice (warmed, then timed): the grid's 440 k prefill tokens ~ +12 s",
    ),
    Step(
        "checkpoint-2g",
        "checkpoint",
        None,
        gpu={"size_mb": 2048, "trials": 1},
        dry={"quick": True, "size_mb": 16},
        est_s=15,
        limit_s=90,
        why="2 GiB written durably and restored cold in 4 formats (safetensors, torch.save, DCP sync and "
        "async) and as plain sequential I/O: 20 GiB of disk traffic at ~1-3 GB/s",
    ),
    Step(
        "dataload",
        "dataload",
        None,
        gpu={"compute": "model", "workers": "0,4"},
        dry={"quick": True},
        est_s=15,
        limit_s=60,
        why="8 shards x 1,024 samples of 128 KiB (1 GiB) read cold and warm with 0 and 4 workers, with and "
        "without pin_memory, then up to 200 steps of a real model step fed by the loader",
    ),
]


# ---- running one step ----------------------------------------------------------------------------
class StepTimeout(Exception):
    pass


class _Alarm:
    """A per-step time limit: SIGALRM raises KeyboardInterrupt inside the proof (so its `interruptible`
    block releases memory), and the runner tells it from a real Ctrl-C by `fired`."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.fired = False
        self._old = None
        self._armed = False

    def _handler(self, signum, frame):
        self.fired = True
        raise KeyboardInterrupt("step time limit")

    def __enter__(self) -> _Alarm:
        can = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
        if can and self.seconds > 0:
            self._old = signal.signal(signal.SIGALRM, self._handler)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
            self._armed = True
        return self

    def __exit__(self, *exc) -> None:
        if self._armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._old)


#: where proofs that write files (checkpoint, cold start, data) write them: a folder on the disk under
#: test, set by main() from --scratch (not /tmp, which may be RAM); each proof removes its files
SCRATCH = Path("gpu-proof-scratch")


def _model(step: Step, dry: bool) -> str | None:
    """The model a step runs: its own on CUDA, the small one in the dry run, none for a model-less proof."""
    if step.model is None:
        return None
    return step.dry_model if dry else step.model


def _call(step: Step, device: str, dry: bool) -> Any:
    from aiworkbook.proofs.kv import prove_kv
    from aiworkbook.proofs.roofline import prove_roofline
    from aiworkbook.proofs.vram import prove_vram

    kw = dict(step.dry if dry else step.gpu)
    model = _model(step, dry)
    if dry and step.dry_budget_fraction is not None:
        kw["budget_bytes"] = int(step.dry_budget_fraction * _vram_estimate(model, kw, device))
    from aiworkbook.proofs import registry

    registry.get(step.proof).check_names(kw)  # the proof's declared inputs (proofs/inputs.py)
    direct: dict[str, Callable[..., Any]] = {"roofline": prove_roofline, "vram": prove_vram, "kv": prove_kv}
    if step.proof in direct:
        return direct[step.proof](model, device=device, **kw)
    takes = set(registry.get(step.proof).accepts)
    if model is not None:
        kw["model"] = model
    if "device" in takes:
        kw["device"] = device
    if "dir" in takes:
        kw["dir"] = str(SCRATCH.resolve())
    return registry.run(step.proof, **kw)


def _vram_estimate(model: str, kw: dict[str, Any], device: str) -> int:
    from aiworkbook.proofs.vram import _estimate, _workload, defaults
    from aiworkbook.specs import load_model

    d = defaults(device, kw.get("quick", False))
    prec = kw.get("precision") or d["precision"]
    recipe = "fp32-adamw" if prec in ("fp32", "bf16-mixed", "fp16-mixed") else "pure-bf16"
    w = _workload(
        batch=kw.get("batch") or d["batch"],
        seq_len=kw.get("seq_len") or d["seq_len"],
        precision=prec,
        recipe=recipe,
        attention="sdpa",
        checkpointing=kw.get("checkpointing", "none"),
        optimizer_impl="foreach",  # what the vram proof runs on either device (proofs/vram.py)
    )
    return int(_estimate(load_model(model), w, device).memory.total)


def run_step(step: Step, device: str, dry: bool, limit_s: float, out: Path) -> dict[str, Any]:
    """Run one step under its time limit; a row for the summary, whatever happened."""
    from aiworkbook.proofs.device import DoesNotFit, WouldNotFit, release_memory

    row: dict[str, Any] = {
        "step": step.name,
        "proof": step.proof,
        "model": _model(step, dry),
        "args": {
            k: list(v) if isinstance(v, tuple) else v for k, v in (step.dry if dry else step.gpu).items()
        },
        "est_s": step.est_s,
        "limit_s": round(limit_s, 1),
    }
    t0 = time.monotonic()
    alarm = _Alarm(limit_s)
    try:
        with alarm:
            r = _call(step, device, dry)
    except KeyboardInterrupt:
        if not alarm.fired:
            raise
        row.update(status="timeout", error=f"stopped at its {limit_s:.0f} s limit; memory released")
    except (WouldNotFit, DoesNotFit) as exc:
        row.update(status="does-not-fit", error=str(exc))
    except Exception as exc:  # record and go on: one failing proof must not hide the others
        row.update(status="error", error=f"{type(exc).__name__}: {exc}"[:2000])
    else:
        path = out / f"{step.name}.json"
        r.save(path)
        row.update(
            status=r.verdict,
            verdict=r.verdict,
            measured=r.measured,
            predicted=r.predicted,
            unit=r.unit,
            ratio=r.ratio,
            flags=list(r.flags),
            headline=r.headline(),
            file=path.name,
        )
        if r.proof == "vram" and "cuda" in r.details:
            row["cuda"] = r.details["cuda"]
        if r.proof == "serving" and "schedulers" in r.details:
            sc = r.details["schedulers"]
            row["schedulers"] = {
                "concurrency": sc["concurrency"],
                "throughput_ratio": sc["throughput_ratio"],
                **{
                    f"{k}_{m}": sc[k][m]
                    for k in ("static", "continuous")
                    for m in ("throughput_tok_s", "p95_ttft_s")
                },
            }
        if r.proof == "roofline":
            c = r.details["ceilings"]
            row["ceilings"] = {
                "copy_bps": c["bandwidth"]["copy_bps"],
                "read_bps": c["bandwidth"]["read_bps"],
                **{f"matmul_{k}_flops": v["ceiling_flops"] for k, v in c["matmul"].items()},
                **c.get("host_device", {}),
            }
    finally:
        release_memory(device)
    row["seconds"] = round(time.monotonic() - t0, 2)
    return row


# ---- the run -------------------------------------------------------------------------------------
def missing_requirements() -> list[str]:
    """The pip requirements of PROOF_DEPS whose module is not importable here (found, not imported)."""
    import importlib.util

    return [req for mod, req in PROOF_DEPS.items() if importlib.util.find_spec(mod) is None]


def _preflight() -> str | None:
    """Import what the proofs need; a missing package is named (the lent GPU machine cannot pip install)."""
    missing = []
    for mod in ("torch", *PROOF_DEPS):
        try:
            __import__(mod)
        except ImportError as exc:
            missing.append(f"{mod} ({exc})")
    return "missing Python packages: " + ", ".join(missing) if missing else None


def _nvidia_smi(out: Path) -> str:
    exe = shutil.which("nvidia-smi")
    if not exe:
        return "nvidia-smi not found"
    try:
        p = subprocess.run([exe, "-q"], capture_output=True, text=True, timeout=RESERVE_S / 2)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"nvidia-smi -q failed: {exc}"
    from aiworkbook.persist import atomic_write_text

    atomic_write_text(out / "nvidia-smi-q.txt", p.stdout + (f"\n[stderr]\n{p.stderr}" if p.stderr else ""))
    return "nvidia-smi-q.txt" if p.returncode == 0 else f"nvidia-smi -q exit {p.returncode}"


def _write_trace(sampler, since: float, out: Path, note: str) -> str:
    from aiworkbook.telemetry.export import to_jsonl
    from aiworkbook.telemetry.replay import trace_header

    samples = sampler.samples(since=since)
    header = trace_header(sampler.gpu_reader, sampler.interval, source="recorded", note=note)
    to_jsonl(samples, out / "trace.jsonl", header)
    return f"trace.jsonl ({len(samples)} samples, {sampler.errors} sampler errors)"


def _table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'step':<26}{'status':<14}{'ratio':>8}{'seconds':>9}{'est':>6}  headline / error"]
    for r in rows:
        ratio = f"{r['ratio']:.3f}" if isinstance(r.get("ratio"), (int, float)) else "-"
        secs = f"{r['seconds']:.1f}" if "seconds" in r else "-"
        text = r.get("headline") or r.get("error") or ""
        lines.append(f"{r['step']:<26}{r['status']:<14}{ratio:>8}{secs:>9}{r['est_s']:>6.0f}  {text[:110]}")
    return "\n".join(lines)


#: summary.json: {"kind": SUMMARY_KIND, "schema_version": 1, mode, device, ..., steps}, written atomically
SUMMARY_KIND = "aiworkbook.gpu-proof-summary"
SUMMARY_SCHEMA_VERSION = 1


def main(argv: list[str] | None = None) -> int:
    global SCRATCH
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT") or "./gpu-proof-results")
    ap.add_argument("--dry-run", action="store_true", help="the same steps on the CPU, small sizes")
    ap.add_argument("--only", nargs="*", default=None, help="run only these steps (names in the plan)")
    ap.add_argument("--budget-s", type=float, default=BUDGET_S, help="whole-run budget (default 480)")
    ap.add_argument("--no-trace", action="store_true", help="do not run the telemetry sampler")
    ap.add_argument("--bundle", default=None, help="also pack the output folder into this .tar.gz")
    ap.add_argument(
        "--scratch",
        default=str(SCRATCH),
        help="folder on the disk under test for the checkpoint, cold-start and data proofs' files "
        "(default ./gpu-proof-scratch, removed afterwards; not /tmp, which may be RAM)",
    )
    ap.add_argument("--list", action="store_true", help="print the plan with estimates and exit")
    ap.add_argument(
        "--missing", action="store_true", help="print the pip requirements of missing proof packages"
    )
    args = ap.parse_args(argv)

    if args.missing:  # before any third-party import: tools/gpu_proof.sh asks this first
        print("\n".join(missing_requirements()))
        return 0

    if args.list:
        for s in PLAN:
            print(
                f"{s.name:<26}{s.proof:<11}{s.model or '-':<14}{s.est_s:>5.0f} s (limit {s.limit_s:.0f})  {s.why}"
            )
        print(f"total estimate {sum(s.est_s for s in PLAN):.0f} s of the {args.budget_s:.0f} s budget")
        return 0
    t_start = time.monotonic()
    problem = _preflight()
    if problem:
        print(f"gpu-proof: {problem}. Nothing was measured.", file=sys.stderr)
        return 1
    import torch

    if args.dry_run:
        device = "cpu"
    elif not torch.cuda.is_available():
        print(
            "gpu-proof: no CUDA device (torch.cuda.is_available() is False; torch "
            f"{torch.__version__}, built for CUDA {torch.version.cuda}). Nothing was measured. "
            "(--dry-run runs the same steps on the CPU.)",
            file=sys.stderr,
        )
        return 1
    else:
        device = "cuda"
        # before torch creates its context: the VRAM proof's device-level delta then includes it
        from aiworkbook.proofs.device import record_nvml_baseline

        record_nvml_baseline()
    from aiworkbook.proofs.attention import record

    attention = record(device)  # the SDPA backend the attention proofs pin (each proof records it too)
    steps = [s for s in PLAN if args.only is None or s.name in args.only]
    unknown = set(args.only or ()) - {s.name for s in PLAN}
    if unknown:
        print(
            f"gpu-proof: unknown step(s) {sorted(unknown)}; known: {[s.name for s in PLAN]}", file=sys.stderr
        )
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    SCRATCH = Path(args.scratch).resolve()
    made_scratch = not SCRATCH.exists()
    mode = "dry run on the CPU (small models; not a GPU proof)" if args.dry_run else "CUDA"
    print(
        f"gpu-proof: {len(steps)} steps, {mode}, budget {args.budget_s:.0f} s, results in {out}", flush=True
    )

    sampler = None
    if not args.no_trace:
        try:
            from aiworkbook.telemetry import get_sampler

            sampler = get_sampler(1.0)
            sampler.start()
        except Exception as exc:
            print(f"gpu-proof: telemetry sampler not started ({type(exc).__name__}: {exc})", flush=True)
            sampler = None
    t_trace = time.monotonic() - 1.0
    rows: list[dict[str, Any]] = []
    interrupted = False

    def summary(extras: dict[str, str], complete: bool) -> dict[str, Any]:
        return {
            "mode": "dry-run-cpu" if args.dry_run else "cuda",
            "device": device,
            "torch": torch.__version__,
            "torch_cuda": torch.version.cuda,
            "gpu": torch.cuda.get_device_name(0) if device == "cuda" else None,
            "attention": attention,
            "budget_s": args.budget_s,
            "seconds": round(time.monotonic() - t_start, 1),
            "interrupted": interrupted,
            "complete": complete,  # False while it runs: the steps so far, rewritten after each one
            "files": extras,
            "steps": rows,
        }

    def save(doc: dict[str, Any]) -> None:
        from aiworkbook.persist import write_json

        plain = json.loads(json.dumps(doc, default=str))  # anything else a step recorded, as text
        write_json(out / "summary.json", plain, kind=SUMMARY_KIND, schema_version=SUMMARY_SCHEMA_VERSION)

    try:
        for step in steps:
            left = args.budget_s - RESERVE_S - (time.monotonic() - t_start)
            need = step.est_s if not args.dry_run else 1.0
            if left < need:
                rows.append(
                    {
                        "step": step.name,
                        "proof": step.proof,
                        "est_s": step.est_s,
                        "status": "skipped",
                        "error": f"{left:.0f} s of the budget left, the step needs ~{need:.0f} s",
                    }
                )
                save(summary({}, complete=False))
                continue
            limit = min(step.limit_s, left)
            phase = sampler.phase(step.name) if sampler is not None else _null()
            with phase:
                row = run_step(step, device, args.dry_run, limit, out)
            rows.append(row)
            save(summary({}, complete=False))
            print(
                f"  {step.name}: {row['status']} in {row['seconds']:.1f} s"
                + (
                    f" - {row.get('headline') or row.get('error')}"
                    if row.get("headline") or row.get("error")
                    else ""
                ),
                flush=True,
            )
    except KeyboardInterrupt:
        interrupted = True
        print("gpu-proof: interrupted; writing what was measured", file=sys.stderr)
    finally:
        if made_scratch:
            shutil.rmtree(SCRATCH, ignore_errors=True)
        extras: dict[str, str] = {}
        if sampler is not None:
            sampler.stop()
            try:
                extras["trace"] = _write_trace(sampler, t_trace, out, f"aiworkbook gpu_proof, {mode}")
            except Exception as exc:
                extras["trace"] = f"not written: {type(exc).__name__}: {exc}"
        save(summary(extras, complete=False))  # the steps first: nvidia-smi may be what hangs
        extras["nvidia_smi"] = _nvidia_smi(out)
        final = summary(extras, complete=not interrupted)
        save(final)
        print(_table(rows))
        print(f"wrote {len(list(out.iterdir()))} files to {out} in {final['seconds']:.0f} s; {extras}")
        if args.bundle:
            with tarfile.open(args.bundle, "w:gz") as tar:
                tar.add(out, arcname=out.name)
            print(f"bundle: {args.bundle}")
    if interrupted:
        return 130
    ok = {"pass", "info"}
    return 0 if len(rows) == len(steps) and all(r["status"] in ok for r in rows) else 3


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
