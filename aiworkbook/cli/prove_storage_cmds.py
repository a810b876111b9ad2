"""`aiworkbook prove checkpoint|restore|coldstart|dataload|host|allreduce`: the storage, input-pipeline,
CPU-node and multi-GPU proofs, run through the proof registry (plan first, progress, Ctrl-C cleans up)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from aiworkbook.cli.lang import cli_lang, said
from aiworkbook.cli.options import option
from aiworkbook.errors import SpecError
from aiworkbook.i18n_format import fixed
from aiworkbook.message import Msg, quoted
from aiworkbook.proofs import inputs as I

# the options' defaults are the proofs' declared ones (aiworkbook/proofs/inputs.py)
CK, RS, CS = I.defaults(I.CheckpointInputs), I.defaults(I.RestoreInputs), I.defaults(I.ColdstartInputs)
DL, AR = I.defaults(I.DataloadInputs), I.defaults(I.AllreduceInputs)

DIR_HELP = (
    "directory in which the proof makes its own new folder aiworkbook-<proof>-<time>-<random> and writes "
    "only there (removed afterwards unless --keep); nothing else in it is touched"
)
KEEP_HELP = "keep the proof's own folder (and only it) afterwards"
JSON_HELP = "write the ProofResult JSON here"


def _run(name: str, json_file: Path | None, **inputs: Any):
    """Check --json, show the plan, run with a progress bar, print the result; a failure is one line."""
    from aiworkbook.cli.paths import model_inputs
    from aiworkbook.cli.prove_run import check_outputs, emit
    from aiworkbook.proofs import registry

    check_outputs({"model": model_inputs(inputs.get("model"))}, json=json_file)
    inputs = {k: v for k, v in inputs.items() if v is not None}
    p = registry.plan(name, **inputs)
    for note in p.notes:
        typer.echo(said(Msg("cli.plan", text=note)))
    if p.fits is False:
        line = Msg("plan.may_not_fit", proof=name, sizes=p.sizes_text())
        typer.echo(said(Msg("cli.plan", text=line)), err=True)
    from aiworkbook.proofs.progress import TqdmProgress

    shown = TqdmProgress(name, cli_lang())
    try:
        r = registry.run(name, progress=shown, **inputs)
    except RuntimeError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        why = exc.args[0] if len(exc.args) == 1 and isinstance(exc.args[0], Msg) else quoted(first)
        typer.echo(said(Msg("cli.error", text=Msg("cli.proof_failed", proof=name, why=why))), err=True)
        raise typer.Exit(1) from None
    finally:
        shown.close()
    emit(r, json_file)
    return r


def _slurm_rank(json_file: Path | None, **inputs: Any):
    """`prove allreduce --launcher slurm`: this task is one rank of the srun step; rank 0 prints and
    writes the result, the other ranks say which they were."""
    import tempfile

    from aiworkbook.cli.prove_run import check_outputs, emit
    from aiworkbook.proofs import allreduce
    from aiworkbook.proofs.result import ProofResult

    check_outputs({}, json=json_file)
    with tempfile.TemporaryDirectory(prefix="aiworkbook-allreduce-") as tmp:
        out = Path(tmp) / "result.json"
        rank, world = allreduce.run_slurm(out=out, **inputs)
        if rank != 0:
            typer.echo(said(Msg("cli.rank_done", rank=rank, world=world)), err=True)
            return None
        r = ProofResult.load(out)
    emit(r, json_file)
    return r


def register_prove(prove: typer.Typer) -> None:
    """Add the storage, data, host and all-reduce proofs to the `prove` group."""
    _register_checkpoint(prove)
    _register_start_and_data(prove)
    _register_host_and_network(prove)


def _register_checkpoint(prove: typer.Typer) -> None:
    """`prove checkpoint` and `prove restore`."""
    from aiworkbook.units import fmt_bytes, fmt_rate

    @prove.command("checkpoint")
    def checkpoint(
        dir: str = option("--dir", DIR_HELP, ...),
        model: str = typer.Option(None, help="save this model's weights + AdamW state (else --size-mb)"),
        size_mb: float = option("--size-mb", "MiB of state to save when no model is given"),
        format: str = option("--format", "headline format", CK["format"]),
        formats: str = typer.Option(CK["formats"], help="formats to measure"),
        trials: int = typer.Option(None, help="saves and restores per format"),
        gpus: int = typer.Option(CK["gpus"], help="GPUs of the job for the Young/Daly interval"),
        keep: bool = option(
            "--keep", "keep the proof's own folder, holding one checkpoint for `prove restore --dir`", False
        ),
        quick: bool = option("--quick", "32 MiB, one trial", False),
        json_file: Path = option("--json", JSON_HELP),
    ) -> None:
        """Durable checkpoint writes per format beside plain sequential I/O; Young/Daly at the measured time."""
        r = _run(
            "checkpoint", json_file, dir=str(dir), model=model, size_mb=size_mb, format=format,
            formats=formats, trials=trials, gpus=gpus, quick=quick, keep=keep,
        )  # fmt: skip
        _formats(r, fmt_bytes, fmt_rate)

    @prove.command("restore")
    def restore(
        dir: str = option("--dir", DIR_HELP, ...),
        model: str = typer.Option(None, help="model whose weights + AdamW state are restored"),
        size_mb: float = option("--size-mb", "MiB of state when no model is given"),
        format: str = option("--format", "safetensors, torch, dcp or dcp-async", RS["format"]),
        trials: int = typer.Option(None, help="restores"),
        keep: bool = option("--keep", KEEP_HELP, False),
        quick: bool = option("--quick", "32 MiB, one trial", False),
        json_file: Path = option("--json", JSON_HELP),
    ) -> None:
        """Cold-cache restore throughput; every tensor checked. Restores, read-only, the checkpoint a
        `prove checkpoint --keep` left (--dir its folder or the folder holding it) when there is one."""
        r = _run(
            "restore", json_file, dir=str(dir), model=model, size_mb=size_mb, format=format, trials=trials,
            quick=quick, keep=keep,
        )  # fmt: skip
        _formats(r, fmt_bytes, fmt_rate)


def _register_start_and_data(prove: typer.Typer) -> None:
    """`prove coldstart` and `prove dataload`."""

    @prove.command("coldstart")
    def coldstart(
        model: str = typer.Argument(CS["model"], help="model preset"),
        dir: str = option("--dir", DIR_HELP, ...),
        dtype: str = typer.Option(CS["dtype"], help="fp32, bf16 or fp16 weights"),
        device: str = typer.Option(CS["device"], help="auto, cpu or cuda"),
        trials: int = typer.Option(None, help="cold starts"),
        keep: bool = option("--keep", KEEP_HELP, False),
        quick: bool = option("--quick", "one cold start", False),
        json_file: Path = option("--json", JSON_HELP),
    ) -> None:
        """Checkpoint on disk to the first forward pass: load, build, transfer, warm-up."""
        _run(
            "coldstart", json_file, model=model, dir=str(dir), dtype=dtype, device=device, trials=trials,
            quick=quick, keep=keep,
        )  # fmt: skip

    @prove.command("dataload")
    def dataload(
        dir: str = option("--dir", DIR_HELP, ...),
        shards: int = typer.Option(None, help="shard files to generate"),
        samples_per_shard: int = option("--samples-per-shard", "samples per shard"),
        sample_kb: float = option("--sample-kb", "KiB per sample"),
        batch: int = typer.Option(DL["batch"], help="samples per batch"),
        workers: str = typer.Option(None, help="worker counts to sweep, e.g. 0,2,4"),
        prefetch: str = typer.Option(DL["prefetch"], help="batches prefetched per worker to sweep, e.g. 2,4"),
        compute: str = typer.Option(DL["compute"], help="sleep (calibrated) or model (a real step)"),
        step_ms: float = option("--step-ms", "sleep step in ms", DL["step_ms"]),
        steps: int = typer.Option(None, help="training-loop steps"),
        threshold: float = typer.Option(DL["threshold"], help="red flag above this input-wait fraction"),
        device: str = typer.Option(DL["device"], help="auto, cpu or cuda"),
        keep: bool = option("--keep", KEEP_HELP, False),
        quick: bool = option("--quick", "a few hundred KB, two configs", False),
        json_file: Path = option("--json", JSON_HELP),
    ) -> None:
        """DataLoader throughput cold and warm; the input-wait fraction of a training loop."""
        r = _run(
            "dataload", json_file, dir=str(dir), shards=shards, samples_per_shard=samples_per_shard,
            sample_kb=sample_kb, batch=batch, workers=workers, prefetch=prefetch, compute=compute,
            step_ms=step_ms, steps=steps, threshold=threshold, device=device, quick=quick, keep=keep,
        )  # fmt: skip
        for x in r.details.get("sweep", []):
            config = {"workers": f"{x['workers']:>2}", "pin": f"{x['pin_memory']!s:<5}"}
            config["prefetch"] = f"{x['prefetch'] or '-'!s:>2}"
            cold, warm = x["cold"], x["warm"]
            rates = {"cold": cold["samples_per_s"], "cold_bps": cold["bytes_per_s"]}
            rates |= {"warm": warm["samples_per_s"], "warm_bps": warm["bytes_per_s"]}
            typer.echo(said(Msg("cli.dataload.row", **config, **rates)))


def _register_host_and_network(prove: typer.Typer) -> None:
    """`prove host` and `prove allreduce`."""
    from aiworkbook.units import fmt_bytes, fmt_rate

    @prove.command("host")
    def host(
        dir: str = option("--dir", DIR_HELP, ...),
        rows: int = typer.Option(None, help="rows of generated tabular data"),
        cols: int = typer.Option(None, help="feature columns"),
        iterations: int = typer.Option(None, help="boosting iterations"),
        threads: int = typer.Option(None, help="most threads to sweep (default: every CPU)"),
        keep: bool = option("--keep", KEEP_HELP, False),
        quick: bool = option("--quick", "20,000 rows, 10 trees", False),
        json_file: Path = option("--json", JSON_HELP),
    ) -> None:
        """CPU node: memory bandwidth, HistGradientBoosting rows/s over threads, peak RSS, Parquet reads."""
        r = _run(
            "host", json_file, dir=str(dir), rows=rows, cols=cols, iterations=iterations, threads=threads,
            quick=quick, keep=keep,
        )  # fmt: skip
        for x in r.details.get("scaling", []):
            row = {"threads": f"{x['threads']:>3}", "rate": x["rows_per_s"], "speedup": x["speedup"]}
            typer.echo(said(Msg("cli.host.row", **row)))

    @prove.command("allreduce")
    def allreduce(
        ranks: int = typer.Option(AR["ranks"], help="processes on this node (GPUs on CUDA)"),
        sizes: str = typer.Option(None, help="message sizes in KiB, comma-separated"),
        iters: int = typer.Option(None, help="timed iterations per size"),
        device: str = typer.Option(AR["device"], help="auto, cpu (gloo) or cuda (NCCL)"),
        quick: bool = option("--quick", "three small sizes", False),
        json_file: Path = option("--json", JSON_HELP),
        launcher: str = option(
            "--launcher", "torchrun (this node) or slurm (one rank per srun task)", "torchrun"
        ),
    ) -> None:
        """All-reduce under torchrun: algbw and busbw per size, correctness, per-rank step times."""
        if launcher not in ("torchrun", "slurm"):
            raise SpecError("launcher", launcher, "torchrun or slurm")
        if launcher == "slurm":
            r = _slurm_rank(json_file, sizes=sizes, iters=iters, device=device, quick=quick)
            if r is None:
                return
        else:
            r = _run(
                "allreduce", json_file, ranks=ranks, sizes=sizes, iters=iters, device=device, quick=quick
            )
        lang = cli_lang()
        for x in r.details.get("sweep", []):
            bus = (
                fmt_rate(x["busbw_bps"], lang=lang)
                if x["busbw_bps"] is not None
                else said(Msg("allreduce.one_rank"))
            )
            ms = (
                f"{x['time_s'] * 1e3:.3f}" if lang == "en" else fixed(x["time_s"] * 1e3, 3, lang, group=False)
            )
            size, algbw = fmt_bytes(x["bytes"], lang=lang), fmt_rate(x["algbw_bps"], lang=lang)
            typer.echo(f"  {size:>10}: {ms:>9} ms  algbw {algbw}  busbw {bus}")


def _formats(r, fmt_bytes, fmt_rate) -> None:
    b, lang = r.details.get("baseline"), cli_lang()
    if b:
        size = f"{fmt_bytes(b['bytes'], lang=lang):>10}"
        typer.echo(said(Msg("cli.ckpt.baseline", size=size, write=b["write_bps"], read=b["read_bps"])))
    for x in r.details.get("formats", []):
        if "write_bps" not in x:  # an existing checkpoint, restored only
            continue
        size = f"{fmt_bytes(x['bytes'], lang=lang):>10}"
        write = {"write": x["write_bps"], "write_x": x["write_vs_baseline"], "stall": x["loop_stall_s"]}
        read = {"read": x["read_bps"], "read_x": x["read_vs_baseline"], "integrity": x["integrity"]}
        typer.echo(said(Msg("cli.ckpt.format", format=f"{x['format']:<12}", size=size, **write, **read)))
    failed = [x for x in r.details.get("formats", []) if x.get("integrity", "ok") != "ok"]
    if failed:  # the bytes read back are not the bytes written: the run failed, whatever its speed
        for x in failed:
            why = Msg("checkpoint.integrity_failed", format=x["format"], differ=x["integrity"])
            typer.echo(said(Msg("cli.error", text=why)), err=True)
        raise typer.Exit(1)
