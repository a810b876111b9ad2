"""`aiworkbook monitor`: a live GPU + host table in the terminal, optional JSONL log, recorded trace,
CSV export and a Prometheus/OpenMetrics endpoint; replays a trace where there is no GPU."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from aiworkbook.cli.options import option

if TYPE_CHECKING:
    from aiworkbook.telemetry.replay import ReplayReader


def register(app: typer.Typer) -> None:
    """Add this module's commands to the app."""

    @app.command("monitor")
    def monitor(
        interval: float = option("--interval", "Seconds between samples (0.1 to 3600).", 1.0),
        duration: float = option("--duration", "Stop after this many seconds (default: until Ctrl-C)."),
        jsonl: Path = option("--jsonl", "Append every sample to this JSONL log as it comes."),
        record: Path = option(
            "--record",
            "Write a recorded trace (schema-versioned JSONL) at the end, e.g. data/traces/<gpu>.jsonl.",
        ),
        csv: Path = option("--csv", "Write all samples as CSV at the end."),
        serve: str = option("--serve", "Serve Prometheus/OpenMetrics text at HOST:PORT/metrics."),
        replay: str = option(
            "--replay", "Replay a trace file instead of reading NVML ('synthetic': the shipped demo trace)."
        ),
        host: bool = option("--host/--no-host", "Read host CPU, RAM, disk and network too.", True),
        quiet: bool = option("--quiet", "No table; only the summary at the end.", False),
        capabilities: bool = option("--capabilities", "Print the per-GPU capability matrix and exit.", False),
        prometheus: str = option(
            "--prometheus",
            "Read the fleet (every node and GPU) from this Prometheus server instead, e.g. http://127.0.0.1:9090.",
        ),
        window: float = option(
            "--window", "With --prometheus: seconds of history to read (10 to 604800).", 600.0
        ),
        node_label: str = option(
            "--node-label", "With --prometheus: the label naming a node (instance, Hostname).", "instance"
        ),
        as_json: bool = option("--json", "With --prometheus: print JSON for scripts.", False),
    ) -> None:
        """Live GPU and host telemetry; logs, records a trace and serves metrics on request."""
        if prometheus is not None:
            local = {"--serve": serve, "--replay": replay, "--jsonl": jsonl, "--record": record, "--csv": csv}
            given = [k for k, v in local.items() if v] + (["--capabilities"] if capabilities else [])
            if given:
                from aiworkbook.errors import SpecError

                raise SpecError(
                    "prometheus", prometheus, f"alone: {', '.join(given)} read this node, not the fleet"
                )
            _fleet(prometheus, window, node_label, as_json)
            return
        from aiworkbook.telemetry.monitor import check_duration, check_outputs
        from aiworkbook.telemetry.sampler import Sampler, check_interval

        check_interval(interval)
        check_duration(duration)
        # fail now, not after the whole recording, when an output cannot be written (or is not a log)
        from aiworkbook.cli.paths import check_paths

        check_paths(
            {"replay": replay if replay != "synthetic" else None}, jsonl=jsonl, record=record, csv=csv
        )
        check_outputs(jsonl, record, csv)
        if serve:
            from aiworkbook.telemetry.openmetrics import parse_bind

            parse_bind(serve)
        reader = _replay_reader(replay) if replay else None
        sampler = Sampler(interval=interval, gpu_reader=reader, host=host)
        if capabilities:
            from aiworkbook.cli.lang import cli_lang, said
            from aiworkbook.telemetry.capabilities import format_matrix

            typer.echo(said(sampler.status()))
            typer.echo(format_matrix(sampler.gpu_reader.capabilities(), cli_lang()))
            return
        _run(sampler, interval, duration, jsonl, record, csv, serve, quiet)


def _replay_reader(replay: str) -> ReplayReader:
    """The reader of trace file `replay` ('synthetic': the shipped demo trace)."""
    from aiworkbook.errors import SpecError
    from aiworkbook.telemetry.replay import ReplayReader, shipped_traces

    if replay == "synthetic":
        found = [p for p in shipped_traces() if "synthetic" in p.name]
        if not found:
            raise SpecError("replay", replay, "a trace file (no synthetic trace shipped under data/traces)")
        replay = str(found[0])
    return ReplayReader(replay)


def _run(sampler, interval, duration, jsonl, record, csv, serve, quiet) -> None:
    from aiworkbook import signals
    from aiworkbook.cli.lang import cli_lang, said
    from aiworkbook.message import Joined, Msg
    from aiworkbook.telemetry.monitor import run_monitor
    from aiworkbook.telemetry.replay import trace_header
    from aiworkbook.telemetry.table import render_table

    reader = sampler.gpu_reader
    status = reader.status()
    names = [i.get("name", "") for i in reader.identities()] if reader.count() else []
    header = trace_header(reader, interval, source="recorded" if reader.source == "nvml" else "replay")
    tty = sys.stdout.isatty() and not quiet
    lang = cli_lang()
    if not tty:  # a redrawn screen shows the status on top; a scrolling log says it once
        typer.echo(said(status), err=True)

    def show(sample) -> None:
        if quiet:
            return
        if tty:
            typer.echo("\x1b[H\x1b[2J" + render_table(sample, names, status, lang))
        else:
            typer.echo(render_table(sample, names, lang=lang) + "\n")

    server = None
    try:
        if serve:  # bound before any file is opened: a bad address fails with nothing written
            from aiworkbook.telemetry.openmetrics import parse_bind
            from aiworkbook.telemetry.openmetrics import serve as start_server

            server = start_server(sampler, *parse_bind(serve))
            bound = server.server_address
            typer.echo(said(Msg("monitor.serving_at", url=_url(str(bound[0]), int(bound[1])))), err=True)
        run = run_monitor(
            sampler,
            interval=interval,
            header=header,
            duration=duration,
            jsonl=jsonl,
            record=record,
            csv=csv,
            on_sample=show,
        )
    finally:
        if server is not None:
            with signals.deferred("stopping the metrics server"):
                server.shutdown()
                server.server_close()
    with signals.deferred("printing the summary"):
        _print_summary(sampler, run.samples)
        files = Joined(*[p for i, w in enumerate(run.written) for p in (("; ", w) if i else (w,))])
        kept: Msg = files if run.written else Msg("monitor.kept_nothing")
        if run.stopped_by is not None:
            import signal

            what = (
                Msg("cli.ctrl_c") if run.stopped_by == signal.SIGINT else signal.Signals(run.stopped_by).name
            )
            typer.echo(said(Msg("monitor.stopped", by=what, kept=kept)), err=True)
        elif run.written:
            typer.echo(said(Msg("monitor.kept", kept=kept)), err=True)
    if run.stopped_by is not None:
        raise typer.Exit(128 + int(run.stopped_by))


def _fleet(url: str, window: float, node_label: str, as_json: bool) -> None:
    """`monitor --prometheus URL`: the fleet's latest readings once; exit 1 when the server cannot be read."""
    from aiworkbook.telemetry.prometheus import PrometheusError, PrometheusReader, format_fleet

    reader = PrometheusReader(url, node_label=node_label)
    try:
        view = reader.fleet(window_s=window)
    except PrometheusError as exc:  # its message in the language of --lang
        from aiworkbook.cli.lang import said
        from aiworkbook.message import Msg

        typer.echo(said(Msg("cli.error", text=exc.args[0] if exc.args else str(exc))), err=True)
        raise typer.Exit(1) from None
    if as_json:
        from aiworkbook.persist import dumps_json

        typer.echo(dumps_json(view.to_dict(), indent=2))
    else:
        typer.echo(format_fleet(view))


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}/metrics" if ":" in host else f"http://{host}:{port}/metrics"


def _method(method: str) -> object:
    """How the energy was read (the summary's energy_method) in words."""
    from aiworkbook.message import Msg

    if method == "energy counter":
        return Msg("monitor.method.counter")
    return Msg("monitor.method.integral") if method == "power integral" else method


def _print_summary(sampler, samples) -> None:
    from aiworkbook.cli.lang import said
    from aiworkbook.message import Msg
    from aiworkbook.telemetry.na import na_reason
    from aiworkbook.telemetry.summary import Window

    s = Window(samples, sampler.events).summary()
    typer.echo(
        said(Msg("monitor.summary", n=s["n_samples"], seconds=s["duration_s"], status=sampler.status()))
    )
    for gpu, joules in s["energy_j"].items():
        shares = [
            Msg("monitor.share", reason=k, share=v) for k, v in s["throttle_share"].get(gpu, {}).items()
        ]
        active = Msg("monitor.shares", shares=shares) if shares else Msg("passive.value.none")
        energy = (
            Msg("monitor.energy", joules=joules, method=_method(s["energy_method"][gpu]))
            if isinstance(joules, float)
            else Msg("monitor.energy_na", why=na_reason(joules) or joules)
        )
        typer.echo(said(Msg("monitor.gpu_energy", gpu=gpu, energy=energy, shares=active)))
    for e in s["events"]:
        what = e.get("description", "")  # an XID's meaning, said in --lang's language
        typer.echo(
            said(Msg("monitor.event", gpu=e["gpu"], type=e["type"], xid=e.get("xid", e["data"]), what=what))
        )
