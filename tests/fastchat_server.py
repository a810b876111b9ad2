"""FastChat 0.2.36's OpenAI-compatible server on loopback, for the serving proof's tests: a second real
server beside `transformers serve`, written by no one here. FastChat serves in three processes: its
controller and its model worker (fschat[model_worker] in the project's venv: torch, transformers)
and its OpenAI API server, which runs in .venv-fastchat (`make fastchat-api`, tools/fastchat-api.txt:
it writes every streamed chunk with pydantic 1's `.json(ensure_ascii=False)`, which pydantic 2
refuses, so under the project's pydantic every stream would end empty).

The model: a 2-layer GPT-2 with random weights and a word-level tokenizer built here (no hub download).
GPT-2, not Llama: FastChat reads `config.rope_scaling["factor"]`, and transformers 5 gives every
rope model a `rope_scaling` without one. No EOS token: every answer runs to max_tokens. Chat uses
FastChat's `raw` conversation template (the message as it is): its default wraps a message in a long
one-shot system prompt, hundreds of words this vocabulary maps to <unk>, after which the greedy random
model writes only <unk>, which decodes to no text.

`nginx_limit` puts Debian's nginx in front with `limit_req` (the rate limiter people put before a
model server): POSTs beyond the first `allowed` within a minute are answered 429 by nginx itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_fleet import free_port, stop, wait_for

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(os.environ.get("AIWORKBOOK_FASTCHAT_VENV", ROOT / ".venv-fastchat"))
START_S = 120.0  # the most the worker may take to register (torch's import on a busy 2-core VM)
WORDS = ["<unk>", "<pad>"] + [f"w{i}" for i in range(190)] + ["hello"] + [f"r{i}" for i in range(64)]


def build_model(folder: Path) -> Path:
    """The tiny GPT-2 and its tokenizer, saved in `folder` (its name is the served model's id)."""
    import torch
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.WordPiece()  # words joined by spaces
    transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>"
    ).save_pretrained(folder)
    cfg = transformers.GPT2Config(
        n_layer=2, n_embd=64, n_head=4, vocab_size=len(WORDS), n_positions=1024,
        bos_token_id=None, eos_token_id=None, pad_token_id=1,
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(cfg)
    model.generation_config.eos_token_id = None
    model.save_pretrained(folder)
    return folder


def _models(url: str) -> list[str]:
    try:
        with urllib.request.urlopen(url + "/v1/models", timeout=2) as r:  # noqa: S310 (loopback)
            return [m["id"] for m in json.loads(r.read())["data"]]
    except (OSError, ValueError, KeyError):
        return []


def api_python() -> Path:
    py = VENV / "bin" / "python"
    if not py.exists():
        pytest.fail(
            f"{py} is missing: `make fastchat-api` makes FastChat's API server venv (tools/fastchat-api.txt)"
        )
    return py


@contextlib.contextmanager
def fastchat(model: Path, work: Path) -> Iterator[str]:
    """FastChat's controller, model worker and OpenAI API server serving `model`; yields the API's URL.
    Every process is stopped on every path; their logs stay in `work`."""
    ctl, wrk, api = free_port(), free_port(), free_port()
    env = os.environ | {
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
        "LOGDIR": str(work),  # FastChat writes its own log files there (default: the current folder)
    }  # fmt: skip
    here = f"http://127.0.0.1:{ctl}"
    cmds = {
        "controller": [sys.executable, "-m", "fastchat.serve.controller", "--port", str(ctl)],
        "worker": [sys.executable, "-m", "fastchat.serve.model_worker", "--port", str(wrk), "--device", "cpu"]
        + [
            "--model-path",
            str(model),
            "--worker-address",
            f"http://127.0.0.1:{wrk}",
            "--conv-template",
            "raw",
        ],
        "api": [str(api_python()), "-m", "fastchat.serve.openai_api_server", "--port", str(api)],
    }
    procs: list[subprocess.Popen] = []
    try:
        for name, cmd in cmds.items():
            cmd += ["--host", "127.0.0.1"] + (["--controller-address", here] if name != "controller" else [])
            with (work / f"{name}.out").open("wb") as out:
                procs.append(subprocess.Popen(cmd, env=env, cwd=work, stdout=out, stderr=subprocess.STDOUT))  # noqa: S603
        url = f"http://127.0.0.1:{api}"

        def up() -> bool:
            if any(p.poll() is not None for p in procs):
                logs = "\n".join(f.name + ": " + f.read_text()[-1500:] for f in sorted(work.glob("*.out")))
                pytest.fail(f"FastChat stopped while starting:\n{logs}")
            return model.name in _models(url)

        wait_for(up, "FastChat's API server listing the model", timeout=START_S)
        yield url
    finally:
        for p in reversed(procs):
            stop(p)


NGINX_CONF = """
daemon off;
pid {work}/nginx.pid;
error_log {work}/nginx-error.log;
events {{ worker_connections 64; }}
http {{
    access_log {work}/nginx-access.log;
    client_body_temp_path {work}/body;
    proxy_temp_path {work}/proxy;
    fastcgi_temp_path {work}/fastcgi;
    uwsgi_temp_path {work}/uwsgi;
    scgi_temp_path {work}/scgi;
    map $request_method $limited {{ POST $binary_remote_addr; default ""; }}
    limit_req_zone $limited zone=api:1m rate=1r/m;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            limit_req zone=api burst={burst} nodelay;
            limit_req_status 429;
            proxy_pass {upstream};
            proxy_buffering off;
            proxy_http_version 1.1;
        }}
    }}
}}
"""


def nginx_binary() -> str:
    for p in ("/usr/sbin/nginx", "/usr/bin/nginx"):
        if os.access(p, os.X_OK):
            return p
    pytest.fail("nginx is missing: `make nginx` installs Debian's nginx for the rate-limited serving test")


@contextlib.contextmanager
def nginx_limit(upstream: str, work: Path, allowed: int) -> Iterator[str]:
    """Debian's nginx before `upstream`: the first `allowed` POSTs pass (one a minute, the rest as
    nginx's burst), later ones within the minute are answered 429 by nginx; GETs always pass."""
    port = free_port()
    conf = work / "nginx.conf"
    conf.write_text(NGINX_CONF.format(work=work, port=port, burst=allowed - 1, upstream=upstream))
    proc = subprocess.Popen(  # noqa: S603
        [nginx_binary(), "-p", str(work), "-c", str(conf), "-e", str(work / "nginx-error.log")],
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: proc.poll() is None and _models(url), "nginx answering", timeout=30, every=0.2)
        yield url
    finally:
        stop(proc)
