"""Serving benchmark (CPU): the load generator's own overhead, and continuous vs static batching.

1. Harness overhead: a fixed-delay stand-in server (in a child process, so the client's event loop
   has its own interpreter) answers every request after a planted 50 ms; the measured TTFT minus the
   planted delay is what the client, HTTP and the server's timer add. Bar: p50 < 1 ms at 64
   concurrent streams. Reference: the same at 1 stream, same run.
2. Continuous vs static batching: the embedded server with tiny-llama (batched torch decode) at
   closed-loop concurrency 16, output lengths uniform in 32 +- 90 %. Bar: continuous >= 1.5x static
   output tokens/s at equal or better p95 TTFT. Reference: static batching, same run, same load.
Timings on a shared machine are noisy; the ratios are what to read.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np

PLANTED_S = 0.05
_CHILD = """
import sys
from aiworkbook.serving.server import FixedDelay, ServerThread, make_app
s = ServerThread(make_app("stand-in", fixed=FixedDelay(ttft_s={ttft}, itl_s=0.005))).start()
print(s.url, flush=True)
sys.stdin.read()
s.stop()
"""


def _overhead(url: str, streams: int, requests: int) -> tuple[float, int]:
    from aiworkbook.serving.client import Load, Target, run_load_sync

    recs = run_load_sync(
        Target(url, "stand-in"),
        # one token per request (TTFT is the figure); streams staggered over the 50 ms service time
        Load(requests=requests, concurrency=streams, output_tokens=1, warmup=4, ramp_s=0.05),
    )
    ttft = [r.ttft_s - PLANTED_S for r in recs if r.ok and not r.warmup]
    return float(np.median(ttft)), len(ttft)


def _batching(sched: str) -> dict:
    from aiworkbook.serving.client import Load, Target, run_load_sync
    from aiworkbook.serving.embedded import build_engine, embedded_server
    from aiworkbook.serving.metrics import summarize_run

    eng = build_engine("tiny-llama", backend="torch", scheduler=sched, max_batch=16)
    load = Load(
        requests=160,
        concurrency=16,
        prompt_tokens=32,
        output_tokens=32,
        length_dist="uniform",
        length_spread=0.9,
        warmup=2,
        seed=1,
    )
    with embedded_server(eng) as srv:
        sm = summarize_run(run_load_sync(Target(srv.url, "tiny-llama"), load))
    return sm


def run() -> list[dict]:
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD.format(ttft=PLANTED_S)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = child.stdout.readline().strip()
        one, n1 = _overhead(url, 1, 32)
        many, n64 = _overhead(url, 64, 512)
    finally:
        child.stdin.close()
        child.wait(timeout=20)
    rows = [
        {
            "name": "harness overhead, p50 TTFT - planted, 64 streams",
            "value": many * 1e3,
            "unit": "ms",
            "reference": one * 1e3,
            "ratio": many / one if one > 0 else None,
            "note": f"reference: 1 stream; planted {PLANTED_S * 1e3:.0f} ms; n={n64}/{n1}; bar: value < 1 ms",
        }
    ]
    static, cont = _batching("static"), _batching("continuous")
    ratio = cont["output_throughput_tok_s"] / static["output_throughput_tok_s"]
    rows.append(
        {
            "name": "continuous vs static batching, tok/s, conc 16",
            "value": cont["output_throughput_tok_s"],
            "unit": "tok/s",
            "reference": static["output_throughput_tok_s"],
            "ratio": ratio,
            "note": "tiny-llama torch, out 32+-90 %; bar: ratio >= 1.5",
        }
    )
    rows.append(
        {
            "name": "continuous vs static batching, p95 TTFT, conc 16",
            "value": cont["ttft_s"]["p95"] * 1e3,
            "unit": "ms",
            "reference": static["ttft_s"]["p95"] * 1e3,
            "ratio": cont["ttft_s"]["p95"] / static["ttft_s"]["p95"],
            "note": f"bar: ratio <= 1 (equal or better); n={cont['ttft_s']['n']}/{static['ttft_s']['n']}",
        }
    )
    return rows


if __name__ == "__main__":
    for r in run():
        print(r)
