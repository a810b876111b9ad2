"""The load generator against the embedded server and a fixed-delay stand-in on loopback: the
definitions hold on the wire, queueing shows in TTFT, overload is a 429 not a crash, and broken
streams are counted errors."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families

from aiworkbook.errors import SpecError
from aiworkbook.serving.backends import SyntheticBackend
from aiworkbook.serving.client import Load, Target, run_load_sync
from aiworkbook.serving.engine import Engine
from aiworkbook.serving.metrics import summarize_run
from aiworkbook.serving.pool import BlockPool
from aiworkbook.serving.server import FixedDelay, ServerThread, make_app


def _fixed(**kw) -> ServerThread:
    return ServerThread(make_app("stand-in", fixed=FixedDelay(**kw)))


def _engine(**kw) -> tuple[Engine, ServerThread]:
    be = kw.pop("backend", None) or SyntheticBackend(step_s=kw.pop("step_s", 0.01))
    eng = Engine(be, kw.pop("pool", None) or BlockPool(256, 16, 1024), **kw)
    return eng, ServerThread(make_app("m", engine=eng), engine=eng)


def test_planted_ttft_and_itl_are_measured():
    with _fixed(ttft_s=0.05, itl_s=0.01) as s:
        recs = run_load_sync(Target(s.url, "stand-in"), Load(requests=8, concurrency=4, output_tokens=6))
    sm = summarize_run(recs)
    assert sm["completed"] == 8 and sm["errors"] == {}
    assert all(r.tokens == 6 for r in recs)
    # The server cannot send before a deadline, so TTFT and end-to-end time never fall below the
    # planted delays. TPOT can: it is (e2e - TTFT) / (n - 1), and a first token that reaches a busy
    # client late shortens the gap to the tokens after it (the server's deadlines do not move), by
    # exactly that lateness over n - 1: checked per request. The upper bounds are loose (a loaded CI
    # machine), not a benchmark.
    assert all(r.ttft_s >= 0.05 and r.e2e_s >= 0.05 + 5 * 0.01 for r in recs)
    assert all(r.tpot_s == pytest.approx((r.e2e_s - r.ttft_s) / 5) for r in recs)
    assert all(r.tpot_s >= 0.01 - (r.ttft_s - 0.05) / 5 - 1e-9 for r in recs)
    assert 0.05 <= sm["ttft_s"]["p50"] < 0.05 + 0.05
    assert sm["tpot_s"]["p50"] < 0.01 + 0.01
    assert sm["itl_s"]["n"] == 8 * 5


def test_the_stand_in_reports_its_own_clock_readings_per_request():
    """GET /timings: per request the handler's entry and the start of its first token's write, on
    perf_counter (the client's clock), keyed by the prompt's first word (the load's "r{i}" salt)."""
    with _fixed(ttft_s=0.02, itl_s=0.001) as s:
        recs = run_load_sync(Target(s.url, "stand-in"), Load(requests=6, concurrency=3, output_tokens=2))
        doc = json.loads(urllib.request.urlopen(s.url + "/timings", timeout=10).read())
    assert doc["clock"] == "perf_counter" and len(doc["requests"]) == len(recs) == 8
    stamps = {t["prompt_head"]: t for t in doc["requests"]}
    assert set(stamps) == {f"r{i}" for i in range(8)}  # records are in salt order, warm-ups first
    for i, r in enumerate(recs):
        t = stamps[f"r{i}"]
        assert r.scheduled <= t["entered"]  # the client sent it before the stand-in's handler ran
        assert t["first_write"] - t["entered"] >= 0.02  # never before the planted delay
        assert t["first_write"] <= r.chunks[0][0]  # written before the client parsed it
    _, srv = _engine()
    with srv as s, pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(s.url + "/timings", timeout=10)
    assert err.value.code == 404


def test_the_stand_in_records_each_streams_last_write_and_tokens():
    """A finished stream's record has the start of its last token's write and the tokens it sent
    (what benchmarks/peers.py counts as served tokens/s); a stream cut by a fault has neither. The
    served figure is never below the client's own: the client's window starts at its schedule (before
    the handler's entry) and ends at its parse of the stream's end (after the last write)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "peers.py"
    spec = importlib.util.spec_from_file_location("bench_peers", path)
    assert spec and spec.loader
    peers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peers)
    with _fixed(ttft_s=0.02, itl_s=0.002, chunk_tokens=2) as s:
        since = time.perf_counter()
        load = Load(requests=6, concurrency=3, output_tokens=5, warmup=0)
        recs = run_load_sync(Target(s.url, "stand-in"), load)
        doc = json.loads(urllib.request.urlopen(s.url + "/timings", timeout=10).read())
    assert len(doc["requests"]) == 6 and all(r.ok and r.tokens == 5 for r in recs)
    for r, t in zip(recs, sorted(doc["requests"], key=lambda t: int(t["prompt_head"][1:])), strict=True):
        assert t["tokens"] == 5  # chunks of 2, 2 and 1: the last write is cut to what is left
        # three chunks: never before the planted deadline, 20 ms + two gaps of 2 tokens x 2 ms from
        # the entry (from the first write it can be less: deadlines do not move when a write is late)
        assert t["last_write"] - t["entered"] >= 0.02 + 2 * 2 * 0.002 and t["last_write"] >= t["first_write"]
        assert t["last_write"] <= r.chunks[-1][0]  # written before the client parsed it
    got = peers.served(doc["requests"], since, 6)
    assert got["served_requests"] == got["requests_seen"] == 6
    window = max(t["last_write"] for t in doc["requests"]) - min(t["entered"] for t in doc["requests"])
    assert got["served_tok_s"] == pytest.approx(30 / window)
    assert summarize_run(recs)["output_throughput_tok_s"] <= got["served_tok_s"]
    with _fixed(ttft_s=0.0, itl_s=0.001, fault="drop", fault_after=1) as s:
        run_load_sync(Target(s.url, "stand-in"), Load(requests=2, concurrency=1, output_tokens=4, warmup=0))
        cut = json.loads(urllib.request.urlopen(s.url + "/timings", timeout=10).read())["requests"]
    assert len(cut) == 2 and not any("last_write" in t or "tokens" in t for t in cut)


def test_the_end_of_a_stream_is_one_write_that_ends_the_body():
    """The finish chunk, the usage chunk and [DONE] leave in one write with the chunked terminator:
    one send, so the client wakes once for the end of its stream."""
    from aiworkbook.serving.sse import Stream

    class Resp:
        def __init__(self) -> None:
            self.writes: list[tuple[str, bytes]] = []

        async def write(self, data: bytes) -> None:
            self.writes.append(("write", data))

        async def write_eof(self, data: bytes = b"") -> None:
            self.writes.append(("eof", data))

    resp = Resp()
    st = Stream(resp, "m", False, {"stream_options": {"include_usage": True}}, prompt=3)  # type: ignore[arg-type]

    async def go() -> None:
        await st.tokens_out(" a", 1)
        await st.finish("length")

    asyncio.run(go())
    assert [kind for kind, _ in resp.writes] == ["write", "eof"]
    events = [e for e in resp.writes[1][1].decode().split("\n\n") if e]
    assert [e[:6] for e in events] == ["data: "] * 3 and events[-1] == "data: [DONE]"
    finish, usage = (json.loads(e[6:]) for e in events[:2])
    assert finish["choices"][0]["finish_reason"] == "length"
    assert usage["choices"] == [] and usage["usage"] == {
        "prompt_tokens": 3,
        "completion_tokens": 1,
        "total_tokens": 4,
    }


def _sse_server(events: bytes, peers: list[int] | None = None, end_after_s: float = 0.0) -> ServerThread:
    """A one-route server that writes `events` as they are, then ends the chunked body in a write of
    its own `end_after_s` later (Starlette's StreamingResponse, behind vLLM's and SGLang's OpenAI
    servers, ends it so at once); `peers` gathers each request's client port (one per connection)."""
    from aiohttp import web

    async def handler(request: web.Request) -> web.StreamResponse:
        if peers is not None:
            peers.append(request.transport.get_extra_info("peername")[1])
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(events)
        await asyncio.sleep(end_after_s)
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_post("/v1/completions", handler)
    return ServerThread(app)


ONE_TOKEN = b'data: {"choices":[{"text":" a"}],"usage":null}\n\ndata: [DONE]\n\n'


def test_a_body_ended_after_done_keeps_its_connection_and_its_end_time():
    """Leaving the response at [DONE], before its body ends, made aiohttp close the connection: each
    request then opened a new one inside its TTFT. The client reads on to the body's end, and the
    request still ends at [DONE]."""
    peers: list[int] = []
    with _sse_server(ONE_TOKEN, peers, end_after_s=0.3) as s:
        recs = run_load_sync(Target(s.url, "m"), Load(requests=3, concurrency=1, output_tokens=1, warmup=0))
    assert all(r.ok and len(r.chunks) == 1 for r in recs)
    assert len(peers) == 3 and len(set(peers)) == 1  # one connection, reused
    assert all(r.e2e_s < 0.3 for r in recs)  # the end is [DONE], not the body's end 0.3 s later


def test_a_body_not_ended_after_done_is_still_a_success(monkeypatch):
    import aiworkbook.serving.client as client

    monkeypatch.setattr(client, "DRAIN_S", 0.2)  # the body ends 2 s after [DONE]: past the wait
    peers: list[int] = []
    with _sse_server(ONE_TOKEN, peers, end_after_s=2.0) as s:
        recs = run_load_sync(Target(s.url, "m"), Load(requests=2, concurrency=1, output_tokens=1, warmup=0))
    assert all(r.ok and r.error is None and r.e2e_s < 0.2 for r in recs)
    assert len(set(peers)) == 2  # after DRAIN_S the connection is given up, as before


def test_the_load_runs_from_a_thread_that_already_runs_an_event_loop():
    """A Jupyter cell runs inside the kernel's event loop, where asyncio.run refuses to start."""
    import asyncio

    async def cell():
        with _fixed(ttft_s=0.01, itl_s=0.005) as s:
            return run_load_sync(Target(s.url, "stand-in"), Load(requests=2, concurrency=2, output_tokens=3))

    recs = asyncio.run(cell())
    assert summarize_run(recs)["completed"] == 2


def test_multi_token_chunks_divide_their_gap():
    with _fixed(ttft_s=0.01, itl_s=0.01, chunk_tokens=3) as s:
        target = Target(s.url, "stand-in", continuous_usage=True)
        recs = run_load_sync(target, Load(requests=2, concurrency=2, output_tokens=9, warmup=0))
    r = recs[0]
    assert [n for _, n in r.chunks] == [3, 3, 3] and r.tokens == 9
    itl = r.itls()
    assert len(itl) == 6  # two gaps of three tokens each
    (t0, _), (t1, _), (t2, _) = r.chunks
    assert itl == [(t1 - t0) / 3] * 3 + [(t2 - t1) / 3] * 3  # each chunk's gap shared by its tokens
    # the stand-in keeps an absolute 30 ms schedule (a late chunk is followed by a shorter gap), so
    # only the pair's span is bounded: two gaps of 30 ms less the first chunk's lateness
    assert all(x > 0 for x in itl) and sum(itl) > 0.03


@pytest.mark.parametrize(("fault", "kind"), [("drop", "stream-dropped"), ("malformed", "malformed-event")])
def test_broken_streams_are_counted_errors(fault, kind):
    with _fixed(ttft_s=0.005, itl_s=0.002, fault=fault, fault_after=2) as s:
        recs = run_load_sync(
            Target(s.url, "stand-in"), Load(requests=4, concurrency=2, output_tokens=8, warmup=0)
        )
    sm = summarize_run(recs)
    assert sm["errors"] == {kind: 4} and sm["completed"] == 0


def test_a_token_that_is_not_utf8_still_counts():
    """A byte that is not UTF-8 inside an event is the text it stands for (U+FFFD), not a broken stream."""
    events = b'data: {"choices":[{"text":"\xff"}]}\n\ndata: {"choices":[{"text":" b"}]}\n\ndata: [DONE]\n\n'
    with _sse_server(events) as s:
        recs = run_load_sync(Target(s.url, "m"), Load(requests=2, concurrency=1, output_tokens=2, warmup=0))
    assert all(r.ok and len(r.chunks) == 2 and r.tokens is None for r in recs)  # chunks, not tokens


def test_refused_connection_is_an_error_not_a_crash():
    with _fixed() as s:
        url = s.url
    recs = run_load_sync(Target(url, "x", timeout_s=5), Load(requests=2, concurrency=1, warmup=0))
    assert summarize_run(recs)["errors"] == {"connect-error": 2}


def test_queueing_shows_in_ttft():
    eng, srv = _engine(scheduler="continuous", max_batch=1, step_s=0.01)
    with srv as s:  # 6 requests at once, one slot: the k-th waits for k-1 requests of ~5 steps each
        recs = run_load_sync(
            Target(s.url, "m"), Load(requests=6, rate=float("inf"), output_tokens=4, warmup=0)
        )
    ttft = sorted(r.ttft_s for r in recs if r.ok)
    assert len(ttft) == 6
    assert ttft[-1] > 5 * 4 * 0.01  # the last one queued behind five others
    assert ttft[-1] > 4 * ttft[0]


def test_overload_is_rejected_with_429_and_the_server_survives():
    eng, srv = _engine(scheduler="continuous", max_batch=1, max_queue=1, step_s=0.01)
    with srv as s:
        recs = run_load_sync(
            Target(s.url, "m"), Load(requests=8, rate=float("inf"), output_tokens=4, warmup=0)
        )
        after = run_load_sync(Target(s.url, "m"), Load(requests=1, concurrency=1, output_tokens=2, warmup=0))
    sm = summarize_run(recs)
    assert sm["rejected"] >= 5 and sm["completed"] >= 1
    assert sm["completed"] + sm["rejected"] == 8
    assert after[0].ok and eng.stats()["rejected"] == sm["rejected"]


def test_a_request_larger_than_the_pool_is_a_400():
    eng, srv = _engine(pool=BlockPool(2, 16, 1024))
    with srv as s:
        recs = run_load_sync(Target(s.url, "m"), Load(requests=1, concurrency=1, prompt_tokens=40, warmup=0))
    assert recs[0].error == "http-400"


def test_static_batch_waits_for_its_longest_and_continuous_does_not():
    results = {}
    for sched in ("static", "continuous"):
        eng, srv = _engine(scheduler=sched, max_batch=4, step_s=0.005)
        load = Load(
            requests=16, concurrency=4, output_tokens=16, length_dist="uniform", length_spread=0.9, warmup=0
        )
        with srv as s:
            summarize_run(run_load_sync(Target(s.url, "m"), load))
        results[sched] = eng.counters["iterations"]
    assert results["continuous"] < results["static"]  # fewer steps for the same tokens


def test_static_batch_keeps_a_finished_row_after_its_client_has_left():
    """Over HTTP a client closes its stream once answered; the static batch must still carry that
    sequence as a padding row (n == 0) until the longest ends, as the engine does without a server."""
    rows: list[list[int]] = []

    class Recording(SyntheticBackend):
        def step(self, work):
            if all(s.prefilled >= s.prompt_len for s, _ in work):  # decode forwards
                rows.append([n for _, n in work])
            return super().step(work)

    eng, srv = _engine(scheduler="static", max_batch=4, batch_timeout_s=1.0, backend=Recording(step_s=0.01))
    # four clients at once, output lengths 4, 4, 1 and 14 (uniform +-90 % around 8, seed 1): one batch
    load = Load(
        requests=4, concurrency=4, output_tokens=8, length_dist="uniform", length_spread=0.9, warmup=0
    )
    with srv as s:
        recs = run_load_sync(Target(s.url, "m"), load)
    assert all(r.ok for r in recs)
    longest = max(r.output_tokens for r in recs)
    assert len(rows) == longest - 1  # the prefill forward gives each its first token
    assert all(len(r) == 4 for r in rows)  # finished rows ride along: the batch stays rectangular
    assert [sum(n == 0 for n in r) for r in rows] == [1] * 3 + [3] * 10  # as padding (n == 0)
    assert eng.counters["finished"] == 4 and eng.pool.used == 0


def test_chat_and_non_streaming_and_kv_endpoints_with_the_torch_model():
    from aiworkbook.serving.embedded import build_engine, embedded_server

    eng = build_engine("tiny-llama", backend="torch", max_batch=4, kv_budget_bytes=4 * 2**20)
    with embedded_server(eng) as s:
        recs = run_load_sync(
            Target(s.url, "tiny-llama", api="chat"),
            Load(requests=3, concurrency=3, prompt_tokens=12, output_tokens=5, warmup=0),
        )
        assert all(r.ok and r.tokens == 5 for r in recs)
        body = json.dumps({"model": "tiny-llama", "prompt": "a b c", "max_tokens": 3}).encode()
        req = urllib.request.Request(s.url + "/v1/completions", body, {"Content-Type": "application/json"})
        doc = json.loads(urllib.request.urlopen(req, timeout=10).read())
        assert doc["usage"] == {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6}
        kv = json.loads(urllib.request.urlopen(s.url + "/kv", timeout=10).read())
        with urllib.request.urlopen(s.url + "/metrics", timeout=10) as resp:
            metrics = resp.read().decode()
            assert resp.headers["Content-Type"].startswith("application/openmetrics-text; version=1.0.0")
    # tiny-llama fp32: 2 (K, V) x 4 layers x 2 KV heads x 32 dims x 4 B = 2 KiB per token; 16-token blocks
    assert kv["kv_bytes_per_block"] == 2048 * 16
    assert kv["kv_blocks_total"] == 4 * 2**20 // (2048 * 16)
    assert kv["kv_blocks_used"] == 0 and kv["kv_blocks_peak"] >= 3  # 3 x (12 + 5) tokens -> 2 blocks each
    # read back by prometheus_client's OpenMetrics parser (it refuses a body without "# EOF")
    got = {s.name: s.value for f in openmetrics_families(metrics) for s in f.samples}
    assert got["aiworkbook_serve_kv_blocks_used"] == 0
    # 3 x 12 prompt tokens, then the 3-word prompt; each forward is counted, and the time inside them
    assert got["aiworkbook_serve_prompt_tokens_total"] == 3 * 12 + 3
    assert got["aiworkbook_serve_iterations_total"] == kv["iterations"] and kv["iterations"] >= 5
    assert 0 < got["aiworkbook_serve_busy_seconds_total"] == kv["busy_s"]


def test_only_loopback_and_bad_requests():
    with pytest.raises(SpecError):
        ServerThread(make_app("m", fixed=FixedDelay()), host="0.0.0.0")
    with pytest.raises(SpecError):
        Target("ftp://x")
    with pytest.raises(SpecError):
        Load(requests=3)

    async def bad(url):
        import aiohttp

        async with aiohttp.ClientSession() as s, s.post(url + "/v1/completions", data=b"{nope") as r:
            return r.status

    with _fixed() as s:
        assert asyncio.run(bad(s.url)) == 400


def test_a_stopped_embedded_server_lets_its_model_go():
    """aiohttp memoises handler + middleware chains in a module-level cache keyed by the app: without
    the app's cleanup hook, a stopped server kept its Engine and the model's weights (GPU memory on
    CUDA, in a dashboard kernel that has finished its proof)."""
    import gc
    import weakref

    from aiworkbook.serving.embedded import build_engine, embedded_server

    eng = build_engine("tiny-llama", backend="torch", max_batch=2, kv_budget_bytes=2**20)
    with embedded_server(eng) as s:
        assert urllib.request.urlopen(s.url + "/kv", timeout=10).status == 200
        gone = urllib.request.Request(s.url + "/no-such-route")  # through the JSON-error middleware
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(gone, timeout=10)
    ref = weakref.ref(eng)
    del eng, s
    gc.collect()
    assert ref() is None
