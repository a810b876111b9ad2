"""`aiworkbook prove roofline|vram|kv MODEL`: run a proof on this node and print it beside its estimate.

Each command runs its proof through the registry (`proofs.registry.run`): the one proof lock, torch
state restored, progress on a tqdm bar; Ctrl-C still raises KeyboardInterrupt.
"""

from __future__ import annotations

from pathlib import Path

import typer

from aiworkbook.cli.lang import cli_lang, said
from aiworkbook.cli.paths import model_inputs
from aiworkbook.cli.prove_run import check_outputs, emit
from aiworkbook.message import Msg, quoted
from aiworkbook.persist import dumps_json
from aiworkbook.proofs import inputs as I
from aiworkbook.proofs import progress
from aiworkbook.sizing.workload import ATTENTIONS, CHECKPOINTING, PRECISIONS

DEVICE_HELP = "auto (CUDA when present, else CPU), cpu or cuda"
# the options' defaults are the proofs' declared ones (aiworkbook/proofs/inputs.py)
RF, VR, KV = I.defaults(I.RooflineInputs), I.defaults(I.VramInputs), I.defaults(I.KvInputs)


def register(app: typer.Typer) -> None:
    """Add `prove roofline|vram|kv`."""
    prove = typer.Typer(
        help="Run a proof: a measurement on this node next to the estimate it tests.", no_args_is_help=True
    )
    _register_roofline(prove)
    _register_vram_and_kv(prove)

    from aiworkbook.cli import prove_storage_cmds, serve_cmds

    serve_cmds.register_prove(prove)  # `prove serving`
    prove_storage_cmds.register_prove(prove)  # checkpoint, restore, coldstart, dataload, host, allreduce
    app.add_typer(prove, name="prove")


def _register_roofline(prove: typer.Typer) -> None:
    """`prove roofline`: the node's ceilings, optionally saved as a calibrated NodeProfile."""

    @prove.command("roofline")
    def roofline(
        model: str = typer.Argument(None, help="model preset for the workload's point (optional)"),
        device: str = typer.Option(RF["device"], help=DEVICE_HELP),
        quick: bool = typer.Option(False, "--quick", help="fewer trials and shapes"),
        threads: int = typer.Option(None, help="CPU threads (default: physical cores)"),
        json_file: Path = typer.Option(None, "--json", help="write the ProofResult JSON here"),
        node_out: Path = typer.Option(
            None, "--node-out", help="write this node as a calibrated NodeProfile JSON (use with size --node)"
        ),
    ) -> None:
        """Memory bandwidth and matmul rate per dtype; the measured ceilings as a calibrated spec."""
        from aiworkbook.units import fmt_flops, fmt_rate

        check_outputs({"model": model_inputs(model)}, json=json_file, node_out=node_out)
        r = progress.run(
            "roofline", dict(model=model, device=device, quick=quick, threads=threads), cli_lang()
        )
        if r.verdict == "interrupted":
            emit(r, None)
            return
        c, lang = r.details["ceilings"], cli_lang()
        bw = c["bandwidth"]
        if lang == "en":  # the conventions as the result records them
            copy_how, read_how = bw["copy_convention"], bw["read_convention"]
        else:
            copy_how, read_how = Msg("cli.roofline.copy_how"), Msg("cli.roofline.read_how")
        rates = {"copy": bw["copy_bps"], "read": bw["read_bps"]}
        typer.echo(said(Msg("cli.roofline.bandwidth", **rates, copy_how=copy_how, read_how=read_how)))
        for dt, v in c["matmul"].items():
            flops = (
                fmt_flops(v["ceiling_flops"], lang)
                if v["ceiling_flops"]
                else said(Msg("value.na")) + " " + v["note"]
            )
            typer.echo(f"  matmul {dt}: {flops}")
        for k, v in c["host_device"].items():
            typer.echo(f"  {k}: {fmt_rate(v, lang=lang)}")
        emit(r, json_file)
        if node_out is not None:
            from aiworkbook.proofs.roofline import calibrated_node

            calibrated_node(r).save(node_out)
            typer.echo(said(Msg("cli.roofline.node_written", path=str(node_out))))


def _register_vram_and_kv(prove: typer.Typer) -> None:
    """`prove vram` and `prove kv`: the sizing estimate's memory against a real model on this node."""

    @prove.command("vram")
    def vram(
        model: str = typer.Argument(..., help="model preset, e.g. tiny-llama or llama-3-8b"),
        device: str = typer.Option(VR["device"], help=DEVICE_HELP),
        quick: bool = typer.Option(False, "--quick", help="short sequence, two steps, 2 GiB CPU budget"),
        batch: int = typer.Option(None, help="micro-batch"),
        seq: int = typer.Option(None, help="sequence length"),
        precision: str = typer.Option(None, help=" | ".join(PRECISIONS)),
        attention: str = typer.Option(
            VR["attention"], help=" | ".join(ATTENTIONS) + " (flash: SDPA's flash kernel)"
        ),
        checkpointing: str = typer.Option(VR["checkpointing"], help=" | ".join(CHECKPOINTING)),
        json_file: Path = typer.Option(None, "--json", help="write the ProofResult JSON here"),
    ) -> None:
        """Train a few AdamW steps; peak memory against the itemised estimate (±10 %)."""
        check_outputs({"model": model_inputs(model)}, json=json_file)
        r = progress.run(
            "vram",
            dict(
                model=model,
                device=device,
                quick=quick,
                batch=batch,
                seq_len=seq,
                precision=precision,
                attention=attention,
                checkpointing=checkpointing,
            ),
            cli_lang(),
        )
        if "cuda" in r.details:
            typer.echo("  cuda: " + dumps_json(r.details["cuda"]))
        emit(r, json_file)

    @prove.command("kv")
    def kv(
        model: str = typer.Argument(..., help="model preset"),
        device: str = typer.Option(KV["device"], help=DEVICE_HELP),
        quick: bool = typer.Option(False, "--quick", help="a 2 x 2 grid, 8 new tokens"),
        json_file: Path = typer.Option(None, "--json", help="write the ProofResult JSON here"),
    ) -> None:
        """Generate over a batch x context grid; KV bytes, latency per token and capacity against the estimate."""
        check_outputs({"model": model_inputs(model)}, json=json_file)
        r = progress.run("kv", dict(model=model, device=device, quick=quick), cli_lang())
        for g in r.details.get("grid", []):
            typer.echo(said(kv_grid_line(g)))
        cap = r.details.get("capacity", {})
        if cap:
            figures = {k: cap[k] for k in ("context", "budget_bytes", "measured", "predicted")}
            typer.echo(said(Msg("cli.kv.capacity", **figures)))
        emit(r, json_file)


def kv_grid_line(g: dict) -> Msg:
    """One point of the kv proof's batch x context grid: its KV bytes against the estimate, or that it
    did not fit, with the allocator's words quoted (a result stored before `reason` was kept: the note)."""
    at = Msg("cli.kv.at", batch=f"{g['batch']:>3}", context=f"{g['context']:>6}")
    if "kv_measured" in g:
        kv = {"measured": g["kv_measured"], "predicted": g["kv_predicted"], "ratio": g["kv_ratio"]}
        return Msg("cli.kv.point", at=at, **kv, step=g["decode_step_s_median"])
    return Msg("cli.kv.does_not_fit", at=at, reason=quoted(g.get("reason", g["does_not_fit"])))
