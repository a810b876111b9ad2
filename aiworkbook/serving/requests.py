"""The embedded server's request bodies as pydantic models: the whole body is read (bounded in bytes and
time) and validated before any token is generated or any 200 is sent, so a bad body is a 400 whose JSON
error names the field, never a 500 or a stream broken after its 200.

Types are strict (a string is not a number, 1 is not true); fields this server does not use are
accepted and ignored, as OpenAI-compatible servers do, but the usual sampling fields are still
type-checked. Bounds: BODY_MAX_BYTES per body, PROMPT_MAX_CHARS of prompt text, MAX_TOKENS per answer
(the engine then refuses what does not fit its KV pool or the model's context, also with a 400), and
pydantic's JSON parser refuses nesting deeper than its recursion limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

BODY_MAX_BYTES = 1024 * 1024  # aiohttp's default client_max_size, made explicit
BODY_READ_TIMEOUT_S = 30.0  # a body that trickles in slower than this is refused (408)
PROMPT_MAX_CHARS = 512 * 1024
MAX_TOKENS = 1 << 20
MAX_MESSAGES = 4096
DEFAULT_MAX_TOKENS = 16

_STRICT = ConfigDict(strict=True, extra="allow")
_Tokens = Annotated[int, Field(ge=1, le=MAX_TOKENS)]
_Prob = Annotated[float, Field(ge=0.0, le=2.0, allow_inf_nan=False)]
_Text = Annotated[str, Field(max_length=PROMPT_MAX_CHARS)]


class RequestError(ValueError):
    """A bad body: `field` (a dotted path, or "body") and what is wrong with it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"field '{field}': {message}")
        self.field = field


class StreamOptions(BaseModel):
    model_config = _STRICT
    include_usage: bool = False
    continuous_usage_stats: bool = False  # vLLM's: usage on every chunk


class _Body(BaseModel):
    model_config = _STRICT
    model: str | None = Field(None, max_length=1024)
    max_tokens: _Tokens | None = None
    max_completion_tokens: _Tokens | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    ignore_eos: bool = False  # accepted: this server always generates exactly max_tokens
    min_tokens: Annotated[int, Field(ge=0, le=MAX_TOKENS)] = 0
    temperature: _Prob | None = None
    top_p: Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)] | None = None
    n: Annotated[int, Field(ge=1, le=1)] | None = None  # one choice per request
    seed: int | None = None
    stop: str | Annotated[list[str], Field(max_length=16)] | None = None
    user: str | None = Field(None, max_length=1024)


class CompletionRequest(_Body):
    prompt: _Text | Annotated[list[_Text | int], Field(max_length=PROMPT_MAX_CHARS)] = ""


class ContentPart(BaseModel):
    model_config = _STRICT
    type: str = Field(max_length=64)
    text: _Text | None = None


class ChatMessage(BaseModel):
    model_config = _STRICT
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: _Text | Annotated[list[ContentPart], Field(max_length=MAX_MESSAGES)] | None = None


class ChatRequest(_Body):
    messages: Annotated[list[ChatMessage], Field(min_length=1, max_length=MAX_MESSAGES)]


@dataclass(frozen=True)
class Generate:
    """What a validated body asks for."""

    words: list[str]  # the prompt, one token per word
    max_tokens: int
    stream: bool
    include_usage: bool
    continuous_usage: bool


def _text(req: CompletionRequest | ChatRequest) -> str:
    if isinstance(req, ChatRequest):
        parts: list[str] = []
        for m in req.messages:
            if isinstance(m.content, str):
                parts.append(m.content)
            elif m.content is not None:
                parts += [p.text for p in m.content if p.text is not None]
        return " ".join(parts)
    prompt = req.prompt
    return " ".join(map(str, prompt)) if isinstance(prompt, list) else prompt


def _field(loc: tuple[Any, ...]) -> str:
    """The dotted path of a field: pydantic's location up to the first union member's tag
    ('constrained-str', 'list[...]'), which names a type, not a field."""
    names = {
        n
        for m in (CompletionRequest, ChatRequest, ChatMessage, ContentPart, StreamOptions)
        for n in m.model_fields
    }
    path: list[str] = []
    for x in loc:
        if not (isinstance(x, int) or x in names):
            break
        path.append(str(x))
    return ".".join(path) or "body"


def parse(raw: bytes, chat: bool) -> Generate:
    """Validate a request body (bytes of JSON); RequestError names the first bad field."""
    model = ChatRequest if chat else CompletionRequest
    try:
        req = model.model_validate_json(raw)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = _field(tuple(err.get("loc", ())))
        if err.get("type") == "json_invalid":
            where = "body"
        raise RequestError(where, str(err.get("msg", "invalid"))[:300]) from None
    text = _text(req)
    if len(text) > PROMPT_MAX_CHARS:
        raise RequestError("messages" if chat else "prompt", f"longer than {PROMPT_MAX_CHARS} characters")
    opts = req.stream_options or StreamOptions()
    return Generate(
        words=text.split() or ["<empty>"],
        max_tokens=req.max_tokens or req.max_completion_tokens or DEFAULT_MAX_TOKENS,
        stream=req.stream,
        include_usage=opts.include_usage,
        continuous_usage=opts.continuous_usage_stats,
    )
