"""`aiworkbook serve MODEL` (the embedded OpenAI-compatible server) and `aiworkbook prove serving`
(latency under load against it or any OpenAI-compatible --target)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import typer

from aiworkbook.cli.lang import said
from aiworkbook.cli.options import option
from aiworkbook.message import Msg, words


def register(app: typer.Typer) -> None:
    """Add `serve`."""

    @app.command("serve")
    def serve(
        model: str = typer.Argument("tiny-llama", help="model preset or config.json (proxy sizes on CPU)"),
        host: str = typer.Option("127.0.0.1", help="a loopback address"),
        port: int = typer.Option(8000, help="port (0: a free one)"),
        scheduler: str = typer.Option("continuous", help="continuous | static"),
        backend: str = typer.Option("torch", help="torch (the model) | synthetic (a planted step time)"),
        max_batch: int = typer.Option(16, help="sequences decoded together"),
        max_queue: int = typer.Option(256, help="requests that may wait; beyond it HTTP 429"),
        max_batched_tokens: int = typer.Option(
            None,
            help="tokens per continuous-batching forward; longer prompts prefill in chunks (default 2048)",
        ),
        kv_budget_mib: float = typer.Option(
            None, help="KV pool size in MiB, finite and > 0 (default: 64 MiB on CPU)"
        ),
        device: str = typer.Option("cpu", help="auto | cpu | cuda | cuda:N"),
        duration: float = typer.Option(0.0, help="stop after this many seconds (0: until Ctrl-C)"),
    ) -> None:
        """Serve MODEL on HOST:PORT: /v1/completions, /v1/chat/completions (streaming), /kv, /metrics.

        Refuses (exit 2) before loading a model whose weights and KV pool do not fit the free memory
        less a 10 % margin. Idle connections close after 15 s; bodies are limited to 1 MiB."""
        import math

        from aiworkbook.errors import SpecError
        from aiworkbook.serving.embedded import build_engine, embedded_server
        from aiworkbook.serving.limits import check_batching, check_port, kv_budget_bytes, serve_device

        check_port(port)  # all options before the model loads
        check_batching(max_batch, max_queue, max_batched_tokens)
        budget = kv_budget_bytes(kv_budget_mib)
        device = serve_device(device)
        if not (math.isfinite(duration) and duration >= 0):
            raise SpecError("duration", duration, "a finite number of seconds >= 0 (0: until Ctrl-C)")
        eng = build_engine(
            model,
            backend=backend,
            scheduler=scheduler,
            max_batch=max_batch,
            max_queue=max_queue,
            kv_budget_bytes=budget,
            device=device,
            max_batched_tokens=max_batched_tokens,
        )
        with embedded_server(eng, host=host, port=port) as srv:
            st = eng.stats()
            args = {
                "model": eng.spec.name,
                "url": f"{srv.url}/v1",
                "backend": backend,
                "max_batch": max_batch,
            }
            args |= {
                "scheduler": scheduler,
                "blocks": st["kv_blocks_total"],
                "block_tokens": st["kv_block_size_tokens"],
            }
            typer.echo(said(Msg("cli.serve.serving", **args)))
            # Ctrl-C / SIGTERM: the server closes on the way out and the command line says what stopped it
            # in one line, exit 130 / 143, like every other command
            end = time.monotonic() + duration if duration > 0 else None
            while end is None or time.monotonic() < end:
                time.sleep(0.2)


def register_prove(prove: typer.Typer) -> None:
    """Add `prove serving`; its options' defaults are the proof's declared ones (proofs/inputs.py)."""
    from aiworkbook.proofs import inputs as I

    SV = I.defaults(I.ServingInputs)

    @prove.command("serving")
    def serving(
        model: str = typer.Argument(None, help="model for the embedded server (default tiny-llama)"),
        target: str = option("--target", "an OpenAI-compatible base URL instead"),
        served_model: str = option(
            "--served-model", "model name the target serves (default: the one GET /v1/models lists)"
        ),
        server_kind: str = option(
            "--server-kind",
            "auto (probe whether it accepts ignore_eos/min_tokens) | vllm | sglang | tgi | openai | transformers",
            SV["server_kind"],
        ),
        request_timeout: float = option(
            "--request-timeout", "seconds per request (default 30 + 0.25 per output token: 38 for 32)"
        ),
        connect_timeout: float = option("--connect-timeout", "seconds to connect", SV["connect_timeout_s"]),
        max_duration: float = option(
            "--max-duration", "seconds for the whole run; what is in flight then is cancelled"
        ),
        warmup_duration: float = option(
            "--warmup-duration", "leave out requests scheduled in each point's first seconds"
        ),
        cooldown_duration: float = option(
            "--cooldown-duration", "leave out requests ending in each point's last seconds"
        ),
        max_error_rate: float = option(
            "--max-error-rate",
            "a load point with more failed requests than this fraction is invalid (exit 1); given, the "
            "point also stops once past it (default 0.05)",
        ),
        min_requests: int = option(
            "--min-requests",
            "a load point that completed fewer is invalid; no percentile from fewer samples (default 10)",
        ),
        shared_prefix: int = option(
            "--shared-prefix",
            "start every prompt with the same N tokens (to measure a prefix cache; default 0: none shared)",
        ),
        tokenizer: str = option(
            "--tokenizer",
            "the served model's tokenizer (a tokenizer.json, a transformers tokenizer folder, or a name in "
            "the local HF cache; no download): counts output tokens where the server's usage is missing",
        ),
        no_stream: bool = option(
            "--no-stream",
            "one JSON answer per request, not a stream: E2E and tokens/s only (no TTFT/ITL)",
            False,
        ),
        samples_csv: Path = option("--samples-csv", "write one row per request here (CSV)"),
        sweep_csv: Path = option(
            "--sweep-csv",
            "write one row per load point here (CSV): TTFT, ITL, TPOT, E2E at p50/p90/p99 with their counts",
        ),
        api: str = typer.Option(SV["api"], help="completions | chat"),
        scheduler: str = typer.Option(SV["scheduler"], help="static | continuous (embedded server)"),
        backend: str = typer.Option(SV["backend"], help="torch | synthetic (embedded server)"),
        rate: float = typer.Option(None, help="open loop: requests per second (Poisson or gamma)"),
        concurrency: int = typer.Option(None, help="closed loop: requests in flight"),
        burstiness: float = typer.Option(SV["burstiness"], help="gamma shape of the arrivals (1 = Poisson)"),
        sweep: str = typer.Option(
            None, help="comma-separated loads, e.g. 1,2,4,8 (rates with --sweep-kind rate)"
        ),
        sweep_kind: str = typer.Option(None, help="concurrency | rate"),
        requests: int = typer.Option(None, help="measured requests per load point"),
        prompt_tokens: int = typer.Option(None, help="prompt length"),
        output_tokens: int = typer.Option(
            None, help="output length (exact where the server accepts ignore_eos / min_tokens)"
        ),
        slo_ttft: float = option("--slo-ttft", "TTFT SLO in ms (goodput, bisection)"),
        slo_tpot: float = option("--slo-tpot", "TPOT SLO in ms"),
        no_compare: bool = option("--no-compare", "skip static vs continuous", False),
        no_context: bool = option("--no-context", "skip the context-length sweep", False),
        import_file: Path = option("--import", "a vllm bench serve or GuideLLM result"),
        quick: bool = option("--quick", "4 load points, 16 requests each", False),
        json_file: Path = option("--json", "write the ProofResult JSON here"),
        lang: str = option(
            "--lang", "language of the notes: en | nl | de (JSON keeps English; default: aiworkbook --lang)"
        ),
    ) -> None:
        """Latency under load (TTFT, TPOT, ITL, E2E percentiles), the knee, goodput, KV peak vs estimate."""
        options = dict(locals())  # the command's options, in their order (the result's inputs keep it)
        from aiworkbook.catalogue import check_lang
        from aiworkbook.cli.lang import cli_lang
        from aiworkbook.cli.prove_run import check_outputs, emit
        from aiworkbook.proofs import progress

        lang = lang or cli_lang()
        check_lang(lang)
        check_outputs({"import": import_file}, json=json_file, samples_csv=samples_csv, sweep_csv=sweep_csv)
        if import_file is not None:
            from aiworkbook.serving.importers import import_results

            r = import_results(import_file)
        else:
            r = progress.run("serving", _serving_inputs(options), lang)
        _print_details(r, lang)
        emit(r, json_file, lang)
        if samples_csv is not None and "requests" in r.details:
            _write_samples(samples_csv, r.details["requests"], lang)
        if sweep_csv is not None:
            from aiworkbook.serving.metrics import SWEEP_FIELDS, sweep_csv_row

            _write_csv(sweep_csv, SWEEP_FIELDS, [sweep_csv_row(x) for x in r.details.get("sweep") or []])
            points = len(r.details.get("sweep") or [])
            typer.echo(words(Msg("cli.serve.sweep_written", path=str(sweep_csv), points=points), lang))
        if r.verdict in ("error", "invalid"):  # a run that measured nothing, or too little, fails
            raise typer.Exit(1)


# `prove serving`'s options whose input to the serving proof has another name
_SERVING_INPUT_NAMES = {
    "request_timeout": "request_timeout_s",
    "connect_timeout": "connect_timeout_s",
    "max_duration": "max_duration_s",
    "warmup_duration": "warmup_s",
    "cooldown_duration": "cooldown_s",
    "slo_ttft": "slo_ttft_ms",
    "slo_tpot": "slo_tpot_ms",
}


def _serving_inputs(options: dict[str, Any]) -> dict[str, Any]:
    """The serving proof's inputs from `prove serving`'s options, in the options' order: the sweep as
    numbers, --samples-csv as `samples`, --no-compare / --no-context as `compare` / `context_sweep`."""
    from aiworkbook.errors import SpecError

    inputs: dict[str, Any] = {}
    for name, value in options.items():
        if name in ("import_file", "json_file", "sweep_csv", "lang"):
            continue
        if name == "samples_csv":
            inputs["samples"] = value is not None
        elif name == "sweep":
            try:
                inputs["sweep"] = [float(x) for x in value.split(",") if x.strip()] if value else None
            except ValueError:
                raise SpecError("sweep", value, "comma-separated numbers, e.g. 1,2,4,8") from None
        elif name == "no_stream":
            inputs["stream"] = not value
        elif name in ("no_compare", "no_context"):
            inputs["compare" if name == "no_compare" else "context_sweep"] = not value
        else:
            inputs[_SERVING_INPUT_NAMES.get(name, name)] = value
    return inputs


FORMULA_HEADS = ("=", "+", "-", "@", "\t", "\r")


def _write_samples(path: Path, rows: list, lang: str = "en") -> None:
    from aiworkbook.serving.metrics import SAMPLE_FIELDS

    _write_csv(path, SAMPLE_FIELDS, rows)
    typer.echo(words(Msg("cli.serve.samples_written", path=str(path), requests=len(rows)), lang))


def _write_csv(path: Path, fields: tuple[str, ...], rows: list) -> None:
    import csv
    import io

    from aiworkbook.persist import atomic_write_text

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=fields)
    w.writeheader()
    # a cell a spreadsheet would read as a formula (a hostile server's error text) is quoted
    w.writerows(
        {k: "'" + v if isinstance(v, str) and v[:1] in FORMULA_HEADS else v for k, v in r.items()}
        for r in rows
    )
    atomic_write_text(path, buf.getvalue())


def _throughput(x: dict) -> Msg:
    """tok/s with what counted the tokens, or chunks/s ("chunks, not tokens") when some request's
    output was counted only in chunks."""
    from aiworkbook.serving.proof import counted_by

    tput, chunks = x.get("throughput_tok_s"), x.get("throughput_chunks_s")
    src = x.get("tokens_from") or {}
    if isinstance(tput, int | float):
        return (
            Msg("serving.cli.tput_from", tput=tput, how=counted_by(src))
            if src
            else Msg("serving.cli.tput", tput=tput)
        )
    if isinstance(chunks, int | float):
        return Msg("serving.cli.chunks", chunks=chunks, how=counted_by(src))
    return Msg("serving.cli.no_tput")


def _ms(v, lang: str = "en") -> str:
    """Seconds as milliseconds, one decimal, nine wide (n/a where not measured), in `lang`'s digits."""
    from aiworkbook.i18n_format import fixed

    said = (
        fixed(v * 1e3, 1, lang, group=False) if isinstance(v, int | float) else Msg("value.na").render(lang)
    )
    return f"{said:>9}"


_METRIC_NAMES = (("ttft", "TTFT"), ("itl", "ITL"), ("tpot", "TPOT"), ("e2e", "E2E"), ("cpu", "CPU"))


def _print_details(r, lang: str = "en") -> None:
    """Per load point: TTFT, ITL, TPOT and E2E at p50/p90/p99 in ms with the samples each rests on
    (n/a below the minimum), then throughput (tokens, or chunks when only chunks were counted); in `lang`."""

    d = r.details
    rows = d.get("sweep") or []
    for x in rows:
        both = [  # an import's: what the tool wrote, both where it ran with both
            *([Msg("serving.cli.rate", x=x["rate"])] if x.get("rate") is not None else []),
            *(
                [Msg("serving.cli.concurrency", x=x["concurrency"])]
                if x.get("concurrency") is not None
                else []
            ),
        ]
        at = Msg("serving.cli.load", load=x["load"], both=Msg("serving.cli.both", items=both) if both else "")
        errors = str(x.get("errors") or {})
        if x.get("requests") is not None:
            typer.echo(words(Msg("serving.cli.requests", at=at, requests=x["requests"], errors=errors), lang))
        else:
            typer.echo(words(Msg("serving.cli.errors", at=at, errors=errors), lang))
        typer.echo(f"    {'':<5} {'p50':>9} {'p90':>9} {'p99':>9} {'n':>6}  (ms)")
        for key, name in _METRIC_NAMES:
            if not any(f"p{q}_{key}_s" in x for q in (50, 90, 99)):  # an imported row: what the tool wrote
                continue
            basis = ""
            if key == "itl" and x.get("n_itl") and x.get("itl_basis", "per token") != "per token":
                basis = f"  {x['itl_basis']}"
            n = x.get(f"n_{key}")
            typer.echo(
                f"    {name:<5} {_ms(x.get(f'p50_{key}_s'), lang)} {_ms(x.get(f'p90_{key}_s'), lang)} "
                f"{_ms(x.get(f'p99_{key}_s'), lang)} {n if n is not None else Msg('value.na').render(lang)!s:>6}{basis}"
            )
        typer.echo(f"    {words(_throughput(x), lang)}")
    if rows:
        knee = d.get("knee")
        said = Msg("serving.cli.knee", knee=knee) if knee is not None else Msg("serving.cli.no_knee")
        typer.echo(words(said, lang))
    # static vs continuous, the context where the pool runs out and the SLO's load are the result's
    # notes (printed below it), so the report dashboard shows them too
    c = d.get("context_sweep")
    if c:
        for x in c["rows"]:
            said = Msg(
                "serving.cli.context",
                context=f"{x['context']:>6}",
                kv_bytes=x["kv_bytes_peak"],
                running=x["peak_running"],
                estimate=x["capacity_predicted"],
                tpot=_ms(x["p50_tpot_s"], lang).strip(),
            )
            typer.echo(words(said, lang))
