"""`aiworkbook prove roofline|vram|kv MODEL`: run a proof on this node and print it beside its estimate.

Each command runs its proof through the registry (`proofs.registry.run`): the one proof lock, torch
state restored, progress on a tqdm bar; Ctrl-C still raises KeyboardInterrupt.
"""

from __future__ import annotations

from pathlib import Path

import typer

from aiworkbook.cli.lang import cli_lang
from aiworkbook.cli.paths import model_inputs
from aiworkbook.cli.prove_run import check_outputs, emit
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
        c = r.details["ceilings"]
        bw = c["bandwidth"]
        typer.echo(
            f"  copy {fmt_rate(bw['copy_bps'])} ({bw['copy_convention']}), "
            f"read {fmt_rate(bw['read_bps'])} ({bw['read_convention']})"
        )
        for dt, v in c["matmul"].items():
            typer.echo(
                f"  matmul {dt}: {fmt_flops(v['ceiling_flops']) if v['ceiling_flops'] else 'n/a ' + v['note']}"
            )
        for k, v in c["host_device"].items():
            typer.echo(f"  {k}: {fmt_rate(v)}")
        emit(r, json_file)
        if node_out is not None:
            from aiworkbook.proofs.roofline import calibrated_node

            calibrated_node(r).save(node_out)
            typer.echo(f"wrote {node_out} (size with: aiworkbook size MODEL --node {node_out})")


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
        from aiworkbook.units import fmt_bytes, fmt_seconds

        check_outputs({"model": model_inputs(model)}, json=json_file)
        r = progress.run("kv", dict(model=model, device=device, quick=quick), cli_lang())
        for g in r.details.get("grid", []):
            if "kv_measured" in g:
                typer.echo(
                    f"  batch {g['batch']:>3} ctx {g['context']:>6}: kv {fmt_bytes(g['kv_measured'])} vs "
                    f"{fmt_bytes(g['kv_predicted'])} (ratio {g['kv_ratio']:.3f}), "
                    f"decode step {fmt_seconds(g['decode_step_s_median'])}"
                )
            else:
                typer.echo(f"  batch {g['batch']:>3} ctx {g['context']:>6}: {g['does_not_fit']}")
        cap = r.details.get("capacity", {})
        if cap:
            typer.echo(
                f"  capacity at {cap['context']} tokens in {fmt_bytes(cap['budget_bytes'])}: measured "
                f"{cap['measured']} sequences, predicted {cap['predicted']}"
            )
        emit(r, json_file)
