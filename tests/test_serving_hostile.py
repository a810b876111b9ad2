"""The load generator and the serving proof against hostile, broken or strict servers on loopback:
every fault is a counted error of its kind (never an internal error), nothing is buffered without
bound, every wait is bounded, and a run that measured nothing fails."""

from __future__ import annotations

import asyncio
import contextlib
import time
import tracemalloc
from collections.abc import Awaitable, Callable

import pytest
from aiohttp import web

from aiworkbook.errors import SpecError
from aiworkbook.proofs import registry
from aiworkbook.serving.client import MAX_LINE_BYTES, Load, Target, run_load_sync
from aiworkbook.serving.discover import discover_sync
from aiworkbook.serving.metrics import summarize_run
from aiworkbook.serving.server import FixedDelay, ServerThread, make_app

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
TOKEN = b'data: {"choices":[{"text":" a","finish_reason":null}]}\n\n'


def _server(handler: Handler, models: list[str] | None = None) -> ServerThread:
    """One completions route (and /v1/models listing `models`) on a free loopback port."""

    async def list_models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": m} for m in models or ["m"]]})

    app = web.Application()
    app.router.add_post("/v1/completions", handler)
    app.router.add_post("/v1/chat/completions", handler)
    app.router.add_get("/v1/models", list_models)
    return ServerThread(app)


def _stream(*parts: bytes, close: bool = False, pause_s: float = 0.0) -> Handler:
    """A handler writing `parts` as an event stream, then ending the body (or closing the socket)."""

    async def handler(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for p in parts:
            await resp.write(p)
        await asyncio.sleep(pause_s)
        if close and request.transport is not None:
            request.transport.close()
            return resp
        await resp.write_eof()
        return resp

    return handler


def _errors(handler: Handler, requests: int = 2, **target) -> dict[str, int]:
    with _server(handler) as s:
        recs = run_load_sync(
            Target(s.url, "m", **target), Load(requests=requests, concurrency=1, output_tokens=2, warmup=0)
        )
    return summarize_run(recs)["errors"]


@pytest.mark.parametrize(
    ("parts", "kind"),
    [
        ((TOKEN, b"data: {not json\n\n"), "malformed-event"),
        ((TOKEN, b'data: {"choices":[{"text":" b"}],"usage":"x"}\n\n'), "malformed-event"),
        ((b'data: {"choices":5}\n\n',), "malformed-event"),
        ((b'data: {"choices":"abc"}\n\n',), "malformed-event"),
        ((b"data: [1, 2]\n\n",), "malformed-event"),
        ((TOKEN, b'data: {"error": {"message": "boom"}}\n\n'), "server-error"),
        ((TOKEN, TOKEN), "no-done"),  # the body ends with neither [DONE] nor a finish_reason
        ((b"data: " + b"x" * (MAX_LINE_BYTES + 1024) + b"\n\n",), "oversize"),
        ((TOKEN, b"data: " + b"[" * 200_000 + b"]" * 200_000 + b"\n\n"), "malformed-event"),  # RecursionError
        ((TOKEN, b"data: " + b'{"a":' * 50_000 + b"1" + b"}" * 50_000 + b"\n\n"), "malformed-event"),
        ((TOKEN, b"data: \xff" + b"[" * 200_000 + b"\n\n"), "malformed-event"),  # not UTF-8, then nested
    ],
)
def test_broken_events_are_errors_of_their_kind(parts, kind):
    assert _errors(_stream(*parts)) == {kind: 2}


def test_a_stream_closed_mid_way_is_dropped():
    assert _errors(_stream(TOKEN, close=True, pause_s=0.05)) == {"stream-dropped": 2}


def test_a_stream_ending_on_a_finish_reason_without_done_succeeds():
    """transformers serve ends its streams after the chunk carrying finish_reason and usage, without
    [DONE]: that is a complete answer, and its usage counts."""
    last = b'data: {"choices":[{"text":" b","finish_reason":"length"}],"usage":{"completion_tokens":2}}\n\n'
    with _server(_stream(TOKEN, last)) as s:
        recs = run_load_sync(Target(s.url, "m"), Load(requests=2, concurrency=1, output_tokens=2, warmup=0))
    assert all(r.ok and r.tokens == 2 and r.usage_tokens == 2 for r in recs)


def test_a_50_mb_line_is_not_buffered_whole():
    """The server writes one 50 MB line in 1 MiB pieces of the same bytes; the client gives up past
    MAX_LINE_BYTES, so what it held at once stays a few MiB (the limit and aiohttp's buffer)."""
    piece = b"y" * (1 << 20)

    async def handler(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        try:
            await resp.write(b"data: ")
            for _ in range(50):
                await resp.write(piece)
        except (ConnectionError, RuntimeError):
            pass  # the client hung up
        return resp

    tracemalloc.start()
    try:
        errors = _errors(handler, requests=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert errors == {"oversize": 1}
    assert peak < 16 * (1 << 20), peak


@pytest.mark.timeout(30)
@pytest.mark.parametrize("stream", [True, False])
def test_a_declared_100_gb_answer_is_oversize_before_it_is_read(stream):
    """The server declares 100 GB and then sends nothing: the client refuses from the header alone
    (a client that read would wait, then see the body end short)."""

    async def handler(request: web.Request) -> web.StreamResponse:
        await request.read()
        kind = "text/event-stream" if stream else "application/json"
        resp = web.StreamResponse(headers={"Content-Type": kind, "Content-Length": str(100 * 2**30)})
        await resp.prepare(request)
        await asyncio.sleep(3)  # then the body ends short: a client that read it sees stream-dropped
        return resp

    errors = _errors(handler, requests=1, stream=stream, timeout_s=60.0)
    assert errors == {"oversize": 1}


def test_a_stream_that_never_ends_is_cut_at_what_its_answer_can_hold():
    """Comment lines (64 KiB each, under the line limit) without end: past body_cap(2 tokens) the
    request is oversize; nothing waits for the request timeout."""
    from aiworkbook.serving.client import body_cap

    async def handler(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        try:
            for _ in range(body_cap(2) // 65536 + 100):
                await resp.write(b": " + b"k" * 65536 + b"\n")
        except (ConnectionError, RuntimeError):
            pass  # the client hung up
        return resp

    assert _errors(handler, requests=1, timeout_s=60.0) == {"oversize": 1}


@pytest.mark.parametrize("stream", [True, False])
def test_a_nested_event_or_answer_says_so_in_its_detail(stream):
    nested = b"[" * 200_000 + b"]" * 200_000

    async def handler(request: web.Request) -> web.StreamResponse:
        if stream:
            return await _stream(TOKEN, b"data: " + nested + b"\n\n")(request)
        await request.read()
        return web.Response(body=nested, content_type="application/json")

    with _server(handler) as s:
        recs = run_load_sync(
            Target(s.url, "m", stream=stream), Load(requests=1, concurrency=1, output_tokens=2, warmup=0)
        )
    assert [(r.error, r.detail) for r in recs] == [
        ("malformed-event", "JSON nested too deeply to read (400,000 bytes)")
    ]


@pytest.mark.timeout(60)
def test_one_deeply_nested_event_is_one_failed_request_and_the_run_writes_its_json(tmp_path, capsys):
    """The issue's case: one event nested 200,000 deep used to abort the whole `prove serving --target`
    run (a RecursionError) with no JSON written. Now it is one malformed-event among answered ones."""
    import json

    from aiworkbook.cli import main

    calls = [0]
    last = b'data: {"choices":[{"text":"","finish_reason":"length"}]}\n\n'

    async def handler(request: web.Request) -> web.StreamResponse:
        calls[0] += 1
        if calls[0] == 3:
            return await _stream(TOKEN, b"data: " + b"[" * 200_000 + b"]" * 200_000 + b"\n\n")(request)
        return await _stream(TOKEN, TOKEN, last, b"data: [DONE]\n\n")(request)

    out = tmp_path / "r.json"
    with _server(handler) as s:
        argv = ["prove", "serving", "--target", s.url, "--served-model", "m", "--server-kind", "openai"]
        argv += ["--sweep", "1", "--requests", "20", "--output-tokens", "2", "--max-error-rate", "0.1"]
        code = main([*argv, "--json", str(out)])
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert "Traceback" not in text and "internal error" not in text and "RecursionError" not in text
    row = json.loads(out.read_text())["details"]["sweep"][0]
    assert row["errors"] == {"malformed-event": 1}, row
    assert code == 0, text


def test_error_bodies_redirects_and_content_types_are_quoted_not_crashed():
    async def bad_bytes(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(status=500, body=b"\xff\xfe oops \xc3", content_type="text/plain")

    async def moved(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(status=307, headers={"Location": "http://192.0.2.1/v1/completions"})

    async def json_not_sse(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response({"choices": [{"text": "all at once"}]})

    for handler, kind, text in (
        (bad_bytes, "http-500", "oops"),
        (moved, "http-307", "redirect to http://192.0.2.1"),
        (json_not_sse, "content-type", "application/json"),
    ):
        with _server(handler) as s:
            recs = run_load_sync(Target(s.url, "m"), Load(requests=1, concurrency=1, warmup=0))
        assert recs[0].error == kind and text in recs[0].detail, (kind, recs[0].detail)


def _stall(seconds: float) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        await request.read()
        await asyncio.sleep(seconds)
        return web.Response(status=204)

    return handler


def test_a_stalled_target_costs_the_request_timeout_not_more():
    with _server(_stall(3)) as s:  # (leaving the block waits for the stalled handlers to end)
        t0 = time.monotonic()
        recs = run_load_sync(
            Target(s.url, "m", timeout_s=0.3), Load(requests=2, concurrency=1, output_tokens=2, warmup=0)
        )
        took = time.monotonic() - t0
    assert summarize_run(recs)["errors"] == {"timeout": 2} and took < 2


def test_the_run_deadline_cancels_what_is_in_flight():
    with _server(_stall(3)) as s:
        for warmup in (0, 1):
            t0 = time.perf_counter()
            recs = run_load_sync(
                Target(s.url, "m", timeout_s=60),
                Load(requests=4, concurrency=2, warmup=warmup),
                deadline=t0 + 0.3,
            )
            took = time.perf_counter() - t0
            assert took < 2 and recs and all(r.error == "cancelled" for r in recs), [r.error for r in recs]


def test_a_connection_that_is_never_accepted_costs_the_connect_timeout():
    """A loopback listener whose accept queue is full drops further SYNs: the connect hangs."""
    import socket

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        fill = [socket.socket() for _ in range(4)]
        try:
            for c in fill:
                c.setblocking(False)
                with contextlib.suppress(BlockingIOError):
                    c.connect(("127.0.0.1", port))
            time.sleep(0.1)
            t0 = time.monotonic()
            recs = run_load_sync(
                Target(f"http://127.0.0.1:{port}", "m", connect_timeout_s=0.3, timeout_s=30),
                Load(requests=1, concurrency=1, warmup=0),
            )
            took = time.monotonic() - t0
        finally:
            for c in fill:
                c.close()
    assert recs[0].error == "connect-timeout" and "0.3 s" in recs[0].detail and took < 3


def test_timeouts_must_be_positive():
    with pytest.raises(SpecError, match="connect_timeout_s"):
        Target("http://127.0.0.1:9", connect_timeout_s=0)
    with pytest.raises(SpecError, match="timeout_s"):
        Target("http://127.0.0.1:9", timeout_s=float("inf"))


# --- strict servers: the model from /v1/models, the extensions only where accepted ------------------

STRICT_FIELDS = {"model", "prompt", "messages", "max_tokens", "stream", "temperature", "stream_options"}


def _strict(seen: list[dict]) -> Handler:
    """Refuses unknown fields with 422 as transformers serve and OpenAI do; streams `max_tokens`
    tokens and ends with finish_reason and usage, without [DONE]."""

    async def handler(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        seen.append(body)
        extra = set(body) - STRICT_FIELDS
        if extra:
            return web.json_response({"detail": f"Unexpected fields in the request: {extra}"}, status=422)
        n = body["max_tokens"]
        last = (
            b'data: {"choices":[{"text":"","finish_reason":"length"}],"usage":{"prompt_tokens":3,'
            b'"completion_tokens":%d}}\n\n' % n
        )
        return await _stream(*([TOKEN] * n), last)(request)

    return handler


def test_a_strict_server_is_probed_once_then_sent_standard_fields_only():
    seen: list[dict] = []
    with _server(_strict(seen), models=["only-model"]) as s:
        r = registry.run("serving", target=s.url, sweep=[1, 2], requests=3, output_tokens=4, min_requests=3)
    t = r.details["target"]
    assert t["model"] == "only-model" and t["model_from"] == "GET /v1/models"
    assert t["mode"] == "standard" and "http-422" in t["probe"]
    assert r.verdict == "info" and [x["n"] for x in r.details["sweep"]] == [3, 3]
    assert "ignore_eos" in seen[0] and not any("ignore_eos" in b or "min_tokens" in b for b in seen[1:])
    # the probe, the same without the extensions (is it them the server refuses?), then per point 3
    # requests and a warm-up
    assert len(seen) == 2 + 2 * (3 + 1)
    assert any("exact output lengths cannot be forced" in n for n in r.notes)


def test_the_stand_in_accepts_the_extensions_and_a_kind_overrides_the_probe():
    with ServerThread(make_app("stand-in", fixed=FixedDelay(ttft_s=0.005, itl_s=0.001))) as s:
        auto = discover_sync(s.url)
        assert auto.mode == "exact" and auto.target.exact_lengths and auto.target.model == "stand-in"
        told = discover_sync(s.url, model="stand-in", kind="tgi")
        assert told.mode == "standard" and not told.target.exact_lengths and "--server-kind" in told.probe
    with pytest.raises(SpecError, match="server_kind"):
        discover_sync("http://127.0.0.1:9", kind="llamacpp")


def test_several_models_or_no_listing_are_a_clear_exit_2(capsys):
    from aiworkbook.cli import main

    with _server(_strict([]), models=["a", "b"]) as s:
        with pytest.raises(SpecError, match="one of: a, b"):
            discover_sync(s.url)
        assert main(["prove", "serving", "--target", s.url, "--sweep", "1", "--requests", "1"]) == 2
    assert "one of: a, b" in capsys.readouterr().err
    app = web.Application()  # no /v1/models route: a 404
    app.router.add_post("/v1/completions", _stream(TOKEN))
    with ServerThread(app) as s:
        with pytest.raises(SpecError, match="HTTP 404"):
            discover_sync(s.url)


def test_a_run_that_measured_nothing_fails_and_quotes_the_first_error(capsys):
    from aiworkbook.cli import main

    async def refuse(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response({"detail": "no capacity for you " + "z" * 300}, status=503)

    with _server(refuse) as s:
        r = registry.run("serving", target=s.url, served_model="m", sweep=[1, 4], requests=8)
        assert r.verdict == "error"
        assert r.notes[0].startswith("measured nothing at concurrency 1: all 8 requests failed")
        assert "http-503: " in r.notes[0] and "no capacity for you" in r.notes[0]
        code = main(
            ["prove", "serving", "--target", s.url, "--served-model", "m", "--sweep", "1", "--requests", "2"]
        )
    assert code == 1
    assert "[error] serving on remote" in capsys.readouterr().out


def _mostly_429(first_ok: int) -> Handler:
    """Streams a full answer to the first `first_ok` requests, then answers 429 to every request."""
    calls = [0]

    async def handler(request: web.Request) -> web.StreamResponse:
        calls[0] += 1
        if calls[0] > first_ok:
            await request.read()
            return web.json_response({"error": "rate limited"}, status=429)
        last = b'data: {"choices":[{"text":"","finish_reason":"length"}]}\n\n'
        return await _stream(TOKEN, TOKEN, last, b"data: [DONE]\n\n")(request)

    return handler


def test_a_mostly_refused_point_is_invalid_names_its_errors_and_fails(capsys):
    from aiworkbook.cli import main

    kw = dict(target=None, served_model="m", server_kind="openai", sweep=[1], requests=10, output_tokens=2)
    with _server(_mostly_429(2)) as s:  # the warm-up and 1 of the 10 measured requests answered
        r = registry.run("serving", **(kw | {"target": s.url}))
    row = r.details["sweep"][0]
    assert r.verdict == "invalid" and row["errors"] == {"http-429": 9}
    assert "9 of 10 requests failed (http-429 9), more than the max error rate 5%" in row["invalid"]
    assert r.notes[0] == "concurrency 1 is invalid: " + row["invalid"]
    # the percentiles keep their count, and show nothing from 1 sample (fewer than the minimum 10)
    assert row["n"] == 1 and row["p99_ttft_s"] is None and row["p50_ttft_s"] is None
    args = ["prove", "serving", "--served-model", "m", "--server-kind", "openai", "--sweep", "1"]
    with _server(_mostly_429(2)) as s:  # --max-error-rate 0.3 stops the point: still invalid, exit 1
        code = main([*args, "--target", s.url, "--requests", "20", "--max-error-rate", "0.3"])
    out = capsys.readouterr().out
    assert code == 1 and "[invalid] serving on remote" in out and "cancelled" in out and "http-429 9" in out
    with _server(_mostly_429(100)) as s:  # all answered, but 4 are fewer than the minimum
        assert main([*args, "--target", s.url, "--requests", "4"]) == 1
        assert main([*args, "--target", s.url, "--requests", "4", "--min-requests", "4"]) == 0
    assert "4 requests completed, fewer than the minimum 10" in capsys.readouterr().out


def test_the_proof_is_bounded_by_its_max_duration():
    with _server(_stall(3)) as s:
        t0 = time.monotonic()
        r = registry.run(
            "serving", target=s.url, served_model="m", sweep=[1, 2], requests=4, max_duration_s=1
        )
        took = time.monotonic() - t0
    # the probe had the whole budget and nothing was measured; unbounded, the first load point alone
    # would stall 4 requests x 3 s one after another (a loose bound: a loaded machine adds seconds)
    assert took < 4 * 3 and r.verdict == "error"
    assert any("stopped at the run's deadline (1 s)" in n for n in r.notes)
    with pytest.raises(SpecError, match="max_duration_s"):
        registry.run("serving", target=s.url, max_duration_s=-1)


@pytest.mark.parametrize("count", [b"-3", b"1000000000", b"true", b'"16"', b"0"])
def test_an_impossible_usage_count_is_refused_and_the_stream_counted(count):
    """The server's usage is checked against what its stream carried: -3, 10^9, true, a string, or
    0 tokens for 4 chunks are refused (the request flagged), and the 4 chunks counted instead: as
    chunks, not tokens, so no output tokens, tok/s or TPOT come from them."""
    last = (
        b'data: {"choices":[{"text":"","finish_reason":"length"}],"usage":{"prompt_tokens":3,'
        b'"completion_tokens":' + count + b"}}\n\n"
    )
    with _server(_stream(TOKEN, TOKEN, TOKEN, TOKEN, last, b"data: [DONE]\n\n")) as s:
        recs = run_load_sync(Target(s.url, "m"), Load(requests=2, concurrency=1, output_tokens=4, warmup=0))
    sm = summarize_run(recs)
    assert (
        sm["errors"] == {} and sm["usage_refused"] == 2 and "completion_tokens" in sm["first_usage_refused"]
    )
    assert all(r.usage_tokens is None and r.tokens is None and len(r.chunks) == 4 for r in recs)
    assert sm["output_tokens"] is None and sm["output_throughput_tok_s"] is None and sm["tpot_s"]["n"] == 0
    assert sm["output_chunks"] == 8 and sm["output_throughput_chunks_s"] > 0
    assert sm["tokens_from"] == {"chunks": 2}


def test_a_plausible_usage_count_is_kept():
    last = (
        b'data: {"choices":[{"text":"","finish_reason":"length"}],"usage":{"prompt_tokens":3,'
        b'"completion_tokens":6}}\n\n'
    )
    with _server(_stream(TOKEN, TOKEN, TOKEN, TOKEN, last, b"data: [DONE]\n\n")) as s:
        recs = run_load_sync(Target(s.url, "m"), Load(requests=1, concurrency=1, output_tokens=6, warmup=0))
    assert recs[0].usage_tokens == 6 and recs[0].tokens == 6 and not recs[0].flag


def test_no_prompt_is_sent_twice_unless_a_shared_prefix_is_asked_for():
    seen: list[dict] = []
    kw = dict(
        served_model="m", server_kind="openai", sweep=[1, 2], requests=3, min_requests=3, output_tokens=2
    )
    with _server(_strict(seen)) as s:
        r = registry.run("serving", target=s.url, prompt_tokens=6, **kw)
        r2 = registry.run("serving", target=s.url, prompt_tokens=6, **kw)  # a second run: its own id
        prompts = [b["prompt"] for b in seen]
        assert len(prompts) == 2 * 2 * (3 + 1) and len(set(prompts)) == len(prompts)
        assert all(len(p.split()) == 6 for p in prompts)
        assert (
            any("no prompt sent twice" in n and r.details["kind"] for n in r.notes) and r2.verdict == "info"
        )
        seen.clear()
        r = registry.run("serving", target=s.url, prompt_tokens=6, shared_prefix=4, **kw)
    prompts = [b["prompt"] for b in seen]
    assert all(p.startswith("shared shared shared shared r") for p in prompts)
    assert len(set(prompts)) == len(prompts)  # the rest of each prompt is still its own
    assert any("the same 4 tokens" in n for n in r.notes)
