"""What a --target serves and how to ask it, settled once before a run: the model (`GET /v1/models`
when no name is given) and whether the server accepts the extensions that force exact output lengths.

vLLM and SGLang accept `ignore_eos`, `min_tokens` and `stream_options.continuous_usage_stats`;
OpenAI's API, `transformers serve` and other strict servers refuse unknown fields (HTTP 400 or 422).
With `kind="auto"` one 1-token request carrying the extensions decides: accepted, every request
carries them; refused with 400/422, the run sends standard OpenAI fields only, and TPOT and
throughput count the tokens actually produced (usage, else the chunks counted).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, replace
from typing import Any

from aiworkbook import httpget
from aiworkbook.errors import SpecError, printable
from aiworkbook.httpget import FetchError
from aiworkbook.serving.client import (
    ERROR_BODY_BYTES,
    EXTENSION_KINDS,
    SERVER_KINDS,
    Target,
    api_key,
    run_sync,
    send_one,
)
from aiworkbook.serving.metrics import RequestRecord

MODELS_BYTES = 1 << 20  # the most of a /v1/models answer read
REFUSED = ("http-400", "http-422")


@dataclass(frozen=True)
class Discovery:
    """The target to measure and how it was settled (for the result's notes and details)."""

    target: Target
    kind: str
    model_from: str  # "--served-model" or "GET /v1/models"
    mode: str  # "exact" (extensions sent) or "standard" (OpenAI fields only)
    probe: str  # what the probe saw, or why there was none

    def to_dict(self) -> dict[str, Any]:
        return {
            "url": self.target.url,
            "model": self.target.model,
            "api": self.target.api,
            "server_kind": self.kind,
            "model_from": self.model_from,
            "mode": self.mode,
            "probe": self.probe,
        }

    def note(self) -> str:
        if self.mode == "exact":
            how = "output lengths forced with ignore_eos / min_tokens"
        else:
            how = (
                "standard OpenAI fields only (exact output lengths cannot be forced): TPOT and tokens/s "
                "from the tokens actually produced (usage, else counted chunks)"
            )
        return (
            f"target {printable(self.target.url)}, model {printable(self.target.model)} "
            f"({printable(self.model_from)}), server kind "
            f"{self.kind}: {how}; probe: {self.probe}"
        )


def _headers() -> dict[str, str]:
    key = api_key()
    return {"Authorization": f"Bearer {key}"} if key else {}


def list_models(target: Target) -> tuple[list[str], tuple[str, ...]]:
    """The ids `GET /v1/models` lists, and the same-origin redirects taken to read them; SpecError
    (exit 2) when it cannot be read. Through the project's one bounded GET (httpget): one deadline for
    the whole exchange (target.timeout_s), MODELS_BYTES at most, http.client's cap on header lines,
    redirects to another origin refused."""
    url = target.base + "/models"
    why = ""
    try:
        answer = httpget.get(url, deadline_s=target.timeout_s, max_bytes=MODELS_BYTES, headers=_headers())
    except FetchError as exc:
        why = str(exc)
    else:
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
                    ids = [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]
                    if ids:
                        return ids, answer.redirects
                why = "no model ids in its answer"
    raise SpecError(
        "served_model", None, f"--served-model NAME (GET {printable(url)} failed: {printable(why)})"
    )


async def discover(
    url: str,
    *,
    model: str | None = None,
    api: str = "completions",
    kind: str = "auto",
    timeout_s: float | None = None,
    connect_timeout_s: float | None = None,
) -> Discovery:
    """The model (given, or the one `GET /v1/models` lists) and the request mode (see the module)."""
    import aiohttp

    if kind not in SERVER_KINDS:
        raise SpecError("server_kind", kind, ", ".join(SERVER_KINDS))
    kw: dict[str, Any] = {"api": api}
    if timeout_s is not None:
        kw["timeout_s"] = timeout_s
    if connect_timeout_s is not None:
        kw["connect_timeout_s"] = connect_timeout_s
    target = Target(url, model or "default", **kw)
    async with aiohttp.ClientSession(timeout=target.client_timeout()) as session:
        model_from = "--served-model"
        if not model:
            ids, moved = await asyncio.to_thread(list_models, target)
            if len(ids) > 1:
                raise SpecError("served_model", None, "--served-model with one of: " + ", ".join(ids[:20]))
            target, model_from = replace(target, model=ids[0]), "GET /v1/models"
            if moved:
                model_from += f" (redirected to {moved[-1]})"
        if kind != "auto":
            exact = kind in EXTENSION_KINDS
            probe = f"none (--server-kind {kind})"
        else:
            rec = RequestRecord(scheduled=time.perf_counter(), prompt_tokens=4)
            trial = replace(target, exact_lengths=True, continuous_usage=True)
            await send_one(session, trial, rec, 1)
            exact = rec.error is None
            if exact:
                probe = "a 1-token request with the extensions succeeded"
            elif rec.error in REFUSED:
                probe = f"extensions refused ({rec.error}: {rec.detail[:120]})"
            else:
                probe = f"inconclusive ({rec.error}: {rec.detail[:120]}); standard fields"
    target = replace(target, exact_lengths=exact, continuous_usage=exact)
    return Discovery(target, kind, model_from, "exact" if exact else "standard", probe)


def discover_sync(url: str, **kw: Any) -> Discovery:
    return run_sync(discover(url, **kw))
