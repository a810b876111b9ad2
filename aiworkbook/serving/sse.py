"""The OpenAI-style answer on the wire, shared by the engine's routes and the stand-in: a JSON error
body, and a server-sent-events stream of completion chunks (docs/serving.md)."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from aiohttp import web

#: the request's streaming response, once its 200 has gone out
PREPARED = web.RequestKey("prepared", web.StreamResponse)


class Stream:
    """Writes OpenAI-style chunks for one request."""

    def __init__(self, resp: web.StreamResponse, model: str, chat: bool, body: dict[str, Any], prompt: int):
        opts = body.get("stream_options") or {}
        self.resp, self.model, self.chat, self.prompt = resp, model, chat, prompt
        self.usage = bool(opts.get("include_usage"))
        self.continuous = bool(opts.get("continuous_usage_stats"))
        self.id = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex[:16]
        self.created = int(time.time())
        self.tokens = 0

    def _usage(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt,
            "completion_tokens": self.tokens,
            "total_tokens": self.prompt + self.tokens,
        }

    def _chunk(self, text: str | None, finish: str | None) -> dict[str, Any]:
        choice: dict[str, Any] = {"index": 0, "finish_reason": finish, "logprobs": None}
        if self.chat:
            choice["delta"] = {"content": text} if text is not None else {}
        else:
            choice["text"] = text or ""
        obj = "chat.completion.chunk" if self.chat else "text_completion"
        d = {"id": self.id, "object": obj, "created": self.created, "model": self.model, "choices": [choice]}
        if self.continuous and self.usage:
            d["usage"] = self._usage()
        return d

    @staticmethod
    def _event(obj: dict[str, Any] | str) -> bytes:
        data = obj if isinstance(obj, str) else json.dumps(obj, separators=(",", ":"))
        return f"data: {data}\n\n".encode()

    async def send(self, obj: dict[str, Any] | str) -> None:
        await self.resp.write(self._event(obj))

    async def tokens_out(self, text: str, n: int) -> None:
        self.tokens += n
        await self.send(self._chunk(text, None))

    async def finish(self, reason: str) -> None:
        """The finish chunk, the usage chunk and [DONE] in one write that also ends the chunked body:
        one send instead of four, so the client wakes once for the end of its stream."""
        events: list[dict[str, Any] | str] = [self._chunk(None if self.chat else "", reason)]
        if self.usage:
            obj = "chat.completion.chunk" if self.chat else "text_completion"
            events.append(
                {
                    "id": self.id,
                    "object": obj,
                    "created": self.created,
                    "model": self.model,
                    "choices": [],
                    "usage": self._usage(),
                }
            )
        events.append("[DONE]")
        await self.resp.write_eof(b"".join(map(self._event, events)))


async def open_stream(
    request: web.Request, model: str, body: dict[str, Any], chat: bool, prompt: int
) -> tuple[web.StreamResponse, Stream]:
    """Send the 200 and the event-stream headers; the Stream that writes the chunks after them."""
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    request[PREPARED] = resp
    await resp.prepare(request)
    return resp, Stream(resp, model, chat, body, prompt)


def error(status: int, message: str, kind: str, param: str | None = None) -> web.Response:
    """OpenAI's error body: {"error": {message, type, param, code}}."""
    err = {"message": message, "type": kind, "param": param, "code": status}
    return web.json_response({"error": err}, status=status)
