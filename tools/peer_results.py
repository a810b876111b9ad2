"""Result files written by the real peers, for the importers' tests: GuideLLM and vLLM's benchmark
client (`vllm bench serve`) run against the planted-delay stand-in (benchmarks/bench_serving.py's
child: first token 50 ms after the handler's entry, then one token every 5 ms) on 127.0.0.1, and their
result files go to tests/data/, trimmed to what aiworkbook/serving/importers.py reads plus the tool's
own statistics the tests check it against, with the tool, its version and the command beside each
(`<file>.meta.json`).

    python tools/peer_results.py --setup        # once: makes .venv-peers (about 2 GB, torch included)
    python tools/peer_results.py [--out tests/data] [--requests 40]

The peers live in their own venv (`.venv-peers`, ignored by git), never in the project's, exactly as
tools/peers-lock.txt pins it (tools/peers_lock.py writes it: GuideLLM with its dependencies and the
few packages vLLM's benchmark client imports, VLLM_CLIENT_DEPS, found by running it until no import
failed, resolved under vLLM's own requirements; vLLM's wheel without its engine's dependencies: the
client is plain Python). Both need a tokenizer: a word-level one is built locally (no hub
download), in which the stand-in's " tok" is one token.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GUIDELLM = "guidellm==0.8.1"
VLLM = "vllm==0.34.0"
#: what `vllm.benchmarks.serve` imports beyond torch, numpy and transformers (GuideLLM brings those)
VLLM_CLIENT_DEPS = (
    "aiohttp pybase64 pillow msgspec psutil pyzmq urllib3 requests cachetools cbor2 cloudpickle uvloop "
    "py-cpuinfo prometheus_client llguidance xgrammar"
).split()
STREAMS = (1, 8)
PROMPT_TOKENS, OUTPUT_TOKENS = 32, 16

_TOKENIZER = """
import sys
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
vocab = {"[UNK]": 0, "</s>": 1, "tok": 2, **{f"w{i}": 3 + i for i in range(997)}}
tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", eos_token="</s>").save_pretrained(sys.argv[1])
"""

# `vllm bench serve` is vllm.entrypoints.cli; that module imports the server (fastapi, ...): this is
# the same parser and main without it (vllm/entrypoints/cli/benchmark/serve.py does just this).
_VLLM_BENCH = """
import sys
from vllm.benchmarks.serve import add_cli_args, main
from vllm.utils.argparse_utils import FlexibleArgumentParser
parser = FlexibleArgumentParser(prog="vllm bench serve")
add_cli_args(parser)
main(parser.parse_args(sys.argv[1:]))
"""


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def setup(venv: Path) -> None:
    """The peers' venv, exactly as tools/peers-lock.txt pins it (tools/peers_lock.py: GuideLLM with its
    dependencies and vLLM's client's imports, at versions vLLM allows; vLLM's wheel without its engine's
    own dependencies), each file checked against its sha256; an existing venv is brought to the lock."""
    from peers_lock import LOCK

    py = venv_python(venv)
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(py), "-m", "pip", "install", "-q", "--no-deps", "--require-hashes", "-r", str(LOCK)]
    subprocess.run(pip, check=True)


def version(py: Path, dist: str) -> str:
    out = subprocess.run(
        [str(py), "-c", f"from importlib.metadata import version; print(version({dist!r}))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


class StandIn:
    """benchmarks/bench_serving.py's stand-in in a child process of this interpreter (the project's)."""

    def __enter__(self) -> str:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from bench_serving import _CHILD, PLANTED_S

        self.child = subprocess.Popen(
            [sys.executable, "-c", _CHILD.format(ttft=PLANTED_S)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        assert self.child.stdout is not None
        return self.child.stdout.readline().strip()

    def __exit__(self, *exc: object) -> None:
        assert self.child.stdin is not None
        self.child.stdin.close()
        self.child.wait(timeout=20)


def _run(cmd: list[str], log: Path, timeout: float) -> None:
    with log.open("w") as f:
        rc = subprocess.run(
            cmd, stdout=f, stderr=subprocess.STDOUT, timeout=timeout, cwd=log.parent
        ).returncode
    if rc:
        sys.exit(f"{shlex.join(cmd[:3])}... exited {rc}; its output: {log}")


def _shown(cmd: list[str], url: str, tok: str, work: Path) -> str:
    """The command as recorded: the stand-in's port and the temporary folders made generic."""
    text = shlex.join(cmd[1:]).replace(url, "http://127.0.0.1:PORT").replace(tok, "TOKENIZER_DIR")
    return text.replace(str(work), "OUT_DIR")


# ---- GuideLLM -------------------------------------------------------------------------------------
_G_METRICS = (
    "request_totals",
    "time_to_first_token_ms",
    "inter_token_latency_ms",
    "time_per_output_token_ms",
    "output_token_count",
    "output_tokens_per_second",
    "requests_per_second",
    "request_latency",
)
_G_REQUEST = (
    "request_start_time",
    "request_end_time",
    "request_latency",
    "request_dispatch_delay",
    "time_to_first_token_ms",
    "inter_token_latency_ms",
    "time_per_output_token_ms",
    "output_tokens",
)
#: GuideLLM's clock readings per request (info.timings), from which its per-request figures are made
_G_TIMINGS = (
    "targeted_start",
    "request_start",
    "first_token_iteration",
    "last_token_iteration",
    "last_request_iteration",
    "request_end",
)
_G_DROP = ("pdf", "mean_ci", "percentile_cis")


def _g_request(r: dict[str, Any]) -> dict[str, Any]:
    timings = ((r.get("info") or {}).get("timings")) or {}
    return {**{k: r.get(k) for k in _G_REQUEST}, "timings": {k: timings.get(k) for k in _G_TIMINGS}}


def trim_guidellm(doc: dict[str, Any]) -> dict[str, Any]:
    """A GuideLLM report with what the importer reads and the statistics its tests check: per benchmark
    the strategy, request counts, start/end/duration, the metrics above (no pdf or confidence
    intervals) and a few fields of each request."""

    def stats(s: Any) -> Any:
        return {k: v for k, v in s.items() if k not in _G_DROP} if isinstance(s, dict) else s

    out = []
    for b in doc["benchmarks"]:
        m = b.get("metrics") or {}
        out.append(
            {
                "type_": b.get("type_"),
                "config": {"strategy": (b.get("config") or {}).get("strategy")},
                "scheduler_metrics": {
                    "requests_made": (b.get("scheduler_metrics") or {}).get("requests_made")
                },
                "start_time": b.get("start_time"),
                "end_time": b.get("end_time"),
                "duration": b.get("duration"),
                "metrics": {
                    k: {st: stats(v) for st, v in m[k].items()} if isinstance(m.get(k), dict) else m.get(k)
                    for k in _G_METRICS
                },
                "requests": {
                    st: [_g_request(r) for r in (b.get("requests") or {}).get(st) or []]
                    for st in ("successful", "errored", "incomplete")
                },
            }
        )
    return {"metadata": doc.get("metadata"), "benchmarks": out}


def guidellm_command(py: Path, url: str, tok: str, profile: list[str], requests: int, raw: Path) -> list[str]:
    """`guidellm run` against the stand-in: `profile` is what follows --profile, `requests` per
    benchmark, synthetic prompts and outputs of PROMPT_TOKENS and OUTPUT_TOKENS, JSON to `raw`."""
    return [
        str(py.parent / "guidellm"),
        "run",
        "--backend",
        f"kind=openai_http,target={url},model=stand-in",
        "--profile",
        *profile,
        "--constraint",
        f"kind=max_requests,count={requests}",
        "--tokenizer",
        f"kind=huggingface_auto,model={tok}",
        "--data",
        f"kind=synthetic_text,prompt_tokens={PROMPT_TOKENS},output_tokens={OUTPUT_TOKENS}",
        "--output",
        f"kind=json,path={raw}",
    ]


def run_guidellm(py: Path, url: str, tok: str, out: Path, requests: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="aiwb-guidellm-"))
    raw = work / "benchmarks.json"
    profile = ["kind=concurrent", "--override", "profile.streams", ",".join(map(str, STREAMS))]
    cmd = guidellm_command(py, url, tok, profile, requests, raw) + ["--disable-console-interactive"]
    _run(cmd, work / "guidellm.log", timeout=900)
    ver = version(py, "guidellm")
    dest = out / f"guidellm_{ver}_report.json"
    dest.write_text(json.dumps(trim_guidellm(json.loads(raw.read_text())), indent=1) + "\n")
    _meta(dest, "guidellm", ver, "guidellm " + _shown(cmd, url, tok, work))


# ---- vLLM's client --------------------------------------------------------------------------------
def trim_vllm(doc: dict[str, Any]) -> dict[str, Any]:
    """A `vllm bench serve --save-detailed` result without the generated texts (the rest is read or
    checked)."""
    return {k: v for k, v in doc.items() if k != "generated_texts"}


def run_vllm(py: Path, url: str, tok: str, out: Path, requests: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="aiwb-vllm-bench-"))
    ver = version(py, "vllm")
    name = "result.jsonl"
    shown = []
    for c in STREAMS:  # one result per concurrency, appended: the JSON lines --append-result writes
        cmd = [
            str(py),
            "-c",
            _VLLM_BENCH,
            "--backend",
            "openai",
            "--base-url",
            url,
            "--model",
            "stand-in",
            "--tokenizer",
            tok,
            "--dataset-name",
            "random",
            "--random-input-len",
            str(PROMPT_TOKENS),
            "--random-output-len",
            str(OUTPUT_TOKENS),
            "--ignore-eos",
            "--num-prompts",
            str(requests),
            "--max-concurrency",
            str(c),
            "--append-result",
            "--save-detailed",
            "--result-dir",
            str(work),
            "--result-filename",
            name,
            "--disable-tqdm",
        ]
        _run(cmd, work / f"vllm-{c}.log", timeout=600)
        shown.append("vllm bench serve " + _shown(cmd[2:], url, tok, work))
    lines = [json.loads(x) for x in (work / name).read_text().splitlines() if x.strip()]
    dest = out / f"vllm_{ver}_bench_serve.jsonl"
    dest.write_text("".join(json.dumps(trim_vllm(d)) + "\n" for d in lines))
    _meta(dest, "vllm bench serve (vllm.benchmarks.serve)", ver, " && ".join(shown))


def _meta(dest: Path, tool: str, ver: str, command: str) -> None:
    meta = {
        "tool": tool,
        "version": ver,
        "command": command,
        "target": "benchmarks/bench_serving.py's stand-in: first token 50 ms after the handler's entry, "
        "then one token every 5 ms; 127.0.0.1",
        "written_by": "tools/peer_results.py (trimmed to what aiworkbook/serving/importers.py reads)",
    }
    Path(f"{dest}.meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"wrote {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--venv", type=Path, default=ROOT / ".venv-peers")
    ap.add_argument("--setup", action="store_true", help="make or update the peers' venv first")
    ap.add_argument("--out", type=Path, default=ROOT / "tests" / "data")
    ap.add_argument("--requests", type=int, default=40, help="requests per concurrency (1 and 8)")
    ap.add_argument("--only", choices=("guidellm", "vllm"), help="run one tool only")
    a = ap.parse_args(argv)
    if a.setup:
        setup(a.venv)
    py = venv_python(a.venv)
    if not py.exists():
        sys.exit(f"no peers venv at {a.venv}: run with --setup first")
    tok = tempfile.mkdtemp(prefix="aiwb-tokenizer-")
    subprocess.run([str(py), "-c", _TOKENIZER, tok], check=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the tokenizer is local; nothing to fetch
    with StandIn() as url:
        if a.only in (None, "guidellm"):
            run_guidellm(py, url, tok, a.out, a.requests)
        if a.only in (None, "vllm"):
            run_vllm(py, url, tok, a.out, a.requests)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
