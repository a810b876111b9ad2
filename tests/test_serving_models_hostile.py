"""The serving client's reads outside the streaming request (`GET /v1/models` when no model is named,
the embedded server's /kv and the stand-in's /timings) against a hostile server on loopback (a fake: a
real vLLM or `transformers serve` never does these things, which is the point): a body without end, a
declared 100 GB body, headers without end, a drip of one byte every 2 s, redirects to another origin
and to ftp://, a deeply nested answer, control characters in a model id. Each ends within the deadline
with one clear exit-2 sentence (or None for fetch_json), never an internal error, never unbounded memory."""

from __future__ import annotations

import json
import time
import tracemalloc

import pytest
from hostile_http import Handler, servers

from aiworkbook.errors import SpecError
from aiworkbook.serving.client import fetch_json
from aiworkbook.serving.discover import MODELS_BYTES, discover_sync

pytestmark = pytest.mark.timeout(60)


def _models(*ids: str) -> bytes:
    return json.dumps({"object": "list", "data": [{"id": i} for i in ids]}).encode()


class _Hostile(Handler):
    def _forever(self, piece: bytes, pause_s: float = 0.0) -> None:
        try:
            for _ in range(1_000_000):
                self.wfile.write(piece)
                self.wfile.flush()
                if pause_s:
                    time.sleep(pause_s)
        except OSError:  # the client hung up: what a bounded client does
            return

    def do_GET(self):  # noqa: N802
        m = self.server.mode  # type: ignore[attr-defined]
        if m == "endless-body":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()  # no length: the body ends when the connection does
            return self._forever(b'{"data": [' + b" " * 65536)
        if m == "declared-huge":
            self.send_response(200)
            self.send_header("Content-Length", str(100 * 2**30))
            self.end_headers()
            return self._forever(b" " * 65536)
        if m == "endless-headers":
            self.wfile.write(b"HTTP/1.1 200 OK\r\n")
            return self._forever(b"X-More: " + b"y" * 1000 + b"\r\n")
        if m == "drip":
            self.wfile.write(b"HTTP/1.1 200 OK\r\n")
            return self._forever(b"X", pause_s=2.0)
        if m == "drip-body":
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            return self._forever(b" ", pause_s=2.0)
        if m in ("redirect-host", "redirect-ftp", "redirect-same"):
            if m == "redirect-same" and self.path.startswith("/moved"):
                return self._send(_models("moved-model"))
            where = {
                "redirect-host": self.server.other + self.path,  # type: ignore[attr-defined]
                "redirect-ftp": "ftp://127.0.0.1/v1/models",
                "redirect-same": "/moved" + self.path,
            }[m]
            return self._send(b"", 302, {"Location": where})
        if m == "nested":
            return self._send(b"[" * 200_000 + b"]" * 200_000)
        if m == "escapes":
            return self._send(_models("\x1b]0;pwned\x07\x1b[2Jmodel\nforged", "b"))
        if m == "error-text":
            return self._send(b"\x1b[2J" + b"e" * 100_000, 500)
        return self._send(_models("only-model"))


@pytest.fixture
def server():
    yield from servers(_Hostile)


def _refused(url: str, deadline_s: float = 1.0) -> str:
    """discover's exit-2 sentence for `url`'s model list, checked to come within the deadline's reach."""
    t0 = time.monotonic()
    with pytest.raises(SpecError) as err:
        discover_sync(url, timeout_s=deadline_s, kind="vllm")
    assert time.monotonic() - t0 < 15  # generous: the bound is the deadline, not a per-read timeout
    text = str(err.value)
    assert "served_model" in text and "\x1b" not in text and "\n" not in text
    return text


@pytest.mark.parametrize("mode", ["drip", "drip-body"])
def test_a_drip_ends_at_the_whole_request_deadline(server, mode):
    assert "deadline" in _refused(server(mode))


def test_a_body_without_end_or_declared_huge_is_cut_at_the_cap_without_holding_it(server):
    tracemalloc.start()
    try:
        endless = _refused(server("endless-body"), deadline_s=20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert f"over {MODELS_BYTES:,} bytes" in endless
    assert peak < 16 * MODELS_BYTES  # the cap, not what the server would send
    assert "107,374,182,400 bytes" in _refused(server("declared-huge"), deadline_s=20)


def test_headers_without_end_are_refused(server):
    assert "headers" in _refused(server("endless-headers"), deadline_s=20)


def test_a_redirect_to_another_origin_or_scheme_is_refused_and_same_origin_is_reported(server):
    other = server("ok")  # another port on the same host: another origin
    assert "another origin" in _refused(server("redirect-host", other=other), deadline_s=5)
    assert "another origin" in _refused(server("redirect-ftp"), deadline_s=5)
    found = discover_sync(server("redirect-same"), timeout_s=5, kind="vllm")
    assert found.target.model == "moved-model"
    assert (
        found.model_from.startswith("GET /v1/models (redirected to ")
        and "/moved/v1/models" in found.model_from
    )


def test_a_deeply_nested_answer_is_not_a_model_list(server):
    assert "not JSON" in _refused(server("nested"), deadline_s=5)


def test_control_characters_in_ids_and_error_texts_are_escaped(server):
    text = _refused(server("escapes"), deadline_s=5)  # two ids: the user must choose, shown escaped
    assert "\\x1b]0;pwned\\x07" in text and "\\nforged" in text
    text = _refused(server("error-text"), deadline_s=5)
    assert "HTTP 500" in text and len(text) < 1500


def test_the_cli_says_it_in_one_line_with_exit_2(server, capsys):
    from aiworkbook.cli import main

    rc = main(
        ["prove", "serving", "--target", server("redirect-ftp"), "--sweep", "1", "--requests", "1"]
        + ["--server-kind", "vllm"]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "another origin" in err and "internal error" not in err and "Traceback" not in err


@pytest.mark.parametrize("mode", ["drip", "endless-body", "redirect-host", "nested"])
def test_fetch_json_is_none_on_a_hostile_answer_within_its_deadline(server, mode):
    url = server(mode, other=server("ok")) + "/kv"
    t0 = time.monotonic()
    assert fetch_json(url, timeout_s=1.0) is None
    assert time.monotonic() - t0 < 15


def test_fetch_json_reads_a_plain_answer(server):
    assert fetch_json(server("ok") + "/kv") == {"object": "list", "data": [{"id": "only-model"}]}
