"""What the serving proof says about the server it measured: the forced-length probe checks the
answer's length before claiming "output lengths forced" (a server that accepts ignore_eos/min_tokens
and stops early is not believed), a 429 or a 400 during the probe is said as such, the server's
identity (Server header, /v1/models owned_by, /version) is recorded and a local path served as the
model id is reduced to its last part; and --no-stream reports E2E and tokens/s, with no TTFT."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from aiohttp import web

from aiworkbook.proofs import registry
from aiworkbook.serving.discover import discover_sync, shown_model
from aiworkbook.serving.server import ServerThread

TOKEN = b'data: {"choices":[{"text":" a","finish_reason":null}]}\n\n'


def _app(stream: Callable[[dict], tuple[int, int]], model: str = "m") -> ServerThread:
    """A completions route answering (status, tokens) = stream(body), the tokens streamed with usage,
    /v1/models (owned by "acme"), /version, and a Server header."""

    async def completions(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        status, n = stream(body)
        if status != 200:
            return web.json_response({"error": {"message": f"status {status}"}}, status=status)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for _ in range(n):
            await resp.write(TOKEN)
        await resp.write(
            b'data: {"choices":[{"text":"","finish_reason":"stop"}],"usage":{"prompt_tokens":3,'
            b'"completion_tokens":%d}}\n\ndata: [DONE]\n\n' % n
        )
        await resp.write_eof()
        return resp

    async def models(request: web.Request) -> web.Response:
        return web.json_response(
            {"data": [{"id": model, "owned_by": "acme"}]}, headers={"Server": "acme-serve/1.2"}
        )

    async def version(request: web.Request) -> web.Response:
        return web.json_response({"version": "0.34.0"})

    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/version", version)
    return ServerThread(app)


def test_a_server_that_accepts_the_extensions_but_stops_early_is_not_believed():
    # accepts ignore_eos / min_tokens and answers 2 tokens whatever is asked (an early EOS)
    with _app(lambda body: (200, 2)) as s:
        found = discover_sync(s.url)
    assert found.mode == "standard" and not found.target.exact_lengths
    assert "asked 8 tokens" in found.probe and "got 2" in found.probe and "stopped early" in found.probe
    assert "forced" not in found.note().split("probe:")[0].replace("cannot be forced", "")


def test_a_server_that_honours_them_is_forced_and_identified_as_it_says():
    with _app(lambda body: (200, body["max_tokens"]), model="/srv/models/llama-3-8b") as s:
        found = discover_sync(s.url)
    assert found.mode == "exact" and "got 8 (usage)" in found.probe
    d = found.to_dict()
    assert d["server"] == {"server_header": "acme-serve/1.2", "owned_by": "acme", "version": "0.34.0"}
    assert d["model"] == "llama-3-8b" and found.target.model == "/srv/models/llama-3-8b"  # asked by its id
    assert "/srv/models" not in found.note() and "acme-serve/1.2" in found.note()
    assert shown_model("meta-llama/Llama-3.1-8B") == "meta-llama/Llama-3.1-8B"  # a hub id is kept


def test_a_429_or_a_400_during_the_probe_is_said_as_such():
    with _app(lambda body: (429, 0)) as s:
        found = discover_sync(s.url)
    assert found.mode == "standard" and "rate-limited" in found.probe and "http-429" in found.probe
    with _app(lambda body: (400, 0)) as s:  # a wrong model name: refused with and without extensions
        found = discover_sync(s.url, model="wrong")
    assert "the request itself refused (http-400" in found.probe and "extensions refused" not in found.probe
    assert found.to_dict()["server"]["owned_by"] == "acme"  # identity read though the name was given


@pytest.mark.timeout(120)
def test_a_forced_run_flags_answers_that_stop_early():
    # honours the probe's 8, then stops at 3 of the run's 16
    with _app(lambda body: (200, min(body["max_tokens"], 8 if "probe" in str(body) else 3))) as s:
        r = registry.run("serving", target=s.url, sweep=[1], requests=10, output_tokens=16)
    assert r.details["target"]["mode"] == "exact" and r.details["sweep"][0]["stopped_early"] == 10
    assert any("stopped before the forced length of 16" in n for n in r.notes)


@pytest.mark.timeout(120)
def test_no_stream_reports_e2e_and_tokens_per_second_without_ttft(tmp_path, capsys):
    """On the embedded server (synthetic steps), which answers "stream": false with one JSON body."""
    from aiworkbook.cli import main
    from aiworkbook.proofs.result import ProofResult

    js = tmp_path / "r.json"
    args = ["prove", "serving", "--backend", "synthetic", "--sweep", "1", "--requests", "10"]
    args += ["--output-tokens", "4", "--no-compare", "--no-context", "--no-stream", "--json", str(js)]
    assert main(args) == 0
    row = ProofResult.load(js).details["sweep"][0]
    assert row["n_e2e"] == 10 and row["p50_e2e_s"] > 0 and row["throughput_tok_s"] > 0
    assert row["n_ttft"] == row["n_itl"] == row["n_tpot"] == 0 and row["p50_ttft_s"] is None
    assert row["tokens_from"] == {"usage": 10}
    assert "tok/s (tokens from usage 10)" in capsys.readouterr().out


@pytest.mark.timeout(60)
def test_a_server_that_never_ends_a_stream_costs_a_few_timeouts_not_the_sweep():
    """Each request times out; once more have than the max error rate allows of the point, the point
    stops (it is invalid whatever the rest do), and the sweep stops after a point that measured
    nothing, naming the bound that stopped it. The defaults size the request limit from the output."""
    import asyncio

    from aiworkbook.serving.proof import ServingSettings

    seen = [0]

    async def forever(request: web.Request) -> web.StreamResponse:
        await request.read()
        seen[0] += 1
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        while True:
            await resp.write(TOKEN)
            await asyncio.sleep(0.05)

    app = web.Application()
    app.router.add_post("/v1/completions", forever)
    with ServerThread(app) as s:
        r = registry.run(
            "serving", target=s.url, served_model="m", sweep=[1, 2, 4], requests=20, request_timeout_s=0.3
        )
    assert r.verdict == "error" and len(r.details["sweep"]) == 1
    # the probe, the warm-up, then 2 timeouts: 1 (5 % of 20) is allowed, the second stops the point
    assert seen[0] == 4
    assert any("stopped by the request timeout" in n for n in r.notes)
    assert any("the sweep stopped after concurrency 1 measured nothing: 2, 4 not run" in n for n in r.notes)
    assert "(--request-timeout)" in r.notes[0]
    assert ServingSettings.from_inputs({"output_tokens": 32}).request_timeout_s == 38.0
    assert ServingSettings.from_inputs({"output_tokens": 32, "request_timeout_s": 5}).request_timeout_s == 5


def test_imports_keep_rate_and_concurrency_and_the_tools_own_itl(tmp_path):
    """A vLLM result run at request rate 8 with max concurrency 16 keeps both; vLLM's ITL and E2E
    land in their own columns; GuideLLM's inter_token_latency_ms is its ITL (and this TPOT)."""
    import json
    from pathlib import Path

    from aiworkbook.serving.importers import import_results

    doc = {
        "request_rate": 8.0,
        "max_concurrency": 16,
        "completed": 40,
        "failed": 0,
        "median_ttft_ms": 20.0,
        "p99_ttft_ms": 40.0,
        "median_tpot_ms": 5.0,
        "median_itl_ms": 4.0,
        "p99_itl_ms": 9.0,
        "median_e2el_ms": 300.0,
        "output_throughput": 100.0,
    }
    path = tmp_path / "vllm.json"
    path.write_text(json.dumps(doc))
    row = import_results(path).details["sweep"][0]
    assert row["load"] == 16 and row["concurrency"] == 16 and row["rate"] == 8.0
    assert row["p50_itl_s"] == pytest.approx(0.004) and row["p99_itl_s"] == pytest.approx(0.009)
    assert row["p50_e2e_s"] == pytest.approx(0.3) and row["p50_tpot_s"] == pytest.approx(0.005)
    data = Path(__file__).parent / "data"
    g = import_results(data / "guidellm_0.8.1_report.json").details["sweep"][0]
    assert g["p50_itl_s"] == g["p50_tpot_s"] and g["n_itl"] > g["n_ttft"]  # per token, per request
    v = import_results(data / "vllm_0.34.0_bench_serve.jsonl").details["sweep"][0]
    assert v["n_itl"] > v["n_ttft"] and v["p50_itl_s"] > 0  # pooled from the raw itls
