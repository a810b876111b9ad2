"""`aiworkbook monitor`: a live GPU + host table in the terminal, optional JSONL log, recorded trace,
CSV export and a Prometheus/OpenMetrics endpoint; replays a trace where there is no GPU."""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    """Add this module's commands to the app."""

    @app.command("monitor")
    def monitor(
        interval: float = typer.Option(1.0, "--interval", help="Seconds between samples (0.1 to 3600)."),
        duration: float = typer.Option(
            None, "--duration", help="Stop after this many seconds (default: until Ctrl-C)."
        ),
        jsonl: Path = typer.Option(
            None, "--jsonl", help="Append every sample to this JSONL log as it comes."
        ),
        record: Path = typer.Option(
            None,
            "--record",
            help="Write a recorded trace (schema-versioned JSONL) at the end, e.g. data/traces/<gpu>.jsonl.",
        ),
        csv: Path = typer.Option(None, "--csv", help="Write all samples as CSV at the end."),
        serve: str = typer.Option(
            None, "--serve", help="Serve Prometheus/OpenMetrics text at HOST:PORT/metrics."
        ),
        replay: str = typer.Option(
            None,
            "--replay",
            help="Replay a trace file instead of reading NVML ('synthetic': the shipped demo trace).",
        ),
        host: bool = typer.Option(True, "--host/--no-host", help="Read host CPU, RAM, disk and network too."),
        quiet: bool = typer.Option(False, "--quiet", help="No table; only the summary at the end."),
        capabilities: bool = typer.Option(
            False, "--capabilities", help="Print the per-GPU capability matrix and exit."
        ),
    ) -> None:
        """Live GPU and host telemetry; logs, records a trace and serves metrics on request."""
        from aiworkbook.errors import SpecError
        from aiworkbook.telemetry.sampler import Sampler, check_interval

        check_interval(interval)
        if duration is not None and not (math.isfinite(duration) and duration > 0):
            raise SpecError("duration", duration, "a positive, finite number of seconds")
        from aiworkbook.persist import check_writable

        # fail now, not after the whole recording, when an output cannot be written
        for field, path in (("jsonl", jsonl), ("record", record), ("csv", csv)):
            if path is not None:
                check_writable(path, field)
        if serve:
            from aiworkbook.telemetry.openmetrics import parse_bind

            parse_bind(serve)
        reader = None
        if replay:
            from aiworkbook.telemetry.replay import ReplayReader, shipped_traces

            if replay == "synthetic":
                found = [p for p in shipped_traces() if "synthetic" in p.name]
                if not found:
                    raise SpecError(
                        "replay", replay, "a trace file (no synthetic trace shipped under data/traces)"
                    )
                replay = str(found[0])
            reader = ReplayReader(replay)
        sampler = Sampler(interval=interval, gpu_reader=reader, host=host)
        if capabilities:
            from aiworkbook.telemetry.capabilities import format_matrix

            typer.echo(sampler.status())
            typer.echo(format_matrix(sampler.gpu_reader.capabilities()))
            return
        _run(sampler, interval, duration, jsonl, record, csv, serve, quiet)


def _run(sampler, interval, duration, jsonl, record, csv, serve, quiet) -> None:
    from aiworkbook.telemetry.export import JsonlLog, to_csv, to_jsonl
    from aiworkbook.telemetry.replay import trace_header
    from aiworkbook.telemetry.table import render_table

    reader = sampler.gpu_reader
    status = reader.status()
    names = [i.get("name", "") for i in reader.identities()] if reader.count() else []
    header = trace_header(reader, interval, source="recorded" if reader.source == "nvml" else "replay")
    server = None
    if serve:  # bound before any file is opened: a bad address fails with nothing written
        from aiworkbook.telemetry.openmetrics import parse_bind
        from aiworkbook.telemetry.openmetrics import serve as start_server

        server = start_server(sampler, *parse_bind(serve))
        bound = server.server_address
        typer.echo(f"serving metrics at http://{bound[0]}:{bound[1]}/metrics", err=True)
    log = JsonlLog(jsonl, header) if jsonl else None
    tty = sys.stdout.isatty() and not quiet
    t_start = time.monotonic()
    last_t = None
    sampler.start()
    try:
        while True:
            time.sleep(
                min(interval, 0.25)
                if duration is None
                else min(interval, 0.25, max(0.0, t_start + duration - time.monotonic()))
            )
            new = (
                sampler.samples(since=last_t)
                if last_t is None
                else [s for s in sampler.samples(since=last_t) if s.t > last_t]
            )
            for s in new:
                if log:
                    log.write(s)
            if new:
                last_t = new[-1].t
                if not quiet:
                    table = render_table(new[-1], names, status)
                    typer.echo(("\x1b[H\x1b[2J" + table) if tty else table + "\n")
            if duration is not None and time.monotonic() - t_start >= duration:
                break
    except KeyboardInterrupt:
        typer.echo("stopped", err=True)
    finally:
        sampler.stop()
        if server is not None:
            server.shutdown()
        if log:
            for s in sampler.samples(since=last_t):  # the samples the loop had not written yet
                if last_t is None or s.t > last_t:
                    log.write(s)
            log.close()
    samples = sampler.samples()
    if record:
        to_jsonl(samples, record, header)
        typer.echo(f"recorded {len(samples)} samples to {record} ({header['label']})", err=True)
    if csv:
        to_csv(samples, csv)
    _print_summary(sampler, samples)


def _print_summary(sampler, samples) -> None:
    from aiworkbook.telemetry.na import na_reason
    from aiworkbook.telemetry.summary import Window

    s = Window(samples, sampler.events).summary()
    typer.echo(f"{s['n_samples']} samples over {s['duration_s']:.1f} s; {sampler.status()}")
    for gpu, joules in s["energy_j"].items():
        shares = ", ".join(f"{k} {v:.0%}" for k, v in s["throttle_share"].get(gpu, {}).items()) or "none"
        energy = (
            f"{joules:.1f} J ({s['energy_method'][gpu]})"
            if isinstance(joules, float)
            else f"n/a ({na_reason(joules) or joules})"
        )
        typer.echo(f"{gpu}: energy {energy}; throttle reasons active: {shares}")
    for e in s["events"]:
        typer.echo(f"event: GPU {e['gpu']} {e['type']} {e.get('xid', e['data'])} {e.get('description', '')}")
