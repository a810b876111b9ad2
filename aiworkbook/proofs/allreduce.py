"""All-reduce proof, launched with torchrun (gloo on CPU, NCCL on GPU): a message-size sweep with algbw
and busbw as nccl-tests defines them (algbw = bytes / time, busbw = algbw * 2(n-1)/n; "not applicable"
for one rank), a correctness check of every reduced tensor, and per-rank step times that expose
stragglers.

`run()` starts `torchrun --standalone` on this node and reads rank 0's ProofResult back; on several
nodes, start the same worker with torchrun on each (docs/proofs.md) and rank 0 writes the result:

    torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint HOST:29500 \\
        -m aiworkbook.proofs.allreduce --out allreduce.json
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.proofs import scratch
from aiworkbook.proofs.control import NULL, Control
from aiworkbook.proofs.inputs import AllreduceInputs
from aiworkbook.proofs.progress import units as progress_units
from aiworkbook.proofs.registry import Plan
from aiworkbook.units import KiB, MiB

if TYPE_CHECKING:
    from aiworkbook.proofs.result import ProofResult

NOT_APPLICABLE = "not applicable: one rank has no bus to move bytes over"
STRAGGLER = 1.2  # a rank whose median step is 20 % above the ranks' median is flagged


def busbw_factor(n: int) -> float | None:
    """nccl-tests' all-reduce bus factor 2(n-1)/n; None (not applicable) for one rank."""
    if n < 1:
        raise SpecError("ranks", n, ">= 1")
    return None if n == 1 else 2 * (n - 1) / n


def default_sizes(device: str, quick: bool) -> list[int]:
    if quick:
        return [4 * KiB, 64 * KiB, 1 * MiB]
    top = 256 * MiB if device == "cuda" else 16 * MiB
    out, s = [], 64 * KiB
    while s <= top:
        out.append(s)
        s *= 4
    return out


def parse_sizes(sizes: str | list[int] | None, device: str, quick: bool) -> list[int]:
    if sizes is None or sizes == "":
        return default_sizes(device, quick)
    try:
        items = (
            [int(float(s) * KiB) for s in sizes.split(",")]
            if isinstance(sizes, str)
            else [int(s) for s in sizes]
        )
    except (ValueError, OverflowError):  # 'abc', '1,,2', 'inf': not sizes (a SpecError below)
        items = []
    if not items or any(s < 4 for s in items):
        raise SpecError("sizes", sizes, Msg("allowed.allreduce_sizes"))
    return items


# ---- the worker (one per rank, under torchrun) -----------------------------------------------------
def _worker(args: argparse.Namespace) -> int:
    import torch
    import torch.distributed as dist

    rank, world, local = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ["LOCAL_RANK"])
    cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    if cuda:
        torch.cuda.set_device(local)
    dev = torch.device("cuda", local) if cuda else torch.device("cpu")
    backend = "nccl" if cuda else "gloo"
    dist.init_process_group(backend, device_id=dev if cuda else None)
    sizes = parse_sizes(args.sizes, "cuda" if cuda else "cpu", args.quick)

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    rows, bad = [], []
    a = torch.randn(256, 256, device=dev)
    steps: list[float] = []
    for i, nbytes in enumerate(sizes):
        n = max(1, nbytes // 4)
        pattern = (torch.arange(n, device=dev) % 7).float()  # small integers: sums are exact in fp32
        expected = pattern * (world * (world + 1) / 2)
        times = []
        for it in range(args.warmup + args.iters):
            buf = pattern * (rank + 1)
            sync()
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(buf)
            sync()
            dt = time.perf_counter() - t0
            if it >= args.warmup:
                times.append(dt)
            if not torch.equal(buf, expected):
                bad.append(nbytes)
            t0 = time.perf_counter()  # a fixed local step: a slow rank shows here, not only as others' wait
            for _ in range(4):
                a = torch.tanh(a @ a)
            sync()
            steps.append(time.perf_counter() - t0)
        rows.append({"bytes": n * 4, "times_s": times})
        if rank == 0 and args.progress:
            Path(args.progress).write_text(json.dumps({"done": i + 1, "total": len(sizes), "bytes": n * 4}))
    gathered: list[Any] = [None] * world
    dist.all_gather_object(
        gathered, {"rank": rank, "host": os.uname().nodename, "rows": rows, "steps": steps, "bad": bad}
    )
    if rank == 0:
        _write_result(args, gathered, world, "cuda" if cuda else "cpu", backend)
    dist.barrier()
    dist.destroy_process_group()
    return 0


def _median(xs: list[float]) -> float:
    import numpy as np

    return float(np.median(xs))


def summarise(per_rank: list[dict[str, Any]], world: int) -> dict[str, Any]:
    """Per size: time = median over iterations of the slowest rank's time; algbw, busbw; per-rank steps."""
    factor = busbw_factor(world)
    ranks = sorted(per_rank, key=lambda r: r["rank"])
    sweep = []
    for j, row in enumerate(ranks[0]["rows"]):
        slowest = [max(r["rows"][j]["times_s"][k] for r in ranks) for k in range(len(row["times_s"]))]
        t = _median(slowest)
        alg = row["bytes"] / t
        sweep.append(
            {
                "bytes": row["bytes"],
                "time_s": t,
                "algbw_bps": alg,
                "busbw_bps": alg * factor if factor is not None else None,
                "busbw_note": "" if factor is not None else NOT_APPLICABLE,
            }
        )
    medians = [_median(r["steps"]) for r in ranks]
    mid = _median(medians)
    stragglers = [r["rank"] for r, m in zip(ranks, medians, strict=True) if mid and m > STRAGGLER * mid]
    return {
        "sweep": sweep,
        "ranks": [
            {"rank": r["rank"], "host": r["host"], "step_s_median": m, "vs_median": m / mid if mid else None}
            for r, m in zip(ranks, medians, strict=True)
        ],
        "stragglers": stragglers,
        "incorrect": sorted({b for r in ranks for b in r["bad"]}),
    }


def _write_result(
    args: argparse.Namespace, per_rank: list[dict[str, Any]], world: int, device: str, backend: str
) -> None:
    from aiworkbook.proofs.environment import capture
    from aiworkbook.proofs.result import ProofResult

    s = summarise(per_rank, world)
    top = s["sweep"][-1]
    measured = top["busbw_bps"]
    notes: list[str] = [
        Msg(
            "allreduce.summary",
            ranks=world,
            hosts=len({r["host"] for r in per_rank}),
            backend=backend,
            size=top["bytes"],
            ms=top["time_s"] * 1e3,
            algbw=top["algbw_bps"],
            busbw=Msg("allreduce.rate", rate=measured) if measured is not None else Msg("allreduce.one_rank"),
        )
    ]
    if s["incorrect"]:
        notes.append(Msg("allreduce.incorrect", sizes=list(s["incorrect"])))
    if s["stragglers"]:
        notes.append(Msg("allreduce.stragglers", factor=STRAGGLER, ranks=list(s["stragglers"])))
    r = ProofResult(
        proof="allreduce",
        device=device,
        inputs={
            "ranks": world,
            "backend": backend,
            "sizes": args.sizes,
            "iters": args.iters,
            "quick": args.quick,
        },
        measured=measured,
        unit="B/s",
        predicted=None,
        predicted_label=Msg("allreduce.busbw"),
        verdict="fail" if s["incorrect"] else "info",
        environment=capture(device),
        details={**s, "backend": backend, "world_size": world, "convention": "busbw = algbw * 2(n-1)/n"},
        notes=notes,
    )
    r.save(args.out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="all-reduce proof worker (start it with torchrun)")
    ap.add_argument("--out", required=True, help="rank 0 writes the ProofResult JSON here")
    ap.add_argument("--sizes", default=None, help="message sizes in KiB, comma-separated")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--progress", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if "RANK" not in os.environ:
        ap.error("start this worker with torchrun (RANK/WORLD_SIZE are not set)")
    return _worker(args)


# ---- the proof (launches torchrun on this node) ----------------------------------------------------
def _device(device: str) -> str:
    from aiworkbook.proofs.device import resolve_device

    return resolve_device(device).device


def check_ranks(ranks: int, dev: str) -> None:
    """Ranks on this node: one per GPU on CUDA; on the CPU one per logical CPU, since each rank is a
    process that loads torch and past the CPUs they time-share instead of reducing (and a typed
    2^31 would start that many). Checked before the plan is shown and before any process starts."""
    if ranks < 1:
        raise SpecError("ranks", ranks, ">= 1")
    if dev == "cuda":
        import torch

        if ranks > torch.cuda.device_count():
            raise SpecError("ranks", ranks, Msg("allowed.ranks_gpus", n=torch.cuda.device_count()))
        return
    from aiworkbook import hostfacts

    cpus = hostfacts.logical_cpus()
    if ranks > cpus:
        raise SpecError("ranks", ranks, Msg("allowed.ranks_cpus", n=cpus))


def plan(inputs: AllreduceInputs) -> Plan:
    ranks, sizes, device, quick = inputs.ranks, inputs.sizes, inputs.device, inputs.quick
    dev = _device(device)
    check_ranks(ranks, dev)
    sz = parse_sizes(sizes, dev, quick)
    return Plan(
        proof="allreduce",
        device=dev,
        predicted=None,
        predicted_label=Msg("allreduce.busbw"),
        unit="B/s",
        sizes={"ranks": ranks, "sizes": sz, "backend": "nccl" if dev == "cuda" else "gloo"},
        rough_s=5.0 + len(sz),
        notes=(
            Msg(
                "allreduce.plan",
                ranks=ranks,
                busbw=Msg("allreduce.busbw_na")
                if ranks == 1
                else Msg("allreduce.busbw_factor", factor=busbw_factor(ranks)),
            ),
        ),
    )


def run(inputs: AllreduceInputs, *, control: Control = NULL) -> ProofResult:
    from aiworkbook.proofs.result import ProofResult

    ranks, sizes, iters, device = inputs.ranks, inputs.sizes, inputs.iters, inputs.device
    quick, timeout_s = inputs.quick, inputs.timeout_s
    dev = _device(device)
    check_ranks(ranks, dev)
    parse_sizes(sizes, dev, quick)  # refuse bad sizes before starting processes
    n_iter = iters or (5 if quick else 20)
    with scratch.scratch(tempfile.gettempdir(), "allreduce") as own:
        tmp = own.path
        out, prog = Path(tmp) / "result.json", Path(tmp) / "progress.json"
        cmd = [
            sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
            f"--nproc-per-node={ranks}", "-m", "aiworkbook.proofs.allreduce",
            "--out", str(out), "--iters", str(n_iter), "--device", dev, "--progress", str(prog),
        ]  # fmt: skip
        if sizes:
            cmd += ["--sizes", str(sizes)]
        if quick:
            cmd += ["--quick", "--warmup", "1"]
        env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
        log = Path(tmp) / "torchrun.log"
        with open(log, "w") as fh:
            p = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True)
            t0 = time.monotonic()
            try:
                while p.poll() is None:
                    done, total = _progress(prog)
                    progress_units(control, done, total, Msg("progress.allreduce", ranks=ranks))
                    if time.monotonic() - t0 > timeout_s:
                        raise SpecError(
                            "timeout_s", timeout_s, "longer than the run takes (torchrun still running)"
                        )
                    time.sleep(0.1)
            finally:
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGTERM)
                    try:
                        p.wait(5)
                    except subprocess.TimeoutExpired:
                        os.killpg(p.pid, signal.SIGKILL)
                        p.wait()
        if p.returncode != 0 or not out.exists():
            tail = log.read_text()[-2000:]
            raise RuntimeError(f"torchrun exited with {p.returncode}:\n{tail}")
        return ProofResult.load(out)


def run_slurm(
    *,
    out: Path,
    sizes: str | None = None,
    iters: int | None = None,
    device: str = "auto",
    quick: bool = False,
) -> tuple[int, int]:
    """This process as one rank of an srun step (aiworkbook.proofs.slurm_env): rank 0 writes the
    ProofResult to `out`. Returns (rank, world)."""
    from aiworkbook.proofs import slurm_env

    where = slurm_env.from_env()
    dev = _device(device)
    parse_sizes(sizes, dev, quick)
    os.environ.update(where.torch_env())
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    args = argparse.Namespace(
        out=str(out), sizes=sizes, iters=iters or (5 if quick else 20), warmup=1 if quick else 3,
        device=dev, quick=quick, progress=None,
    )  # fmt: skip
    _worker(args)
    return where.rank, where.world


def _progress(path: Path) -> tuple[int, int]:
    try:
        d = json.loads(path.read_text())
        return int(d["done"]), int(d["total"])
    except (OSError, ValueError, KeyError):
        return 0, 0


if __name__ == "__main__":
    sys.exit(main())
