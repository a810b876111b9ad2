"""The serving proof against a server no one here wrote: `transformers serve` on the CPU, with and
without its continuous batching, serving a tiny random-weight Llama and a word-level tokenizer built
in the test (no hub download: HF_HUB_OFFLINE=1). It refuses unknown request fields (422 for vLLM's
`ignore_eos`) and ends its streams without `data: [DONE]`, so the proof must discover its model,
fall back to standard fields, and count every request as a success whose tokens match the usage the
server reports. One server per parametrisation, on a free loopback port, stopped at the module's end.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiworkbook.proofs import registry
from aiworkbook.serving.client import Load, run_load_sync
from aiworkbook.serving.discover import discover_sync

START_S = 180.0  # the most a server may take to answer GET /v1/models (imports on a busy 2-core VM)
OUTPUT_TOKENS = 6


def _build_model(folder: Path) -> None:
    """A 2-layer Llama with random weights and a WordLevel tokenizer whose vocabulary covers the load
    generator's prompts ("r<salt> hello hello ..."). No EOS anywhere: every answer runs to max_tokens."""
    import torch
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    words = ["<unk>", "<pad>"] + [f"w{i}" for i in range(190)] + ["hello"] + [f"r{i}" for i in range(64)]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.WordPiece()  # words joined by spaces
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>")
    fast.chat_template = "{% for m in messages %}{{ m['content'] }} {% endfor %}"
    fast.save_pretrained(folder)
    cfg = transformers.LlamaConfig(
        hidden_size=64,
        intermediate_size=128,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_hidden_layers=2,
        vocab_size=len(words),
        max_position_embeddings=256,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=1,
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg)
    model.generation_config.eos_token_id = None
    model.save_pretrained(folder)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny-llama-hf")
    _build_model(folder)
    return folder


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _up(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/v1/models", timeout=2) as r:  # noqa: S310 (loopback)
            return bool(json.loads(r.read())["data"])
    except (OSError, ValueError, KeyError):
        return False


@pytest.fixture(scope="module", params=[False, True], ids=["plain", "continuous-batching"])
def server(request: pytest.FixtureRequest, model_dir: Path, tmp_path_factory) -> Iterator[str]:
    port = _free_port()
    cmd = [sys.executable, "-c", "from transformers.cli.transformers import main; main()", "serve"]
    cmd += [str(model_dir), "--host", "127.0.0.1", "--port", str(port), "--device", "cpu"]
    if request.param:  # a small paged cache: the default sizing probes memory for tens of seconds
        cmd += ["--continuous-batching", "--cb-num-blocks", "64", "--cb-block-size", "16"]
        cmd += ["--cb-max-batch-tokens", "256"]
    env = os.environ | {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    log = tmp_path_factory.mktemp("serve-log") / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)  # noqa: S603
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + START_S
            while not _up(url):
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"transformers serve did not start: {log.read_text()[-2000:]}")
                time.sleep(0.5)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=20)


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_every_request_succeeds_and_counts_the_servers_tokens(server: str, api: str):
    found = discover_sync(server, api=api, timeout_s=60)
    assert found.model_from == "GET /v1/models" and found.target.model.endswith("tiny-llama-hf0")
    assert found.mode == "standard" and "http-422" in found.probe  # ignore_eos refused
    recs = run_load_sync(
        found.target, Load(requests=4, concurrency=2, prompt_tokens=8, output_tokens=OUTPUT_TOKENS, warmup=0)
    )
    for r in recs:
        assert r.ok, (r.error, r.detail)
        # The server's own usage counts every token. Content chunks can be fewer: transformers' streamer
        # sends nothing for a token that decodes to no text yet (a skipped special token, a partial UTF-8
        # sequence: DecodeStream.step returns None, transformers/cli/serving/utils.py DirectStreamer.put),
        # and a random-weight model emits such tokens at random. So the client takes usage, not chunks.
        assert r.usage_tokens == OUTPUT_TOKENS and 1 <= sum(n for _, n in r.chunks) <= r.usage_tokens
        assert r.tokens == OUTPUT_TOKENS and r.tpot_s is not None and r.tpot_s > 0


@pytest.mark.parametrize("api", ["completions"])
def test_the_tokenizer_counts_what_the_server_streamed(server: str, model_dir: Path, api: str):
    """--tokenizer on the served model's own folder, against the server's usage: the streamed text
    retokenised gives at most the server's count (a special token decodes to no text) and every token
    sits in a chunk that carried text."""
    from aiworkbook.serving.tokencount import count_tokens, load_tokenizer

    found = discover_sync(server, api=api, timeout_s=60)
    recs = run_load_sync(
        found.target, Load(requests=3, concurrency=1, prompt_tokens=8, output_tokens=OUTPUT_TOKENS, warmup=0)
    )
    tok = load_tokenizer(str(model_dir))
    for r in recs:
        usage, r.usage_tokens = r.usage_tokens, None  # as if the server had sent none
        assert r.ok and count_tokens([r], tok) == 1 and r.tokens_from == "tokenizer"
        assert r.tokens is not None and 1 <= r.tokens <= (usage or 0) and all(n >= 0 for _, n in r.chunks)


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_the_serving_proof_runs_against_it(server: str, api: str):
    r = registry.run(
        "serving",
        target=server,
        api=api,
        sweep=[1, 2],
        requests=3,
        min_requests=3,
        prompt_tokens=8,
        output_tokens=OUTPUT_TOKENS,
        request_timeout_s=60,
        max_duration_s=240,
    )
    assert r.verdict == "info" and r.details["target"]["mode"] == "standard"
    for row in r.details["sweep"]:
        assert row["errors"] == {} and row["n"] == 3 and row["p50_tpot_s"] > 0
    assert any(f"mean {OUTPUT_TOKENS:.1f} of {OUTPUT_TOKENS} asked" in n for n in r.notes)
