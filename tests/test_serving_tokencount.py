"""Output tokens counted from the streamed text with the served model's tokenizer (`--tokenizer`) when
the server sends no usage: a real `tokenizers` tokenizer saved to disk, a loopback server that streams
6 words in 3 chunks (2 + 1 + 3) without usage. Without the tokenizer the output is chunks, not
tokens: no TPOT and no tok/s from it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aiohttp import web

from aiworkbook.errors import SpecError
from aiworkbook.proofs import registry
from aiworkbook.serving.metrics import RequestRecord
from aiworkbook.serving.server import ServerThread
from aiworkbook.serving.tokencount import count_tokens, load_tokenizer

WORDS = ["<unk>", "alpha", "beta", "gamma", "delta", "eps", "zeta"]
CHUNKS = [" alpha beta", " gamma", " delta eps zeta"]  # 2 + 1 + 3 words


def _tokenizer(folder: Path) -> Path:
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    path = folder / "tokenizer.json"
    tok.save(str(path))
    return path


def _server() -> ServerThread:
    async def completions(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for text in CHUNKS:
            await resp.write(b'data: {"choices":[{"text":"%s"}]}\n\n' % text.encode())
            await asyncio.sleep(0.002)
        await resp.write(b'data: {"choices":[{"text":"","finish_reason":"length"}]}\n\ndata: [DONE]\n\n')
        await resp.write_eof()
        return resp

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "m"}]})

    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    app.router.add_get("/v1/models", models)
    return ServerThread(app)


def test_each_token_goes_to_the_chunk_its_last_character_came_in(tmp_path):
    tok = load_tokenizer(str(_tokenizer(tmp_path)))
    # "alpha" split over two chunks: the first carries part of a token (0), the second ends it
    r = RequestRecord(scheduled=0.0, chunks=[(1.0, 1), (1.1, 1), (1.4, 1)], end=1.4)
    r.texts = [" alp", "ha beta", " gamma"]
    assert count_tokens([r], tok) == 1
    assert [n for _, n in r.chunks] == [0, 2, 1] and r.tokens == 3 and r.tokens_from == "tokenizer"
    assert r.itls() == pytest.approx([0.3])  # 1.1 -> 1.4: the only gap between token-ending chunks
    counted = RequestRecord(scheduled=0.0, chunks=[(1.0, 1)], usage_tokens=5, texts=["alpha"])
    assert count_tokens([counted], tok) == 0 and counted.tokens == 5  # the server's usage is kept


@pytest.mark.timeout(120)
def test_the_proof_counts_tokens_with_the_tokenizer_and_says_chunks_without(tmp_path):
    path = _tokenizer(tmp_path)
    kw = dict(served_model="m", server_kind="openai", sweep=[1], requests=10, output_tokens=6, warmup_s=0)
    with _server() as s:
        chunks = registry.run("serving", target=s.url, **kw)
        tokens = registry.run("serving", target=s.url, tokenizer=str(tmp_path), **kw)  # the folder
    row = chunks.details["sweep"][0]
    assert row["tokens_from"] == {"chunks": 10} and row["throughput_tok_s"] is None
    assert row["n_tpot"] == 0 and row["p50_tpot_s"] is None and row["throughput_chunks_s"] > 0
    assert row["itl_basis"].startswith("per chunk gap") and row["n_itl"] == 20  # 2 gaps x 10
    assert any("chunks, not tokens" in n for n in chunks.notes)
    row = tokens.details["sweep"][0]
    assert row["tokens_from"] == {"tokenizer": 10} and row["throughput_tok_s"] > 0
    assert row["n_tpot"] == 10 and row["itl_basis"] == "per token" and row["n_itl"] == 40  # (1 + 3) x 10
    assert any("mean 6.0 of 6 asked" in n for n in tokens.notes)
    assert any(f"with {path}" in n for n in tokens.notes)


def test_a_tokenizer_that_is_not_there_is_refused_naming_the_field(tmp_path, capsys):
    from aiworkbook.cli import main

    with pytest.raises(SpecError, match="tokenizer"):
        load_tokenizer(str(tmp_path / "missing.json"))
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{not json")
    with pytest.raises(SpecError, match="tokenizer"):
        load_tokenizer(str(bad))
    args = ["prove", "serving", "--target", "http://127.0.0.1:9", "--served-model", "m"]
    assert main([*args, "--server-kind", "openai", "--tokenizer", str(tmp_path / "nope")]) == 2
    assert "tokenizer" in capsys.readouterr().err
