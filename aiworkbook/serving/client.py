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
import functools
import json
import os
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.serving.arrivals import lengths, schedule
from aiworkbook.serving.cpumeter import metered
from aiworkbook.serving.metrics import RequestRecord

API_KEY_ENVS = ("AIWORKBOOK_API_KEY", "OPENAI_API_KEY")
APIS = ("completions", "chat")
T = TypeVar("T")
P = ParamSpec("P")
#: `--server-kind`: auto probes whether the server accepts the exact-length extensions; the others say
#: it (vllm and sglang accept ignore_eos / min_tokens / continuous_usage_stats; tgi, openai and
#: transformers serve refuse unknown fields or do not honour them)
SERVER_KINDS = ("auto", "vllm", "sglang", "tgi", "openai", "transformers")
EXTENSION_KINDS = ("vllm", "sglang")
REQUEST_TIMEOUT_S = 120.0  # a Target's own default; the proof sizes its own from the output length
#: the proof's default per-request limit: the first token within FIRST_TOKEN_S, then at least
#: 1 / S_PER_TOKEN tokens per second (a server that never ends a stream costs this, not 120 s)
FIRST_TOKEN_S = 30.0
S_PER_TOKEN = 0.25


def body_cap(max_tokens: int, stream: bool = True) -> int:
    """The most bytes an answer of `max_tokens` can take: one line of at most MAX_LINE_BYTES per event
    (a streamed answer), or one document (not streamed). More, declared or read, is `oversize`."""
    return MAX_LINE_BYTES * (max(0, max_tokens) + EVENTS_BEYOND_TOKENS) if stream else MAX_LINE_BYTES


def request_timeout_for(output_tokens: int) -> float:
    """The default per-request limit for an output length (32 tokens: 38 s)."""
    return FIRST_TOKEN_S + S_PER_TOKEN * max(0, output_tokens)


CONNECT_TIMEOUT_S = 10.0
#: the longest SSE line read (aiohttp's readline limit is twice the read buffer): longer is `oversize`
MAX_LINE_BYTES = 1 << 19
#: events a stream may carry besides one per token (the role, the finish_reason, usage, [DONE])
EVENTS_BEYOND_TOKENS = 4
ERROR_WINDOW = 10  # finished requests before max_error_rate may stop a run
ERROR_BODY_BYTES = 4096  # read of a non-200 body, for the 200 characters quoted


@dataclass(frozen=True)
class Target:
    """Where to send: base URL (with or without /v1), the served model name, which API, whether to ask
    for exact output lengths and per-chunk usage (vLLM's and SGLang's extensions `ignore_eos`,
    `min_tokens`, `stream_options.continuous_usage_stats`: off by default, since strict servers refuse
    unknown fields with 422), and the per-request and connect timeouts."""

    url: str
    model: str = "default"
    api: str = "completions"
    exact_lengths: bool = False
    continuous_usage: bool = False
    timeout_s: float = REQUEST_TIMEOUT_S
    connect_timeout_s: float = CONNECT_TIMEOUT_S
    stream: bool = True  # False (--no-stream): one JSON answer per request, E2E and tokens/s only

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise SpecError("target", self.url, "an http:// or https:// URL")
        if self.api not in APIS:
            raise SpecError("api", self.api, ", ".join(APIS))
        for name in ("timeout_s", "connect_timeout_s"):
            v = getattr(self, name)
            if not (isinstance(v, int | float) and 0 < v < float("inf")):
                raise SpecError(name, v, "seconds > 0")

    @property
    def base(self) -> str:
        base = self.url.rstrip("/")
        return base if base.endswith("/v1") else base + "/v1"

    @property
    def endpoint(self) -> str:
        return self.base + ("/chat/completions" if self.api == "chat" else "/completions")

    def client_timeout(self) -> Any:
        import aiohttp

        return aiohttp.ClientTimeout(
            total=self.timeout_s, connect=self.connect_timeout_s, sock_connect=self.connect_timeout_s
        )


def api_key() -> str | None:
    for env in API_KEY_ENVS:
        if os.environ.get(env):
            return os.environ[env]
    return None


def _body(
    target: Target, prompt_tokens: int, max_tokens: int, salt: int | str, shared: int = 0
) -> dict[str, Any]:
    # one word per token is close for most tokenizers; a per-request salt first defeats prefix
    # caching, unless `shared` words common to every request come before it (a prefix cache measured)
    shared = min(shared, max(0, prompt_tokens - 1))
    words = ["shared"] * shared + [f"r{salt}"] + ["hello"] * max(0, prompt_tokens - 1 - shared)
    text = " ".join(words)
    body: dict[str, Any] = {
        "model": target.model,
        "max_tokens": max_tokens,
        "stream": target.stream,
        "temperature": 0,
    }
    if target.stream:
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
    for c in event.get("choices") or ():
        if not isinstance(c, dict):
            continue
        if c.get("text"):
            return str(c["text"])
        delta = c.get("delta") or {}
        if isinstance(delta, dict) and delta.get("content"):
            return str(delta["content"])
    return ""


def _finished(event: dict[str, Any] | None) -> bool:
    """Whether the stream's last event ends an answer: a choice with a finish_reason, or the usage
    chunk that follows one (no choices). transformers serve ends its streams so, without [DONE]."""
    if event is None:
        return False
    choices = event.get("choices")
    if not choices:
        return isinstance(event.get("usage"), dict)
    return any(isinstance(c, dict) and c.get("finish_reason") for c in choices)


DRAIN_S = 1.0  # how long to wait after [DONE] for the end of the HTTP body


async def _read_to_end(resp: Any) -> None:
    """Read what follows [DONE] up to the end of the body, so that aiohttp puts the connection back in
    its pool: a response released before its end closes its connection, and the next request would
    pay for a new one (a TCP handshake, with TLS a second) inside its TTFT. Servers behind Starlette
    (vLLM, SGLang) end the chunked body in a write of its own after [DONE]. A server that never ends
    it costs DRAIN_S, then the connection is closed as before; the request's end stays at [DONE].
    At most MAX_LINE_BYTES are read: a server that keeps writing after [DONE] is cut off."""
    import aiohttp
    from aiohttp.http_exceptions import LineTooLong

    async def drain() -> None:
        left = MAX_LINE_BYTES
        while left > 0 and await resp.content.read(min(left, 1 << 16)):
            left -= 1 << 16

    try:
        await asyncio.wait_for(drain(), DRAIN_S)
    except (asyncio.TimeoutError, aiohttp.ClientError, ConnectionError, LineTooLong):
        pass


async def _head(resp: Any, limit: int = ERROR_BODY_BYTES) -> str:
    """The first bytes of a body, decoded leniently (a non-UTF-8 error page is still quoted)."""
    buf = b""
    try:
        while len(buf) < limit:
            part = await resp.content.read(limit - len(buf))
            if not part:
                break
            buf += part
    except Exception as exc:  # noqa: BLE001 (a body that breaks while quoting it: say so, keep the status)
        buf += f" [{type(exc).__name__}]".encode()
    return buf.decode("utf-8", "replace")


async def _read_events(resp: Any, rec: RequestRecord) -> tuple[float, Any]:
    """Read the event stream into `rec` (chunk times, texts and tokens, usage) up to [DONE]: (when
    [DONE] arrived or 0.0, the last event). An event that is malformed or an error sets `rec.error`
    and ends the reading. The chunks' counts are tokens (`rec.chunk_tokens` "usage") only when every
    content chunk came with a usage count (vLLM's continuous_usage_stats)."""
    counted = [0, 0]  # content chunks with a usage count, without
    try:
        return await _read_stream(resp, rec, counted)
    finally:
        rec.chunk_tokens = "usage" if counted[0] and not counted[1] else ""


#: what a JSON text nested too deeply to read stands for (json.loads raised RecursionError)
_NESTED = object()


def _event(data: bytes) -> Any:
    """One event's JSON; bytes that are not UTF-8 are taken as the text they stand for; None when it
    is not JSON, _NESTED when it is nested too deeply to read (never a RecursionError)."""
    try:
        return json.loads(data)
    except RecursionError:
        return _NESTED
    except ValueError:
        try:
            return json.loads(data.decode("utf-8", "replace"))
        except RecursionError:
            return _NESTED
        except ValueError:
            return None


def _quoted(data: bytes, doc: Any) -> str:
    """A malformed event or answer for the notes: its first 200 characters, or what was wrong with it."""
    if doc is _NESTED:
        return f"JSON nested too deeply to read ({len(data):,} bytes)"
    return data[:200].decode("utf-8", "replace")


async def _read_stream(resp: Any, rec: RequestRecord, counted: list[int]) -> tuple[float, Any]:
    seen_usage = 0
    event: Any = None
    cap, read = body_cap(rec.max_tokens), 0
    async for raw in resp.content:
        read += len(raw)
        if read > cap:  # more events than the answer can hold: a server that never stops writing
            rec.error, rec.detail = "oversize", f"a stream over {cap:,} bytes"
            return 0.0, event
        if not raw.startswith(b"data:"):  # blank separators, comments, other SSE fields
            continue
        data = raw[5:].strip()
        if data == b"[DONE]":
            return time.perf_counter(), event
        now = time.perf_counter()
        event = _event(data)
        if not isinstance(event, dict):
            rec.error, rec.detail = "malformed-event", _quoted(data, event)
            return 0.0, event
        if "error" in event:
            rec.error, rec.detail = "server-error", str(event["error"])[:200]
            return 0.0, event
        usage = event.get("usage") or _NO_USAGE
        if not isinstance(usage, dict) or not isinstance(event.get("choices") or _NO_CHOICES, list):
            rec.error, rec.detail = "malformed-event", data[:200].decode("utf-8", "replace")
            return 0.0, event
        text = _content(event)
        count = _count(usage, "completion_tokens", rec)
        if text:
            rec.chars += len(text)
            rec.texts.append(text)
            n = 1
            if count is not None:  # per-chunk usage: exact tokens
                n = max(1, count - seen_usage)
            counted[count is None] += 1
            rec.chunks.append((now, n))
        if count is not None:
            seen_usage = count
            rec.usage_tokens = seen_usage
            prompt = _count(usage, "prompt_tokens", rec)
            if prompt is not None:
                rec.prompt_tokens = prompt
    return 0.0, event


async def _read_answer(resp: Any, rec: RequestRecord) -> float:
    """A non-streaming answer (--no-stream): one JSON document of at most MAX_LINE_BYTES, its text as
    one chunk arriving at the end, its usage checked like a stream's. Returns when it ended, or 0.0
    with `rec.error` set."""
    raw = b""
    while len(raw) <= MAX_LINE_BYTES and (part := await resp.content.read(MAX_LINE_BYTES + 1 - len(raw))):
        raw += part
    if len(raw) > MAX_LINE_BYTES:
        rec.error, rec.detail = "oversize", f"an answer over {MAX_LINE_BYTES} bytes"
        return 0.0
    end = time.perf_counter()
    doc = _event(raw)
    usage = doc.get("usage") or _NO_USAGE if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or not isinstance(usage, dict) or "error" in doc:
        rec.error = "server-error" if isinstance(doc, dict) and "error" in doc else "malformed-event"
        rec.detail = _quoted(raw, doc)
        return 0.0
    text = ""
    for c in doc.get("choices") or ():
        if isinstance(c, dict):
            msg = c.get("message")
            text = str(c.get("text") or (msg.get("content") if isinstance(msg, dict) else "") or "")
            break
    if text:
        rec.chunks.append((end, 1))
        rec.texts.append(text)
        rec.chars += len(text)
    count = _count(usage, "completion_tokens", rec)
    if count is not None:
        rec.usage_tokens = count
        prompt = _count(usage, "prompt_tokens", rec)
        if prompt is not None:
            rec.prompt_tokens = prompt
    return end


async def send_one(
    session: Any, target: Target, rec: RequestRecord, max_tokens: int, salt: int | str = 0, shared: int = 0
) -> None:
    """Stream one request into `rec`: chunk times and token counts, usage, end, or an error kind:
    http-<status> (redirects are not followed), content-type (200 but not an event stream),
    malformed-event (not JSON, or `choices` / `usage` of the wrong type), server-error (an event with
    `error`), oversize (a line over MAX_LINE_BYTES: nothing larger is buffered), no-done (the body
    ended without [DONE] or a finish_reason), stream-dropped (the connection closed mid-stream),
    timeout, connect-timeout, connect-error, protocol-error (any other fault of the response)."""
    import aiohttp
    from aiohttp.http_exceptions import HttpProcessingError, LineTooLong

    headers = {"Content-Type": "application/json"}
    key = api_key()
    if key:
        headers["Authorization"] = f"Bearer {key}"
    body = _body(target, rec.prompt_tokens, max_tokens, salt, shared)
    rec.max_tokens, rec.streamed = max_tokens, target.stream
    rec.sent = time.perf_counter()
    done = 0.0  # when [DONE] arrived: the request's end
    event: Any = None
    try:
        async with session.post(target.endpoint, json=body, headers=headers, allow_redirects=False) as resp:
            if resp.status != 200:
                rec.error = f"http-{resp.status}"
                where = resp.headers.get("Location")
                rec.detail = (f"redirect to {where}: " if where else "") + (await _head(resp))[:200]
                return
            if resp.content_type != ("text/event-stream" if target.stream else "application/json"):
                rec.error = "content-type"
                rec.detail = f"{resp.content_type}: {(await _head(resp))[:180]}"
                return
            cap = body_cap(max_tokens, target.stream)
            if resp.content_length is not None and resp.content_length > cap:  # refused unread
                rec.error, rec.detail = (
                    "oversize",
                    f"an answer declaring {resp.content_length:,} bytes, over {cap:,}",
                )
                return
            if not target.stream:
                done = await _read_answer(resp, rec)
                return
            done, event = await _read_events(resp, rec)
            if rec.error is not None:  # an event that ends the request with an error
                return
            if done and not resp.content.at_eof():
                await _read_to_end(resp)
            elif not done and _finished(event):  # a clean end of body after the last answer's chunk
                done = time.perf_counter()
            elif not done:
                rec.error = "no-done"
                rec.detail = "the body ended without data: [DONE] or a finish_reason"
    except asyncio.CancelledError:  # a stop or the run's deadline
        rec.error = "cancelled"
        raise
    except aiohttp.ConnectionTimeoutError:
        rec.error, rec.detail = "connect-timeout", f"no connection within {target.connect_timeout_s:g} s"
    except asyncio.TimeoutError:
        rec.error, rec.detail = (
            "timeout",
            f"no complete answer within {target.timeout_s:g} s (--request-timeout)",
        )
    except LineTooLong:
        rec.error, rec.detail = "oversize", f"an SSE line over {MAX_LINE_BYTES} bytes"
    except aiohttp.ClientPayloadError as exc:
        rec.error, rec.detail = "stream-dropped", str(exc)[:200]
    except aiohttp.ClientConnectorError as exc:
        rec.error, rec.detail = "connect-error", str(exc)[:200]
    except (aiohttp.ClientError, ConnectionError) as exc:
        rec.error, rec.detail = "stream-dropped", f"{type(exc).__name__}: {exc}"[:200]
    except (HttpProcessingError, ValueError, TypeError, AttributeError) as exc:
        rec.error, rec.detail = "protocol-error", f"{type(exc).__name__}: {exc}"[:200]
    finally:
        rec.end = done or time.perf_counter()
        if rec.error is None and not done:
            rec.error = "stream-dropped"
        check_usage(rec)
        rec.output_tokens = rec.tokens or 0


#: a usage count more than this many times the stream's characters, or fewer than its content chunks
#: over it, is impossible: the request is flagged and its count not used
PLAUSIBLE_FACTOR = 4


def _count(usage: dict[str, Any], key: str, rec: RequestRecord) -> int | None:
    """A usage field as a count: a non-negative integer (a boolean is not one); anything else present
    flags the request (`rec.flag`) and is None."""
    v = usage.get(key)
    if v is None:
        return None
    if type(v) is int and v >= 0:
        return v
    rec.flag = rec.flag or f"usage {key} {str(v)[:40]!r} is not a count"
    return None


def check_usage(rec: RequestRecord) -> None:
    """Refuse a usage count the stream could not have carried: more than PLAUSIBLE_FACTOR tokens per
    character streamed, or fewer than the content chunks / PLAUSIBLE_FACTOR (a token per chunk at
    least, within the factor). The request is flagged and its count left out (its chunks are counted,
    as chunks, not tokens, unless the tokenizer counts them)."""
    n = rec.usage_tokens
    if n is None or not rec.chunks:
        if rec.flag:  # a per-chunk count refused part-way: none of its counts is used
            _refuse(rec)
        return
    chunks = len(rec.chunks)
    if n > PLAUSIBLE_FACTOR * max(1, rec.chars) or n * PLAUSIBLE_FACTOR < chunks:
        rec.flag = rec.flag or (
            f"usage completion_tokens {n} is implausible for {chunks} chunks of {rec.chars} characters"
        )
    if rec.flag:
        _refuse(rec)


def _refuse(rec: RequestRecord) -> None:
    rec.usage_tokens = None
    rec.chunk_tokens = ""
    rec.chunks = [(t, 1) for t, _ in rec.chunks]


_NO_USAGE: dict[str, Any] = {}
_NO_CHOICES: list[Any] = []


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
    # GuideLLM's: leave out requests scheduled in the first warmup_s of the measured window or ending
    # in its last cooldown_s (marked `excluded`); stop once more than max_error_rate of at least
    # ERROR_WINDOW finished requests failed
    warmup_s: float = 0.0
    cooldown_s: float = 0.0
    max_error_rate: float | None = None
    # every prompt starts with "r<prefix><index>" (the proof's prefix: run id and point, so no prompt
    # is sent twice in a run), after `shared_prefix` words common to all (0: none)
    prefix: str = ""
    shared_prefix: int = 0
    # stop once more measured requests than this timed out: the point is invalid whatever the rest do,
    # and each costs a whole request timeout (None: never)
    max_timeouts: int | None = None

    def __post_init__(self) -> None:
        for name in ("warmup_s", "cooldown_s"):
            v = getattr(self, name)
            if not 0 <= v < float("inf"):
                raise SpecError(name, v, "seconds >= 0")
        if self.max_error_rate is not None and not 0 < self.max_error_rate <= 1:
            raise SpecError("max_error_rate", self.max_error_rate, Msg("allowed.fraction_above_0"))
        if self.requests < 1:
            raise SpecError("requests", self.requests, ">= 1")
        if self.rate is None and self.concurrency is None:
            raise SpecError("load", "neither rate nor concurrency", Msg("allowed.rate_or_concurrency"))
        if self.concurrency is not None and self.concurrency < 1:
            raise SpecError("concurrency", self.concurrency, ">= 1")
        if self.warmup < 0:
            raise SpecError("warmup", self.warmup, ">= 0")
        if self.shared_prefix < 0:
            raise SpecError("shared_prefix", self.shared_prefix, ">= 0 tokens")


@dataclass
class _Senders:
    """What one `run_load` shares between its warm-up, open-loop and closed-loop senders: the lengths,
    the records, the tallies and why the run stops early (`failing`)."""

    session: Any
    target: Target
    load: Load
    prompts: list[int]
    outs: list[int]
    on_done: Callable[[int, int], None] | None
    records: list[RequestRecord] = field(default_factory=list)
    done: int = 0
    errors: int = 0
    timeouts: int = 0
    failing: str = ""  # set when the error rate passed load.max_error_rate
    next_i: int = 0  # the closed loop's next request
    sem: asyncio.Semaphore | None = None

    async def send(self, rec: RequestRecord, i: int) -> None:
        self.records.append(rec)
        await self.post(rec, i)

    async def post(self, rec: RequestRecord, i: int) -> None:
        """Send request i: its salt is the load's prefix (run id and point) and its index."""
        load = self.load
        sending = send_one(
            self.session, self.target, rec, self.outs[i], salt=f"{load.prefix}{i}", shared=load.shared_prefix
        )
        await metered(sending, rec.add_cpu)  # this request's own CPU, measured per request

    async def warm(self) -> None:  # sequential, excluded from every figure
        for i in range(self.load.warmup):
            rec = RequestRecord(scheduled=time.perf_counter(), prompt_tokens=self.prompts[i], warmup=True)
            await self.send(rec, i)

    def finished(self, rec: RequestRecord) -> None:
        load = self.load
        self.done += 1
        if rec.error is not None:
            self.errors += 1
            done, errors = self.done, self.errors
            if load.max_error_rate and done >= ERROR_WINDOW and errors / done > load.max_error_rate:
                self.failing = (
                    f"stopped: {errors} of {done} requests failed (max error rate {load.max_error_rate:g})"
                )
            self.timeouts += rec.error == "timeout"
            if load.max_timeouts is not None and self.timeouts > load.max_timeouts and not self.failing:
                self.failing = (
                    f"stopped by the request timeout: {self.timeouts} requests had no complete answer in "
                    f"time, more than the {load.max_timeouts} the max error rate allows of {load.requests}"
                )
        if self.on_done is not None:
            self.on_done(self.done, load.requests)

    async def open_one(self, i: int, at: float) -> None:
        rec = RequestRecord(scheduled=at, prompt_tokens=self.prompts[i])
        self.records.append(rec)
        delay = at - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        if self.sem is not None:
            async with self.sem:
                await self.post(rec, i)
        else:
            await self.post(rec, i)
        self.finished(rec)

    async def worker(self, k: int, limit: int) -> None:
        load = self.load
        if load.ramp_s > 0:
            await asyncio.sleep(k * load.ramp_s / limit)
        while self.next_i < load.warmup + load.requests and not self.failing:
            i = self.next_i
            self.next_i += 1
            rec = RequestRecord(scheduled=time.perf_counter(), prompt_tokens=self.prompts[i])
            await self.send(rec, i)
            self.finished(rec)


async def run_load(
    target: Target,
    load: Load,
    *,
    on_done: Callable[[int, int], None] | None = None,
    stop: Callable[[], bool] | None = None,
    deadline: float | None = None,
) -> list[RequestRecord]:
    """Send the load and return every record (warm-up ones marked). `stop()` is polled every 0.1 s;
    when it turns true, or perf_counter passes `deadline`, the outstanding requests are cancelled
    (error 'cancelled') and the records so far returned."""
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
    # read_bufsize bounds what one response buffers: aiohttp pauses the socket past twice it, and a
    # line longer than that raises LineTooLong (our `oversize`) instead of growing without end
    session_kw = dict(timeout=target.client_timeout(), read_bufsize=MAX_LINE_BYTES // 2)

    async with aiohttp.ClientSession(connector=conn, **session_kw) as session:
        s = _Senders(session, target, load, prompts, outs, on_done)
        records = s.records

        def halt() -> bool:
            return (
                bool(s.failing)
                or (stop is not None and stop())
                or (deadline is not None and time.perf_counter() > deadline)
            )

        if load.warmup and await _watch([asyncio.ensure_future(s.warm())], halt):
            return _cancelled(records)

        s.sem = asyncio.Semaphore(limit) if limit else None
        s.next_i = load.warmup
        t0 = time.perf_counter() + 0.005
        if load.rate is not None:
            offsets = schedule(n, load.rate, burstiness=load.burstiness, seed=load.seed)
            tasks = [
                asyncio.ensure_future(s.open_one(load.warmup + k, t0 + off)) for k, off in enumerate(offsets)
            ]
        else:
            tasks = [asyncio.ensure_future(s.worker(k, limit)) for k in range(limit)]
        halted = await _watch(tasks, halt)
        if (halted or s.failing) and load.rate is None:  # the closed loop's requests never sent
            now = time.perf_counter()
            records += [
                RequestRecord(scheduled=now, end=now, prompt_tokens=prompts[i], error="cancelled")
                for i in range(s.next_i, load.warmup + n)
            ]
    _cancelled(
        records, s.failing or ("the run's deadline" if deadline and time.perf_counter() > deadline else "")
    )
    _window(records, load.warmup_s, load.cooldown_s)
    return records


def _window(records: list[RequestRecord], warmup_s: float, cooldown_s: float) -> None:
    """Mark the measured requests scheduled in the first `warmup_s` of the window (first scheduled
    arrival to last end) or ending in its last `cooldown_s` as excluded."""
    measured = [r for r in records if not r.warmup]
    ends = [r.end for r in measured if r.end]
    if not (warmup_s or cooldown_s) or not ends:
        return
    t0, t1 = min(r.scheduled for r in measured), max(ends)
    for r in measured:
        if r.scheduled < t0 + warmup_s:
            r.excluded = "warm-up"
        elif r.end > t1 - cooldown_s:
            r.excluded = "cool-down"


async def _watch(tasks: Sequence[asyncio.Future[None]], halt: Callable[[], bool]) -> bool:
    """Wait for the tasks, polling `halt()` every 0.1 s; when it turns true cancel what is left and
    return True. A task's own exception is raised (the client's bugs are not hidden as errors)."""
    pending = set(tasks)
    halted = False
    while pending:
        _, pending = await asyncio.wait(pending, timeout=0.1)
        if pending and halt():
            for t in pending:
                t.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            halted = True
            break
    for t in tasks:
        if t.done() and not t.cancelled() and t.exception() is not None:
            raise t.exception()  # type: ignore[misc]
    return halted


def _cancelled(records: list[RequestRecord], why: str = "") -> list[RequestRecord]:
    for r in records:
        if r.error == "cancelled" or (not r.end and r.error is None):
            r.error, r.detail = "cancelled", r.detail or why
    return records


def synced(fn: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, T]:
    """`fn` run to completion in a fresh event loop (run_sync), under fn's own typed signature (what
    mypy and inspect.signature show), never a pass-through of untyped keywords."""

    @functools.wraps(fn)
    def call(*args: P.args, **kwargs: P.kwargs) -> T:
        return run_sync(fn(*args, **kwargs))

    call.__name__ = call.__qualname__ = f"{fn.__name__}_sync"
    call.__doc__ = f"{fn.__name__} in a fresh event loop (see run_sync).\n\n{fn.__doc__ or ''}"
    return call


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine in a fresh event loop: on this thread, or, when this thread already runs a loop
    (a Jupyter kernel's cell), on a worker thread this call waits for (asyncio.run refuses nested loops)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="aiworkbook-load") as pool:
        return pool.submit(asyncio.run, coro).result()


def fetch_json(url: str, timeout_s: float = 5.0) -> dict[str, Any] | None:
    """GET a small JSON document (the embedded server's /kv, the stand-in's /timings) through the one
    bounded GET (httpget: a whole-request deadline, a size cap, same-origin redirects only); None when
    it is not there or not a JSON object."""
    from aiworkbook import httpget

    try:
        answer = httpget.get(url, deadline_s=timeout_s)
        doc = json.loads(answer.body) if answer.status == 200 else None
    except (OSError, ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


#: run_load in a fresh event loop, with run_load's signature
run_load_sync = synced(run_load)
