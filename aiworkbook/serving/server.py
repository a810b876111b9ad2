"""The embedded OpenAI-compatible streaming server (aiohttp.web) on a loopback address.

`POST /v1/completions` and `/v1/chat/completions` (streaming server-sent events ending with
`data: [DONE]`, `stream_options.include_usage`, vLLM's `continuous_usage_stats`; `ignore_eos` and
`min_tokens` accepted: this server always generates exactly `max_tokens`), `GET /v1/models`,
`GET /kv` (the engine's KV pool and queue as JSON) and `GET /metrics` (the same as OpenMetrics text).
A body is read whole and validated (requests.py) before any token or any 200: a bad one is a 4xx with
a JSON error naming the field; a client that leaves is one DEBUG line (docs/serving.md, Limits).

Behind it either the Engine (a model behind a scheduler and a KV pool) or `FixedDelay`, the
planted-delay stand-in of serving/standin.py (with its own `GET /timings`). The wire format (the
event stream, the JSON error) is serving/sse.py.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any

from aiohttp import web

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.serving.requests import BODY_MAX_BYTES, BODY_READ_TIMEOUT_S, RequestError, parse
from aiworkbook.serving.sse import PREPARED, error, open_stream
from aiworkbook.serving.standin import FAULTS, TIMINGS_KEPT, FixedDelay, StandIn

if TYPE_CHECKING:
    from aiworkbook.serving.engine import Engine

LOOPBACK = ("127.0.0.1", "::1", "localhost")
#: seconds a connection may sit idle, before its first request or between requests, before the server
#: closes it (aiohttp's keepalive_timeout, whose own default is an hour; uvicorn's, under vLLM, is 5 s)
IDLE_TIMEOUT_S = 15.0
log = logging.getLogger(__name__)


async def _read_body(request: web.Request) -> bytes | web.Response:
    """The whole body within BODY_MAX_BYTES and BODY_READ_TIMEOUT_S, or the JSON error to answer. A
    body that declares more (Content-Length) is refused before any of it is read."""
    declared = request.content_length
    if declared is not None and declared > BODY_MAX_BYTES:
        return error(
            413,
            f"the body declares {declared:,} bytes, over {BODY_MAX_BYTES:,}",
            "invalid_request_error",
            "body",
        )
    try:
        return await asyncio.wait_for(request.read(), BODY_READ_TIMEOUT_S)
    except web.HTTPRequestEntityTooLarge:
        return error(413, f"the body is larger than {BODY_MAX_BYTES} bytes", "invalid_request_error", "body")
    except asyncio.TimeoutError:
        return error(
            408, f"the body took longer than {BODY_READ_TIMEOUT_S:g} s", "invalid_request_error", "body"
        )
    except web.RequestPayloadError as exc:  # a body that cannot be decoded (Content-Encoding), cut short
        return error(400, f"the body cannot be read: {exc}", "invalid_request_error", "body")


@web.middleware
async def _json_errors(request: web.Request, handler: Any) -> web.StreamResponse:
    """aiohttp's own 4xx (no such route, a method the route lacks) as the same JSON error as ours."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        kind = "not_found" if exc.status == 404 else "invalid_request_error"
        return error(exc.status, f"{exc.reason}: {request.method} {request.path}"[:300], kind)


async def _forget_handler_chains(app: web.Application) -> None:
    """Drop aiohttp's memo of handler + middleware chains (a module-level lru_cache of up to 1,024 in
    aiohttp/web_app.py, keyed by the handler and the app): it would keep a stopped server's app, its
    Engine and the model's weights (GPU memory on CUDA) alive after the server is gone."""
    from aiohttp import web_app

    cache = getattr(web_app, "_cached_build_middleware", None)
    if cache is not None and hasattr(cache, "cache_clear"):
        cache.cache_clear()


#: make_app's choice for ServerThread: cancel a handler whose client went away (an engine request
#: then frees its KV blocks and batch slot); the stand-in keeps aiohttp's default
CANCEL_ON_DISCONNECT = web.AppKey("cancel_on_disconnect", bool)


async def _engine_answer(
    engine: Engine,
    model_name: str,
    request: web.Request,
    body: dict[str, Any],
    chat: bool,
    words: list[str],
    max_tokens: int,
) -> web.StreamResponse:
    """One request through the Engine: its tokens as they come (streamed) or the whole answer."""
    from aiworkbook.serving.engine import Rejected

    loop = asyncio.get_running_loop()
    q: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    def emit(kind: str, payload: Any) -> None:
        try:
            loop.call_soon_threadsafe(q.put_nowait, (kind, payload))
        except RuntimeError:  # the server's loop has closed (shutting down): nobody is listening
            pass

    try:
        seq = engine.submit(len(words), max_tokens, emit, words)
    except Rejected as exc:
        kind = "rate_limit_exceeded" if exc.status == 429 else "invalid_request_error"
        return error(exc.status, str(exc), kind)
    resp: web.StreamResponse | None = None
    try:
        if not body.get("stream"):
            toks: list[str] = []
            while (item := await q.get())[0] == "token":
                toks.append(f" t{item[1]}")
            if item[0] == "error":
                return error(500, str(item[1]), "server_error")
            text = "".join(toks)
            choice = {"index": 0, "finish_reason": item[1]}
            choice.update({"message": {"role": "assistant", "content": text}} if chat else {"text": text})
            usage = {
                "prompt_tokens": len(words),
                "completion_tokens": len(toks),
                "total_tokens": len(words) + len(toks),
            }
            return web.json_response(
                {
                    "id": uuid.uuid4().hex,
                    "object": "chat.completion" if chat else "text_completion",
                    "model": model_name,
                    "choices": [choice],
                    "usage": usage,
                }
            )
        resp, st = await open_stream(request, model_name, body, chat, len(words))
        while True:
            kind, payload = await q.get()
            if kind == "token":
                await st.tokens_out(f" t{payload}", 1)
            elif kind == "done":
                await st.finish(payload)
                return resp
            else:
                await st.send({"error": {"message": str(payload), "type": "server_error"}})
                return resp
    finally:
        engine.cancel(seq)  # stops the work when the client went away mid-answer


def make_app(
    model_name: str, engine: Engine | None = None, fixed: FixedDelay | None = None
) -> web.Application:
    """The aiohttp application: an Engine or a FixedDelay stand-in behind the OpenAI routes."""
    if (engine is None) == (fixed is None):
        raise SpecError("backend", "engine and fixed", "exactly one of an Engine or a FixedDelay")
    standin = StandIn(fixed, model_name) if fixed is not None else None
    app = web.Application(client_max_size=BODY_MAX_BYTES, middlewares=[_json_errors])
    app[CANCEL_ON_DISCONNECT] = engine is not None
    app.on_cleanup.append(_forget_handler_chains)

    async def generate(request: web.Request, chat: bool) -> web.StreamResponse:
        arrived = time.perf_counter()  # the handler's entry, before the body is read
        try:
            raw = await _read_body(request)
            if isinstance(raw, web.Response):
                return raw
            try:
                g = parse(raw, chat)
            except RequestError as exc:
                return error(400, str(exc), "invalid_request_error", exc.field)
            opts = {"include_usage": g.include_usage, "continuous_usage_stats": g.continuous_usage}
            body = {"stream": g.stream, "stream_options": opts}
            if standin is not None:
                return await standin.answer(request, body, chat, g.words, g.max_tokens, arrived)
            assert engine is not None
            return await _engine_answer(engine, model_name, request, body, chat, g.words, g.max_tokens)
        except ConnectionError as exc:  # the client went away mid-answer: not the server's error
            log.debug("client %s went away from %s: %s", request.remote, request.path, exc)
            prepared = request.get(PREPARED)
            return prepared if prepared is not None else web.Response(status=499)
        except asyncio.CancelledError:
            log.debug("client %s went away from %s: request cancelled", request.remote, request.path)
            raise

    async def completions(request: web.Request) -> web.StreamResponse:
        return await generate(request, chat=False)

    async def chat_completions(request: web.Request) -> web.StreamResponse:
        return await generate(request, chat=True)

    async def models(request: web.Request) -> web.Response:
        return web.json_response(
            {"object": "list", "data": [{"id": model_name, "object": "model", "owned_by": "aiworkbook"}]}
        )

    async def timings_route(request: web.Request) -> web.Response:
        if standin is None:
            return error(404, "/timings is the fixed-delay stand-in's; an engine reports /kv", "not_found")
        return await standin.timings_route(request)

    def _stats() -> dict[str, Any]:
        return engine.stats() if engine is not None else StandIn.stats()

    async def kv(request: web.Request) -> web.Response:
        return web.json_response(_stats())

    async def metrics(request: web.Request) -> web.Response:
        from aiworkbook.serving.openmetrics import render
        from aiworkbook.telemetry.exposition import OPENMETRICS_CONTENT_TYPE

        return web.Response(
            body=render(_stats()).encode(), headers={"Content-Type": OPENMETRICS_CONTENT_TYPE}
        )

    app.router.add_post("/v1/completions", completions)
    app.router.add_post("/v1/chat/completions", chat_completions)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/kv", kv)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/timings", timings_route)

    async def health(request: web.Request) -> web.Response:
        return web.json_response({"ok": True, "engine_error": getattr(engine, "error", "")})

    app.router.add_get("/health", health)
    return app


class _QuietClientErrors(logging.LoggerAdapter):
    """aiohttp's server logger, except that what the client caused (a request it malformed: an
    HttpProcessingError with a 4xx code, a bad request line, a header too long, a body that cannot be
    decoded; or its connection lost) is one DEBUG line instead of an ERROR with its traceback.
    Anything else aiohttp logs, a server-side failure, stays an ERROR."""

    def exception(self, msg: Any, *args: Any, exc_info: Any = True, **kw: Any) -> None:
        from aiohttp.http_exceptions import HttpProcessingError

        exc = exc_info if isinstance(exc_info, BaseException) else None
        client = isinstance(exc, HttpProcessingError) and 400 <= (exc.code or 0) < 500
        if client or isinstance(exc, web.RequestPayloadError | ConnectionResetError):
            self.debug(msg, *args, exc_info=exc)
            return
        self.logger.exception(msg, *args, exc_info=exc_info, **kw)

    def debug(self, msg: Any, *args: Any, exc_info: Any = None, **kw: Any) -> None:
        """One line: an exception aiohttp attaches to a debug record is summarised, not traced."""
        if isinstance(exc_info, BaseException):
            msg, args = (
                f"{msg}: %s",
                (*args, f"{type(exc_info).__name__}: {exc_info}".replace("\n", " ")[:200]),
            )
            exc_info = None
        self.logger.debug(msg, *args, exc_info=exc_info, **kw)


class ServerThread:
    """Runs an aiohttp app on `host:port` (port 0: a free one) in a thread with its own event loop;
    `.url` once started; `.stop()` (or leaving the `with` block) shuts it and the engine down.

    Timeouts, explicit: a connection idle for `idle_timeout_s` (one that never sends a request, or a
    half-sent request line or headers, or a kept-alive one between requests) is closed (aiohttp's
    keepalive_timeout); a body must arrive within BODY_READ_TIMEOUT_S (requests.py). An app from
    make_app with an engine has its handlers cancelled when their client disconnects (aiohttp's
    handler_cancellation), so a non-streaming request whose client timed out stops and frees its slot."""

    def __init__(
        self,
        app: web.Application,
        host: str = "127.0.0.1",
        port: int = 0,
        engine: Engine | None = None,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
    ) -> None:
        from aiworkbook.serving.limits import check_port

        if host not in LOOPBACK:
            raise SpecError("host", host, Msg("allowed.loopback", hosts=", ".join(LOOPBACK)))
        check_port(port)
        if not 0 < idle_timeout_s < float("inf"):
            raise SpecError("idle_timeout_s", idle_timeout_s, Msg("allowed.seconds_pos"))
        self.app, self.host, self.port, self.engine = app, host, port, engine
        self.idle_timeout_s = float(idle_timeout_s)
        self.loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._ready = threading.Event()
        self._exc: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="aiworkbook-serve", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self._runner = web.AppRunner(
                self.app,
                access_log=None,
                handle_signals=False,
                keepalive_timeout=self.idle_timeout_s,
                logger=_QuietClientErrors(logging.getLogger("aiohttp.server")),
                handler_cancellation=self.app.get(CANCEL_ON_DISCONNECT, False),
            )
            self.loop.run_until_complete(self._runner.setup())
            site = web.TCPSite(self._runner, self.host, self.port, reuse_address=True)
            self.loop.run_until_complete(site.start())
            self.port = int(self._runner.addresses[0][1])
        except BaseException as exc:
            self._exc = exc
            self._ready.set()
            return
        self._ready.set()
        self.loop.run_forever()
        self.loop.run_until_complete(self._runner.cleanup())
        self.loop.close()

    def start(self) -> ServerThread:
        if self.engine is not None:
            self.engine.start()
        self._thread.start()
        self._ready.wait(30)
        if self._exc is not None:
            if self.engine is not None:
                self.engine.stop()
            raise self._exc
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=10)
        if self.engine is not None:
            self.engine.stop()

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["FAULTS", "TIMINGS_KEPT", "FixedDelay", "ServerThread", "make_app"]
