"""The planted-delay stand-in: a "model" that answers every request after a planted time to first
token and inter-token gap, with optional faults (a stream dropped mid-way, a malformed event). It is
the ground truth the load generator is tested against (tests/test_serving_server.py,
benchmarks/bench_serving.py), served by server.make_app(fixed=FixedDelay(...)).

Its `GET /timings` gives, per request, its handler's entry and the start of its first token's write
on perf_counter (the load generator's clock), keyed by the prompt's first word; once the stream has
sent its last token, also the start of that write and the tokens sent (what the server delivered:
the truth a client's tokens/s is set against in benchmarks/peers.py). A stream cut by a fault has
neither.
"""

from __future__ import annotations

import asyncio
import collections
import time
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from aiworkbook.serving.sse import open_stream

FAULTS = ("drop", "malformed")
TIMINGS_KEPT = 4096  # the stand-in's last requests that GET /timings reports


@dataclass(frozen=True)
class FixedDelay:
    """A stand-in model: first token after `ttft_s`, then one chunk of `chunk_tokens` tokens every
    `itl_s * chunk_tokens`; `fault` ('drop' or 'malformed') strikes after `fault_after` chunks."""

    ttft_s: float = 0.01
    itl_s: float = 0.005
    chunk_tokens: int = 1
    fault: str | None = None
    fault_after: int = 2


async def sleep_until(due: float) -> None:
    """Sleep to the perf_counter deadline `due`, not past it: asyncio.sleep wakes up to a millisecond
    late (the selector's timeout is rounded up), which a planted delay must not add to the
    harness overhead it is used to measure. The last 2 ms yield to the loop instead of sleeping.
    perf_counter, not the loop's clock: /timings readings are set against the client's perf_counter
    stamps, and uvloop's loop.time() counts whole milliseconds (a deadline from it comes up to a
    millisecond early)."""
    while (left := due - time.perf_counter()) > 0:
        await asyncio.sleep(left - 0.002 if left > 0.002 else 0)


class StandIn:
    """Answers requests for one server as `fixed` says, and keeps its own clock readings per request
    (for splitting a measured TTFT into the client's send, the stand-in's lateness and the delivery
    back: benchmarks/bench_serving.py)."""

    def __init__(self, fixed: FixedDelay, model_name: str) -> None:
        self.fixed, self.model_name = fixed, model_name
        self.timings: collections.deque[dict[str, Any]] = collections.deque(maxlen=TIMINGS_KEPT)

    async def answer(
        self,
        request: web.Request,
        body: dict[str, Any],
        chat: bool,
        words: list[str],
        max_tokens: int,
        arrived: float,
    ) -> web.StreamResponse:
        fixed = self.fixed
        due = arrived + fixed.ttft_s  # from the handler's entry: its own body parsing is not the client's
        resp, st = await open_stream(request, self.model_name, body, chat, len(words))
        await sleep_until(due)
        sent = chunks = 0
        rec: dict[str, Any] = {}
        while sent < max_tokens:
            if fixed.fault and chunks >= fixed.fault_after:
                if fixed.fault == "malformed":
                    await st.send('{"choices": [{"text": "unterminated')
                    await st.finish("length")
                    return resp
                if request.transport is not None:  # 'drop': the connection dies mid-stream
                    request.transport.close()
                return resp
            if chunks:
                due += fixed.itl_s * fixed.chunk_tokens
                await sleep_until(due)
            n = min(fixed.chunk_tokens, max_tokens - sent)
            last = sent + n >= max_tokens
            if not chunks or last:  # read before the write: the reader it wakes may run before this again
                now = time.perf_counter()
                if not chunks:
                    rec = {"prompt_head": words[0], "entered": arrived, "first_write": now}
                    self.timings.append(rec)
                if last:  # the same record, filled in: a served stream's end, for served tokens/s
                    rec["last_write"], rec["tokens"] = now, sent + n
            await st.tokens_out(" tok" * n, n)
            sent += n
            chunks += 1
        await st.finish("length")
        return resp

    async def timings_route(self, request: web.Request) -> web.Response:
        return web.json_response({"clock": "perf_counter", "requests": list(self.timings)})

    @staticmethod
    def stats() -> dict[str, Any]:
        return {"backend": "fixed-delay"}
