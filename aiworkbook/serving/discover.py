"""What a --target serves and how to ask it, settled once before a run: the model (`GET /v1/models`
when no name is given) and whether the server accepts the extensions that force exact output lengths.

vLLM and SGLang accept `ignore_eos`, `min_tokens` and `stream_options.continuous_usage_stats`;
OpenAI's API, `transformers serve` and other strict servers refuse unknown fields (HTTP 400 or 422).
With `kind="auto"` one request for PROBE_TOKENS tokens carrying the extensions decides: answered
with that many tokens (the server's usage, else the tokenizer's count), every request carries them
and the lengths are called forced; answered shorter, the server ignores them (standard fields);
answered with no count, they are sent but not claimed; refused with 400/422 (and the same request
without them accepted), standard OpenAI fields only, and TPOT and throughput count the tokens
actually produced. The server's identity (its `Server` header, /v1/models' `owned_by`, /version)
is recorded as it says it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass, field, replace
from pathlib import PurePath
from typing import Any

from aiworkbook import httpget
from aiworkbook.errors import SpecError, printable
from aiworkbook.httpget import FetchError
from aiworkbook.message import Msg
from aiworkbook.serving.client import (
    ERROR_BODY_BYTES,
    EXTENSION_KINDS,
    SERVER_KINDS,
    Target,
    api_key,
    send_one,
    synced,
)
from aiworkbook.serving.metrics import RequestRecord

MODELS_BYTES = 1 << 20  # the most of a /v1/models answer read
VERSION_BYTES = 4096  # the most of a /version answer read
REFUSED = ("http-400", "http-422")
#: the probe's bound: a server that never ends a stream costs at most this, not the run's whole budget
PROBE_TIMEOUT_S = 30.0
#: the probe asks for this many tokens (at most the run's output length) with ignore_eos / min_tokens
PROBE_TOKENS = 8


@dataclass(frozen=True)
class Discovery:
    """The target to measure and how it was settled (for the result's notes and details)."""

    target: Target
    kind: str
    model_from: str  # "--served-model" or "GET /v1/models"
    mode: str  # "exact" (forced lengths verified), "unverified" (sent, not verified), "standard"
    probe: str  # what the probe saw, or why there was none
    identity: dict[str, Any] = field(default_factory=dict)  # what the server says it is

    @property
    def model_shown(self) -> str:
        """The model id as the result shows it: a local path reduced to its last part."""
        return shown_model(self.target.model)

    def to_dict(self) -> dict[str, Any]:
        return {
            "url": self.target.url,
            "model": self.model_shown,
            "api": self.target.api,
            "stream": self.target.stream,
            "server_kind": self.kind,
            "server": self.identity,
            "model_from": self.model_from,
            "mode": self.mode,
            "probe": self.probe,
        }

    def note(self) -> str:
        """The target, its model, kind and identity, and how output lengths are asked for (a message)."""
        if self.mode == "exact":
            how = Msg("serving.lengths.exact")
        elif self.mode == "unverified":
            how = Msg("serving.lengths.unverified")
        else:
            how = Msg("serving.lengths.standard")
        said = ", ".join(f"{k} {v}" for k, v in self.identity.items())
        return Msg(
            "serving.target",
            url=printable(self.target.url),
            model=printable(self.model_shown),
            model_from=printable(self.model_from),
            kind=self.kind,
            who=printable(said) if said else Msg("serving.identity_unsaid"),
            how=how,
            probe=self.probe,
        )


def shown_model(model: str) -> str:
    """A model id that is a local path (absolute, relative or ~) reduced to its last part; a hub id
    (org/name) is kept."""
    if model.startswith(("/", "./", "../", "~")) or "\\" in model:
        return PurePath(model.replace("\\", "/")).name or model
    return model


def _headers() -> dict[str, str]:
    key = api_key()
    return {"Authorization": f"Bearer {key}"} if key else {}


def list_models(target: Target, identity: dict[str, Any] | None = None) -> tuple[list[str], tuple[str, ...]]:
    """The ids `GET /v1/models` lists, and the same-origin redirects taken to read them; SpecError
    (exit 2) when it cannot be read. Through the project's one bounded GET (httpget): one deadline for
    the whole exchange (target.timeout_s), MODELS_BYTES at most, http.client's cap on header lines,
    redirects to another origin refused. Into `identity`: the `Server` header and the models' `owned_by`."""
    url = target.base + "/models"
    why = ""
    try:
        answer = httpget.get(url, deadline_s=target.timeout_s, max_bytes=MODELS_BYTES, headers=_headers())
    except FetchError as exc:
        why = str(exc)
    else:
        if identity is not None and answer.server:
            identity["server_header"] = printable(answer.server)
        if answer.status != 200:
            why = f"HTTP {answer.status}: {answer.body[:ERROR_BODY_BYTES].decode('utf-8', 'replace')}"
        else:
            try:
                doc = json.loads(answer.body.decode("utf-8", "replace"))
            except (ValueError, RecursionError) as exc:  # a deeply nested answer is not a model list
                why = f"not JSON ({type(exc).__name__})"
            else:
                data = doc.get("data") if isinstance(doc, dict) else None
                if isinstance(data, list):
                    models = [m for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]
                    owners = {printable(str(m["owned_by"])[:80]) for m in models if m.get("owned_by")}
                    if identity is not None and owners:
                        identity["owned_by"] = ", ".join(sorted(owners))
                    if models:
                        return [m["id"] for m in models], answer.redirects
                why = "no model ids in its answer"
    raise SpecError(
        "served_model", None, f"--served-model NAME (GET {printable(url)} failed: {printable(why)})"
    )


def _version(target: Target, identity: dict[str, Any]) -> None:
    """`GET /version` (vLLM, SGLang: {"version": ...}) through the bounded GET, where the server has
    one; nothing otherwise."""
    root = target.base[: -len("/v1")]
    try:
        answer = httpget.get(
            root + "/version", deadline_s=target.timeout_s, max_bytes=VERSION_BYTES, headers=_headers()
        )
        doc = json.loads(answer.body.decode("utf-8", "replace")) if answer.status == 200 else None
    except (FetchError, ValueError, RecursionError):
        return
    if isinstance(doc, dict) and isinstance(doc.get("version"), str | int | float):
        identity["version"] = printable(str(doc["version"])[:80])


async def _probe(session: Any, target: Target, tokens: int, counter: Any) -> tuple[str, str]:
    """(mode, what the probe saw): ask `tokens` tokens with ignore_eos / min_tokens and check the
    answer's length (the server's usage, else `counter` on the text); a 400/422 is retried without
    the extensions, so a request the server refuses anyway (a wrong model name) is not read as
    "extensions refused"; a 429 is said as such."""
    trial = replace(target, exact_lengths=True, continuous_usage=target.stream)
    rec = RequestRecord(scheduled=time.perf_counter(), prompt_tokens=4)
    await send_one(session, trial, rec, tokens, salt="probe")
    if rec.error is None and counter is not None:
        from aiworkbook.serving.tokencount import count_tokens

        count_tokens([rec], counter)
    if rec.error is None:
        got = rec.tokens
        if got is None:
            return "unverified", Msg("probe.no_count", tokens=tokens, chunks=len(rec.chunks))
        if got < tokens:
            return "standard", Msg("probe.stopped_early", tokens=tokens, got=got, counted=rec.tokens_from)
        return "exact", Msg("probe.exact", tokens=tokens, got=got, counted=rec.tokens_from)
    if rec.error == "http-429":
        return "standard", Msg("probe.rate_limited", detail=rec.detail[:100])
    if rec.error in REFUSED:
        plain = RequestRecord(scheduled=time.perf_counter(), prompt_tokens=4)
        await send_one(session, target, plain, 1, salt="probe-plain")
        if plain.error is None:
            return "standard", Msg("probe.extensions_refused", error=rec.error, detail=rec.detail[:120])
        return "standard", Msg("probe.request_refused", error=plain.error, detail=plain.detail[:120])
    return "standard", Msg("probe.inconclusive", error=rec.error, detail=rec.detail[:120])


async def discover(
    url: str,
    *,
    model: str | None = None,
    api: str = "completions",
    kind: str = "auto",
    timeout_s: float | None = None,
    connect_timeout_s: float | None = None,
    stream: bool = True,
    probe_tokens: int = PROBE_TOKENS,
    counter: Any = None,
) -> Discovery:
    """The model (given, or the one `GET /v1/models` lists), what the server says it is, and the
    request mode (see the module). The probe is bounded by PROBE_TIMEOUT_S."""
    import aiohttp

    if kind not in SERVER_KINDS:
        raise SpecError("server_kind", kind, ", ".join(SERVER_KINDS))
    kw: dict[str, Any] = {"api": api, "stream": stream}
    kw["timeout_s"] = min(timeout_s or PROBE_TIMEOUT_S, PROBE_TIMEOUT_S)
    if connect_timeout_s is not None:
        kw["connect_timeout_s"] = connect_timeout_s
    target = Target(url, model or "default", **kw)
    identity: dict[str, Any] = {}
    async with aiohttp.ClientSession(timeout=target.client_timeout()) as session:
        model_from = "--served-model"
        if not model:
            ids, moved = await asyncio.to_thread(list_models, target, identity)
            if len(ids) > 1:
                raise SpecError("served_model", None, "--served-model with one of: " + ", ".join(ids[:20]))
            target, model_from = replace(target, model=ids[0]), "GET /v1/models"
            if moved:
                model_from += f" (redirected to {moved[-1]})"
        else:
            with contextlib.suppress(SpecError):  # only what it says of itself: the name was given
                await asyncio.to_thread(list_models, target, identity)
        await asyncio.to_thread(_version, target, identity)
        if kind != "auto":
            mode = "exact" if kind in EXTENSION_KINDS else "standard"
            probe: str = Msg("probe.none", kind=kind)
        else:
            mode, probe = await _probe(session, target, max(2, probe_tokens), counter)
    sent = mode in ("exact", "unverified")
    target = replace(target, exact_lengths=sent, continuous_usage=sent and stream)
    return Discovery(target, kind, model_from, mode, probe, identity)


#: discover in a fresh event loop, with discover's signature
discover_sync = synced(discover)
