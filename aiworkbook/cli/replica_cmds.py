"""`aiworkbook replica-time`: how long a new model-server replica takes from scale-up to first token,
beside the autoscaler's reaction and the load spike (aiworkbook.sizing.replica)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

GB = 1e9


def register(app: typer.Typer) -> None:
    """Add this module's commands to the app."""

    @app.command("replica-time")
    def replica_time_cmd(
        image_gb: float = typer.Option(..., "--image-gb", help="Container image size in GB (1e9 bytes)."),
        weights_gb: float = typer.Option(
            None, "--weights-gb", help="Weights in GB; default: from --model at --dtype."
        ),
        model: str = typer.Option(None, "--model", help="A model preset or config.json (for the weights)."),
        dtype: str = typer.Option("bf16", "--dtype", help="Weights dtype with --model."),
        pull_gb_s: float = typer.Option(..., "--pull-gb-s", help="Image pull bandwidth, GB/s."),
        download_gb_s: float = typer.Option(..., "--download-gb-s", help="Weight download bandwidth, GB/s."),
        load_gb_s: float = typer.Option(
            None, "--load-gb-s", help="Disk to GPU load bandwidth, GB/s (or --coldstart)."
        ),
        coldstart: Path = typer.Option(
            None,
            "--coldstart",
            help="A coldstart proof result (JSON): its measured rate replaces --load-gb-s.",
        ),
        warmup_s: float = typer.Option(0.0, "--warmup-s", help="Engine warm-up (CUDA graphs, compile), s."),
        provision_s: float = typer.Option(0.0, "--provision-s", help="A new node when none is free, s."),
        reaction_s: float = typer.Option(
            0.0, "--reaction-s", help="The autoscaler's reaction (metric window + decision), s."
        ),
        spike_s: float = typer.Option(None, "--spike-s", help="How long the load spike lasts, s."),
        image_cached: bool = typer.Option(False, "--image-cached", help="The image is already on the node."),
        weights_cached: bool = typer.Option(
            False, "--weights-cached", help="The weights are already on the node."
        ),
        as_json: bool = typer.Option(False, "--json", help="Print JSON for scripts."),
    ) -> None:
        """Time from scale-up to first token of a new replica, and whether scaling out follows the load."""
        from aiworkbook.errors import SpecError
        from aiworkbook.message import Msg
        from aiworkbook.sizing.replica import ColdStart, check_positive, format_replica, replica_time

        for name, v in (("image_gb", image_gb), ("pull_gb_s", pull_gb_s), ("download_gb_s", download_gb_s)):
            check_positive(name, v, zero=name == "image_gb")
        for name, v in (("weights_gb", weights_gb), ("load_gb_s", load_gb_s)):
            if v is not None:
                check_positive(name, v)
        weights = weights_gb * GB if weights_gb is not None else None
        if weights is None:
            if model is None:
                raise SpecError("weights_gb", None, Msg("allowed.weights_gb"))
            weights = _weights_of(model, dtype)
        measured = None
        if coldstart is not None:
            from aiworkbook.persist import read_json

            # bounded, a regular file, nesting and bad JSON in words (someone else's result file)
            doc = read_json(coldstart, what=Msg("file.coldstart_result"))
            measured = ColdStart.from_result(doc, source=str(coldstart))
        r = replica_time(
            image_bytes=image_gb * GB,
            weights_bytes=weights,
            image_pull_bps=pull_gb_s * GB,
            weights_download_bps=download_gb_s * GB,
            load_bps=load_gb_s * GB if load_gb_s is not None else None,
            coldstart=measured,
            warmup_s=warmup_s,
            provision_s=provision_s,
            reaction_s=reaction_s,
            spike_s=spike_s,
            image_cached=image_cached,
            weights_cached=weights_cached,
        )
        if as_json:
            from aiworkbook.persist import dumps_json

            typer.echo(dumps_json(r.to_dict(), indent=2))
        else:
            from aiworkbook.cli.lang import cli_lang

            typer.echo(format_replica(r, cli_lang()))


def _weights_of(model: str, dtype: str) -> float:
    """The weights' bytes of a model preset at `dtype`, as the sizing estimate counts them."""
    from aiworkbook.sizing.estimate import estimate
    from aiworkbook.sizing.workload import Workload
    from aiworkbook.specs import load_model

    spec = load_model(model)
    wd: Any = dtype  # Workload checks it against its dtypes (SpecError naming weights_dtype)
    prec: Any = dtype if dtype in ("fp32", "fp16") else "bf16"
    w = Workload(mode="infer", weights_dtype=wd, precision=prec)
    return float(estimate(spec, w, None, "cpu").storage["weights_bytes"])
