"""The load generator: streams requests to any OpenAI-compatible server from one asyncio event loop
(aiohttp, no thread per request) and records when each content chunk arrived.

Open loop: arrivals scheduled in advance (arrivals.schedule) and latency counted from the scheduled
time, so a slow server cannot hide its queue (coordinated omission); with `concurrency` as well, a
request waits for a slot and that wait is queue time. Closed loop (`rate=None`): `concurrency`
workers, each sending its next request when the previous one ends (scheduled = sent).
The API key comes from an environment variable only ($AIWORKBOOK_API_KEY, else $OPENAI_API_KEY).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiworkbook.errors import SpecError
from aiworkbook.serving.arrivals import lengths, schedule
from aiworkbook.serving.metrics import RequestRecord

API_KEY_ENVS = ("AIWORKBOOK_API_KEY", "OPENAI_API_KEY")
APIS = ("completions", "chat")


@dataclass(frozen=True)
class Target:
    """Where to send: base URL (with or without /v1), the served model name, which API, and whether
    to ask for exact output lengths (vLLM's ignore_eos / min_tokens) and per-chunk usage."""

    url: str
    model: str = "default"
    api: str = "completions"
    exact_lengths: bool = True
    continuous_usage: bool = False
    timeout_s: float = 300.0

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise SpecError("target", self.url, "an http:// or https:// URL")
        if self.api not in APIS:
            raise SpecError("api", self.api, ", ".join(APIS))

    @property
    def endpoint(self) -> str:
        base = self.url.rstrip("/")
        base = base if base.endswith("/v1") else base + "/v1"
        return base + ("/chat/completions" if self.api == "chat" else "/completions")


def api_key() -> str | None:
    for env in API_KEY_ENVS:
        if os.environ.get(env):
            return os.environ[env]
    return None


def _body(target: Target, prompt_tokens: int, max_tokens: int, salt: int) -> dict[str, Any]:
    # one word per token is close for most tokenizers; a per-request salt defeats prefix caching
    text = f"r{salt} " + " ".join(["hello"] * max(0, prompt_tokens - 1))
    body: dict[str, Any] = {"model": target.model, "max_tokens": max_tokens, "stream": True, "temperature": 0}
    opts: dict[str, Any] = {"include_usage": True}
    if target.continuous_usage:
        opts["continuous_usage_stats"] = True
    body["stream_options"] = opts
    if target.exact_lengths:
        body.update(ignore_eos=True, min_tokens=max_tokens)
    if target.api == "chat":
        body["messages"] = [{"role": "user", "content": text}]
    else:
        body["prompt"] = text
    return body


def _content(event: dict[str, Any]) -> str:
    for c in event.get("choices") or []:
        if not isinstance(c, dict):
            continue
        if c.get("text"):
            return str(c["text"])
        delta = c.get("delta") or {}
        if isinstance(delta, dict) and delta.get("content"):
            return str(delta["content"])
    return ""


DRAIN_S = 1.0  # how long to wait after [DONE] for the end of the HTTP body


async def _read_to_end(resp: Any) -> None:
    """Read what follows [DONE] up to the end of the body, so that aiohttp puts the connection back in
    its pool: a response released before its end closes its connection, and the next request would
    pay for a new one (a TCP handshake, with TLS a second) inside its TTFT. Servers behind Starlette
    (vLLM, SGLang) end the chunked body in a write of its own after [DONE]. A server that never ends
    it costs DRAIN_S, then the connection is closed as before; the request's end stays at [DONE]."""
    import aiohttp

    try:
        await asyncio.wait_for(resp.content.read(), DRAIN_S)
    except (asyncio.TimeoutError, aiohttp.ClientError, ConnectionError):
        pass


async def send_one(session: Any, target: Target, rec: RequestRecord, max_tokens: int, salt: int = 0) -> None:
    """Stream one request into `rec`: chunk times and token counts, usage, end, or an error kind
    (http-<status>, stream-dropped, malformed-event, server-error, timeout, connect-error)."""
    import aiohttp

    headers = {"Content-Type": "application/json"}
    key = api_key()
    if key:
        headers["Authorization"] = f"Bearer {key}"
    body = _body(target, rec.prompt_tokens, max_tokens, salt)
    rec.sent = time.perf_counter()
    seen_usage = 0
    done = 0.0  # when [DONE] arrived: the request's end
    try:
        async with session.post(target.endpoint, json=body, headers=headers) as resp:
            if resp.status != 200:
                rec.error, rec.detail = f"http-{resp.status}", (await resp.text())[:200]
                return
            async for raw in resp.content:
                if not raw.startswith(b"data:"):  # blank separators, comments, other SSE fields
                    continue
                data = raw[5:].strip()
                if data == b"[DONE]":
                    done = time.perf_counter()
                    break
                now = time.perf_counter()
                try:
                    event = json.loads(data)
                except ValueError:  # bytes that are not UTF-8 are taken as the text they stand for
                    try:
                        event = json.loads(data.decode("utf-8", "replace"))
                    except ValueError:
                        event = None
                if not isinstance(event, dict):
                    rec.error, rec.detail = "malformed-event", data[:200].decode("utf-8", "replace")
                    return
                if "error" in event:
                    rec.error, rec.detail = "server-error", str(event["error"])[:200]
                    return
                usage = event.get("usage") or {}
                text = _content(event)
                if text:
                    n = 1
                    if isinstance(usage.get("completion_tokens"), int):  # per-chunk usage: exact tokens
                        n = max(1, usage["completion_tokens"] - seen_usage)
                    rec.chunks.append((now, n))
                if isinstance(usage.get("completion_tokens"), int):
                    seen_usage = usage["completion_tokens"]
                    rec.usage_tokens = seen_usage
                    if isinstance(usage.get("prompt_tokens"), int):
                        rec.prompt_tokens = usage["prompt_tokens"]
            if done and not resp.content.at_eof():
                await _read_to_end(resp)
    except asyncio.TimeoutError:
        rec.error = "timeout"
    except aiohttp.ClientPayloadError as exc:
        rec.error, rec.detail = "stream-dropped", str(exc)[:200]
    except aiohttp.ClientConnectorError as exc:
        rec.error, rec.detail = "connect-error", str(exc)[:200]
    except (aiohttp.ClientError, ConnectionError) as exc:
        rec.error, rec.detail = "stream-dropped", f"{type(exc).__name__}: {exc}"[:200]
    finally:
        rec.end = done or time.perf_counter()
        if rec.error is None and not done:
            rec.error = "stream-dropped"
        rec.output_tokens = rec.tokens


@dataclass(frozen=True)
class Load:
    """What to send: n measured requests (plus warm-up), open loop at `rate` (burstiness: gamma shape)
    and/or closed loop at `concurrency`, prompt and output lengths fixed or from a distribution."""

    requests: int = 32
    rate: float | None = None
    concurrency: int | None = None
    burstiness: float = 1.0
    prompt_tokens: int = 32
    output_tokens: int = 32
    length_dist: str = "fixed"
    length_spread: float = 0.5
    warmup: int = 2
    seed: int = 0
    ramp_s: float = 0.0  # closed loop: worker k starts at k * ramp_s / concurrency (staggered streams)

    def __post_init__(self) -> None:
        if self.requests < 1:
            raise SpecError("requests", self.requests, ">= 1")
        if self.rate is None and self.concurrency is None:
            raise SpecError("load", "neither rate nor concurrency", "--rate R and/or --concurrency C")
        if self.concurrency is not None and self.concurrency < 1:
            raise SpecError("concurrency", self.concurrency, ">= 1")
        if self.warmup < 0:
            raise SpecError("warmup", self.warmup, ">= 0")


async def run_load(
    target: Target,
    load: Load,
    *,
    on_done: Callable[[int, int], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> list[RequestRecord]:
    """Send the load and return every record (warm-up ones marked). `stop()` is polled every 0.1 s;
    when it turns true the outstanding requests are cancelled and the records so far returned."""
    import aiohttp

    n = load.requests
    prompts = lengths(
        n + load.warmup, load.prompt_tokens, dist=load.length_dist, spread=load.length_spread, seed=load.seed
    )
    outs = lengths(
        n + load.warmup,
        load.output_tokens,
        dist=load.length_dist,
        spread=load.length_spread,
        seed=load.seed + 1,
    )
    limit = load.concurrency or 0
    conn = aiohttp.TCPConnector(limit=limit or 1000, force_close=False)
    timeout = aiohttp.ClientTimeout(total=target.timeout_s)
    records: list[RequestRecord] = []
    done = 0

    async with aiohttp.ClientSession(connector=conn, timeout=timeout) as session:
        # warm-up: sequential, excluded from every figure
        for i in range(load.warmup):
            rec = RequestRecord(scheduled=time.perf_counter(), prompt_tokens=prompts[i], warmup=True)
            await send_one(session, target, rec, outs[i], salt=i)
            records.append(rec)

        sem = asyncio.Semaphore(limit) if limit else None

        def finished() -> None:
            nonlocal done
            done += 1
            if on_done is not None:
                on_done(done, n)

        async def open_one(i: int, at: float) -> None:
            rec = RequestRecord(scheduled=at, prompt_tokens=prompts[i])
            records.append(rec)
            delay = at - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            if sem is not None:
                async with sem:
                    await send_one(session, target, rec, outs[i], salt=i)
            else:
                await send_one(session, target, rec, outs[i], salt=i)
            finished()

        next_i = load.warmup

        async def worker(k: int) -> None:
            nonlocal next_i
            if load.ramp_s > 0:
                await asyncio.sleep(k * load.ramp_s / limit)
            while next_i < load.warmup + n:
                i = next_i
                next_i += 1
                rec = RequestRecord(scheduled=time.perf_counter(), prompt_tokens=prompts[i])
                records.append(rec)
                await send_one(session, target, rec, outs[i], salt=i)
                finished()

        t0 = time.perf_counter() + 0.005
        if load.rate is not None:
            offsets = schedule(n, load.rate, burstiness=load.burstiness, seed=load.seed)
            tasks = [
                asyncio.ensure_future(open_one(load.warmup + k, t0 + off)) for k, off in enumerate(offsets)
            ]
        else:
            tasks = [asyncio.ensure_future(worker(k)) for k in range(limit)]
        pending = set(tasks)
        while pending:
            _, pending = await asyncio.wait(pending, timeout=0.1)
            if stop is not None and stop():
                for t in pending:
                    t.cancel()
                await asyncio.gather(*pending, return_exceptions=True)
                break
        for t in tasks:
            if t.done() and not t.cancelled() and t.exception() is not None:
                raise t.exception()  # type: ignore[misc]
    for r in records:
        if not r.end and r.error is None:
            r.error = "cancelled"
    return records


def run_load_sync(target: Target, load: Load, **kw: Any) -> list[RequestRecord]:
    """run_load in a fresh event loop: on this thread, or, when this thread already runs a loop (a
    Jupyter kernel's cell), on a worker thread this call waits for (asyncio.run refuses nested loops)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run_load(target, load, **kw))
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="aiworkbook-load") as pool:
        return pool.submit(asyncio.run, run_load(target, load, **kw)).result()


def fetch_json(url: str, timeout_s: float = 5.0) -> dict[str, Any] | None:
    """GET a small JSON document (the embedded server's /kv); None when it is not there."""
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as r:  # noqa: S310 (loopback or the user's URL)
            return json.loads(r.read())
    except (OSError, ValueError):
        return None
