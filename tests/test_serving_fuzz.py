"""Property-based fuzzing of the embedded server's request bodies (hypothesis): random JSON with wrong
types, nesting, huge numbers, unicode and missing fields, for /v1/completions and /v1/chat/completions,
streaming and not, against the real aiohttp app on 127.0.0.1 with the torch tiny-llama behind it.

Every answer is a 2xx (a stream that ends with [DONE], or a JSON completion) or a 4xx with a JSON error
naming a field; never a 5xx, never a record at WARNING or above nor a traceback in the server's log.
AIWORKBOOK_FUZZ_EXAMPLES sets the examples per test (default 60; `max_examples`, bounded deadline).
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serving_logs import loud, post, server_records

from aiworkbook.serving.embedded import build_engine, embedded_server

EXAMPLES = int(os.environ.get("AIWORKBOOK_FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=10_000,  # ms per example: the longest valid answer is 127 tokens of tiny-llama
    database=None,  # nothing written into the checkout
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# any JSON value: unicode (surrogates included, escaped by json.dumps), huge and non-finite numbers
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(alphabet=st.characters(codec=None), max_size=40),
)
_json = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=20,
)
_tokens = st.one_of(st.integers(-3, 12), st.integers(120, 140), st.integers(2**20, 2**70), _json)
_text = st.one_of(st.text(max_size=60), st.text(alphabet=st.characters(codec=None), max_size=60))


def _fields(chat: bool) -> st.SearchStrategy[dict[str, Any]]:
    """Bodies near the real ones: each field present or not, of the right type or any JSON value."""
    message = st.fixed_dictionaries(
        {},
        optional={
            "role": st.one_of(st.sampled_from(["user", "system", "assistant"]), _json),
            "content": st.one_of(
                _text,
                st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": _text}), max_size=3),
                _json,
            ),
        },
    )
    prompt = (
        {"messages": st.one_of(st.lists(message, max_size=3), _json)}
        if chat
        else {"prompt": st.one_of(_text, st.lists(st.one_of(_text, st.integers(0, 1000)), max_size=4), _json)}
    )
    return st.fixed_dictionaries(
        {},
        optional={
            **prompt,
            "model": st.one_of(st.just("tiny-llama"), _json),
            "max_tokens": _tokens,
            "max_completion_tokens": _tokens,
            "stream": st.one_of(st.booleans(), _json),
            "stream_options": st.one_of(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "include_usage": st.one_of(st.booleans(), _json),
                        "continuous_usage_stats": st.one_of(st.booleans(), _json),
                    },
                ),
                _json,
            ),
            "temperature": st.one_of(st.floats(0, 2), _json),
            "n": st.one_of(st.just(1), _json),
            "stop": st.one_of(_text, st.lists(_text, max_size=3), _json),
            "ignore_eos": st.one_of(st.booleans(), _json),
            "min_tokens": st.one_of(st.integers(0, 8), _json),
        },
    )


def _valid(chat: bool) -> st.SearchStrategy[dict[str, Any]]:
    """Bodies a client may send (any unicode text), so that answers are generated too."""
    prompt = (
        {"messages": st.lists(st.fixed_dictionaries({"role": st.just("user"), "content": _text}), min_size=1)}
        if chat
        else {"prompt": _text}
    )
    usage = {"include_usage": st.booleans(), "continuous_usage_stats": st.booleans()}
    return st.fixed_dictionaries(
        prompt,
        optional={
            "max_tokens": st.integers(1, 12),
            "stream": st.booleans(),
            "stream_options": st.fixed_dictionaries({}, optional=usage),
            "temperature": st.floats(0, 2),
            "stop": _text,
        },
    )


def _bodies(chat: bool, stream: bool | None) -> st.SearchStrategy[bytes]:
    """JSON text of valid bodies, near-real bodies with any field of any JSON value (with `stream`
    forced when asked), any JSON value, deep nesting, or bytes that are not JSON."""
    fields = st.one_of(_valid(chat), _fields(chat))
    if stream is not None:
        fields = fields.map(lambda d: {**d, "stream": stream})
    as_json = st.one_of(fields, _json).map(lambda v: json.dumps(v).encode())
    deep = st.integers(50, 5000).map(lambda n: b'{"prompt": ' + b"[" * n + b"]" * n + b"}")
    return st.one_of(as_json, as_json, as_json, deep, st.binary(max_size=64))


@pytest.fixture(scope="module")
def server():
    """The torch tiny-llama on 127.0.0.1 with an 8-block pool (128 tokens), and the server's log."""
    eng = build_engine("tiny-llama", max_batch=4, kv_budget_bytes=8 * 32 * 1024)
    counts: dict[str, int] = {}
    with server_records() as records, embedded_server(eng) as srv:
        yield srv.url, eng, records, counts
    print(f"\nfuzz answers by status: {dict(sorted(counts.items()))}")  # noqa: T201 (shown with -s)


def _check(server, path: str, raw: bytes) -> None:
    url, eng, records, counts = server
    status, ctype, body = post(url + path, raw)
    counts[str(status)] = counts.get(str(status), 0) + 1
    assert 200 <= status < 500, (status, raw[:200], body[:300])
    if status >= 400:
        err = json.loads(body)["error"]
        assert err["code"] == status and err["message"] and (err["param"] is None or err["param"])
    elif ctype.startswith("text/event-stream"):
        events = [ln[6:] for ln in body.decode().split("\n") if ln.startswith("data: ")]
        assert events[-1] == "[DONE]" and all("error" not in json.loads(e) for e in events[:-1])
    else:
        doc = json.loads(body)
        assert doc["usage"]["completion_tokens"] >= 1
    assert not loud(records), loud(records)
    assert eng.error == ""


@pytest.mark.parametrize("stream", [True, False, None], ids=["stream", "no-stream", "any"])
@pytest.mark.parametrize("path", ["/v1/completions", "/v1/chat/completions"])
def test_fuzzed_bodies_never_get_a_5xx_or_a_traceback(server, path, stream):
    chat = "chat" in path

    @FUZZ
    @given(raw=_bodies(chat, stream))
    def run(raw: bytes) -> None:
        _check(server, path, raw)

    run()
    _, eng, _, counts = server
    st_ = eng.stats()
    assert st_["kv_blocks_used"] == 0 and st_["running"] == 0 and st_["waiting"] == 0
