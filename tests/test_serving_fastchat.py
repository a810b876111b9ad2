"""The serving proof against FastChat 0.2.36's OpenAI-compatible server (tests/fastchat_server.py), a
second real server beside `transformers serve` (tests/test_serving_real_server.py), and the issue's
headline case on a real stack: Debian's nginx rate-limiting FastChat, 9 of 10 requests answered 429.

What FastChat does that `transformers serve` does not, each checked below: it accepts unknown fields
(vLLM's `ignore_eos`, `min_tokens`) without a word, so the probe, counting 6 of 6 tokens with the
tokenizer, calls the lengths forced (this model has no EOS, so every answer is as long as asked; the
probe cannot see that FastChat ignores both, and says only what it measured); it streams several tokens per chunk (its worker
sends every `stream_interval` = 2 tokens) and no usage in a stream, so chunks are not tokens; its
non-streamed usage counts `completion_tokens` as its generation loop's last index, one fewer than the
tokens it wrote (6 words for max_tokens 6, usage 5).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastchat_server import build_model, fastchat, nginx_limit

from aiworkbook.proofs import registry

OUTPUT_TOKENS = 6
RUN = dict(
    prompt_tokens=8,
    output_tokens=OUTPUT_TOKENS,
    request_timeout_s=60,
    max_duration_s=120,
    context_sweep=False,
)

pytestmark = pytest.mark.timeout(240)  # three processes to start (torch's import) and stop


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_model(tmp_path_factory.mktemp("fastchat") / "tiny-gpt2")


@pytest.fixture(scope="module")
def server(model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with fastchat(model, tmp_path_factory.mktemp("fastchat-logs")) as url:
        yield url


def _rows(r) -> list[dict]:
    return r.details["sweep"]


def test_its_streams_measured_with_the_served_models_tokenizer(server: str, model: Path):
    """FastChat streams no usage: --tokenizer (the model's own folder) counts every request's tokens,
    so TPOT and tokens/s rest on tokens; every request of each point succeeds."""
    r = registry.run(
        "serving", target=server, sweep=[2], requests=3, min_requests=3, tokenizer=str(model), **RUN
    )
    assert r.verdict == "info", r.notes
    assert r.details["target"]["mode"] == "exact"  # the probe counted 6 of 6 with the tokenizer
    assert (
        r.details["target"]["model"] == model.name and r.details["target"]["server"]["owned_by"] == "fastchat"
    )
    for row in _rows(r):
        assert row["requests"] == 3 and row["n"] == 3 and row["errors"] == {}, row
        assert row["tokens_from"] == {"tokenizer": 3} and row["n_tpot"] == 3 and row["p50_tpot_s"] > 0
        assert row["throughput_tok_s"] > 0 and row["n_itl"] == 3 * (OUTPUT_TOKENS - 1)  # per token
        assert row["output_tokens_per_request"]["mean"] == OUTPUT_TOKENS and row["stopped_early"] == 0
        assert row["n_cpu"] == 3 and row["p50_cpu_s"] > 0  # the client's CPU, each request measured


def test_its_chat_api(server: str, model: Path):
    """Chat, through FastChat's conversation template (`raw`: the message as it is): the same counts."""
    r = registry.run(
        "serving",
        target=server,
        api="chat",
        sweep=[1],
        requests=3,
        min_requests=3,
        tokenizer=str(model),
        **RUN,
    )
    (row,) = _rows(r)
    assert row["requests"] == 3 and row["errors"] == {} and row["tokens_from"] == {"tokenizer": 3}
    assert row["output_tokens_per_request"]["mean"] == OUTPUT_TOKENS and row["n_tpot"] == 3


def test_without_a_tokenizer_its_chunks_are_not_called_tokens(server: str):
    """The issue's FastChat case (16 tokens in 9 chunks counted as 16 chunks' worth of tokens): no
    usage and no tokenizer, so chunks are counted as chunks and kept out of TPOT and tokens/s."""
    r = registry.run("serving", target=server, sweep=[1], requests=3, min_requests=3, **RUN)
    (row,) = _rows(r)
    assert row["requests"] == 3 and row["errors"] == {} and row["n"] == 3
    assert row["tokens_from"] == {"chunks": 3} and row["throughput_tok_s"] is None and row["n_tpot"] == 0
    assert row["itl_basis"] == "per chunk gap (chunks, not tokens)"
    assert 0 < row["throughput_chunks_s"]


def test_no_stream_takes_its_usage(server: str):
    """--no-stream: one JSON answer with usage per request; the proof counts the server's usage as
    given (FastChat 0.2.36's is one short of the text it wrote, a plausible count, so it is kept)."""
    r = registry.run("serving", target=server, sweep=[2], requests=4, min_requests=4, stream=False, **RUN)
    (row,) = _rows(r)
    assert row["requests"] == 4 and row["errors"] == {} and row["n_e2e"] == 4 and row["n_ttft"] == 0
    assert (
        row["tokens_from"] == {"usage": 4} and row["output_tokens_per_request"]["mean"] == OUTPUT_TOKENS - 1
    )
    assert row["throughput_tok_s"] > 0


def test_nine_of_ten_refused_by_nginx_fail_the_run(server: str, model: Path, tmp_path: Path, capsys):
    """The issue's headline on real servers: nginx's limit_req lets 2 POSTs through (the warm-up and the
    first measured request) and answers 429 to the other 9 of 10. The run is invalid and exits 1."""
    from aiworkbook.cli import main

    (logs := tmp_path / "nginx").mkdir()
    with nginx_limit(server, logs, allowed=2) as url:
        args = ["prove", "serving", "--target", url, "--served-model", model.name, "--server-kind", "openai"]
        args += ["--sweep", "1", "--requests", "10", "--prompt-tokens", "8", "--output-tokens", "4"]
        code = main([*args, "--no-context", "--json", str(tmp_path / "r.json")])
    text = capsys.readouterr().out
    assert code == 1 and "[invalid] serving on remote" in text, text
    row = json.loads((tmp_path / "r.json").read_text())["details"]["sweep"][0]
    assert row["requests"] == 10 and row["errors"] == {"http-429": 9} and row["n"] == 1
    assert "9 of 10 requests failed (http-429 9), more than the max error rate 5%" in row["invalid"]
    assert row["p50_ttft_s"] is None  # no percentile from 1 sample
    assert (logs / "nginx-access.log").read_text().count('" 429 ') == 9  # nginx's own count
