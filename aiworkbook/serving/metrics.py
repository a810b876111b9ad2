"""Per-request timings and the run's latency metrics, with vLLM's and MLPerf LoadGen's definitions.

Every latency counts from the request's *scheduled* arrival (no coordinated omission); the queue
time (scheduled -> actually sent) is reported apart. TTFT = first content chunk - scheduled;
TPOT = (E2E - TTFT) / (output tokens - 1); ITL = the gap between two streamed chunks, divided into
equal parts when the chunk's tokens are known (per-chunk usage, or the tokenizer), else one sample
per gap (chunks, not tokens); percentiles over the pooled raw samples, never averaged percentiles.

Tokens are tokens only when counted: the server's usage (checked against the stream) or the streamed
text tokenised (`--tokenizer`). A request counted only in chunks is kept out of TPOT, output tokens
and tokens/s; its chunks are reported as chunks.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

PERCENTILES = (50, 90, 95, 99)
#: the percentiles each metric shows in the table, the sweep's rows (JSON) and --sweep-csv
SHOWN = (50, 90, 99)
METRICS = ("ttft", "itl", "tpot", "e2e", "cpu")  # cpu: the client's CPU time per request


@dataclass
class RequestRecord:
    """One request: when it was scheduled, sent, when each content chunk arrived and how many tokens
    it carried, and how it ended (`error` is None on success, else a kind such as 'http-429')."""

    scheduled: float
    sent: float = 0.0
    chunks: list[tuple[float, int]] = field(default_factory=list)  # (arrival time, tokens in chunk)
    end: float = 0.0
    prompt_tokens: int = 0
    output_tokens: int = 0
    usage_tokens: int | None = None
    error: str | None = None
    detail: str = ""
    warmup: bool = False
    excluded: str = ""  # "warm-up" / "cool-down": inside Load.warmup_s / cooldown_s, left out like warm-ups
    chars: int = 0  # characters of content streamed
    flag: str = ""  # why the server's usage count was refused (client.check_usage), else ""
    # what each chunk's n is: "usage" (per-chunk usage), "tokenizer" (the streamed text tokenised),
    # "" (1 per chunk: chunks, not tokens)
    chunk_tokens: str = ""
    texts: list[str] = field(default_factory=list)  # each content chunk's text (for the tokenizer)
    max_tokens: int = 0  # the output length asked
    streamed: bool = True  # False: one answer at the end (--no-stream): no TTFT, ITL or TPOT
    cpu_s: float = 0.0  # this client's CPU time spent in this request's own steps (serving.cpumeter)

    def add_cpu(self, seconds: float) -> None:
        self.cpu_s += seconds

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.chunks)

    @property
    def tokens_from(self) -> str:
        """What the output count is: "usage" (the server's, checked), "tokenizer" (the streamed text
        tokenised) or "chunks" (chunks, not tokens)."""
        if self.usage_tokens is not None:
            return "usage"
        return self.chunk_tokens or "chunks"

    @property
    def tokens(self) -> int | None:
        """Output tokens: the server's usage count, else the tokenizer's; None when only chunks were
        counted (chunks are not tokens)."""
        if self.usage_tokens is not None:
            return self.usage_tokens
        return sum(n for _, n in self.chunks) if self.chunk_tokens else None

    @property
    def queue_s(self) -> float:
        return max(0.0, self.sent - self.scheduled)

    @property
    def ttft_s(self) -> float:
        return self.chunks[0][0] - self.scheduled

    @property
    def e2e_s(self) -> float:
        return self.end - self.scheduled

    @property
    def tpot_s(self) -> float | None:
        n = self.tokens
        return (self.e2e_s - self.ttft_s) / (n - 1) if n is not None and n > 1 else None

    def itls(self) -> list[float]:
        """Inter-token latencies: each gap between chunks divided by the tokens the later chunk
        carried when they are known (`chunk_tokens`), else one sample per gap. A chunk that ended no
        token (part of one, by the tokenizer's count) adds its gap to the next."""
        out: list[float] = []
        prev: float | None = None
        for t, n in self.chunks:
            if self.chunk_tokens and n <= 0:  # part of a token (the tokenizer's count): no token ended
                continue
            k = n if self.chunk_tokens else 1
            if prev is not None:
                out.extend([(t - prev) / k] * k)
            prev = t
        return out


def percentiles(values: list[float], min_n: int = 1) -> dict[str, Any]:
    """p50/p90/p95/p99, mean and the sample count over pooled raw samples; the count always, the
    figures None from fewer than `min_n` samples (a p99 of 2 samples is no p99)."""
    if len(values) < max(1, min_n):
        return {"n": len(values), "mean": None, **{f"p{p}": None for p in PERCENTILES}}
    x = np.asarray(values, dtype=float)
    q = np.percentile(x, PERCENTILES)
    return {
        "n": int(x.size),
        "mean": float(x.mean()),
        **{f"p{p}": float(v) for p, v in zip(PERCENTILES, q, strict=True)},
    }


def summarize_run(
    records: list[RequestRecord],
    *,
    slo_ttft_s: float | None = None,
    slo_tpot_s: float | None = None,
    duration_s: float | None = None,
    min_n: int = 1,
) -> dict[str, Any]:
    """The run's metrics over measured (non-warm-up) requests. Duration: first scheduled arrival to
    the last response end, unless given. Goodput = requests meeting every SLO given, per second.
    Percentiles from fewer than `min_n` samples are None (their count is kept)."""
    recs = [r for r in records if not r.warmup and not r.excluded]
    ok = [r for r in recs if r.ok]
    errors = Counter(r.error or "no-content" for r in recs if not r.ok)
    if duration_s is None:
        ends = [r.end for r in recs if r.end]
        duration_s = (max(ends) - min(r.scheduled for r in recs)) if recs and ends else 0.0
    counted = [r for r in ok if r.tokens is not None]
    out_tokens = sum(r.tokens or 0 for r in counted)
    in_tokens = sum(r.prompt_tokens for r in ok)
    streamed = [r for r in ok if r.streamed]  # TTFT, ITL and TPOT need a stream
    tpots = [t for r in streamed if (t := r.tpot_s) is not None]
    # ITL per token from the requests whose chunks' tokens are known; per chunk gap only when none are
    per_token = [r for r in streamed if r.chunk_tokens]
    itl_basis = "per token" if per_token else "per chunk gap (chunks, not tokens)"
    all_counted = len(counted) == len(ok)
    good = [
        r
        for r in ok
        if (slo_ttft_s is None or r.ttft_s <= slo_ttft_s)
        and (slo_tpot_s is None or (r.tpot_s is None or r.tpot_s <= slo_tpot_s))
    ]
    per_s = (lambda v: v / duration_s) if duration_s > 0 else (lambda v: None)
    first_bad = next((r for r in recs if not r.ok), None)
    return {
        "requests": len(recs),
        "completed": len(ok),
        "errors": dict(sorted(errors.items())),
        "rejected": int(errors.get("http-429", 0)),
        "first_error": f"{first_bad.error or 'no-content'}: {first_bad.detail}"[:240] if first_bad else None,
        "duration_s": duration_s,
        "input_tokens": in_tokens,
        "output_tokens": out_tokens if all_counted else None,
        "output_chunks": sum(len(r.chunks) for r in ok),
        "tokens_from": dict(sorted(Counter(r.tokens_from for r in ok).items())),
        "request_throughput": per_s(len(ok)),
        "output_throughput_tok_s": per_s(out_tokens) if all_counted else None,
        "output_throughput_chunks_s": per_s(sum(len(r.chunks) for r in ok)),
        "total_throughput_tok_s": per_s(out_tokens + in_tokens) if all_counted else None,
        "goodput_req_s": per_s(len(good)) if (slo_ttft_s or slo_tpot_s) else None,
        "slo": {"ttft_s": slo_ttft_s, "tpot_s": slo_tpot_s},
        "ttft_s": percentiles([r.ttft_s for r in streamed], min_n),
        "tpot_s": percentiles(tpots, min_n),
        "itl_s": percentiles([x for r in (per_token or streamed) for x in r.itls()], min_n),
        "itl_basis": itl_basis,
        "e2e_s": percentiles([r.e2e_s for r in ok], min_n),
        "cpu_s": percentiles([r.cpu_s for r in ok], min_n),  # per completed request, each measured
        "queue_s": percentiles([r.queue_s for r in recs if r.sent], min_n),
        "prompt_tokens": spread([r.prompt_tokens for r in ok]),  # completed only: a failed one has no usage
        "output_tokens_per_request": spread([r.tokens or 0 for r in counted]),
        # counted outputs shorter than asked: a server that stops early (EOS, or forced lengths ignored)
        "stopped_early": sum(1 for r in counted if r.max_tokens and (r.tokens or 0) < r.max_tokens),
        "excluded": dict(Counter(r.excluded for r in records if r.excluded and not r.warmup)),
        "usage_refused": sum(1 for r in recs if r.flag),
        "first_usage_refused": next((r.flag for r in recs if r.flag), None),
        "stopped": next((r.detail for r in recs if r.error == "cancelled" and r.detail), None),
    }


def spread(values: list[int]) -> dict[str, Any]:
    """Mean, standard deviation, min and max of token counts (GuideLLM's prompt-length figures)."""
    if not values:
        return {"n": 0, "mean": None, "stdev": None, "min": None, "max": None}
    x = np.asarray(values, dtype=float)
    return {
        "n": int(x.size),
        "mean": float(x.mean()),
        "stdev": float(x.std()),
        "min": int(x.min()),
        "max": int(x.max()),
    }


SAMPLE_FIELDS = (
    "load", "index", "scheduled_s", "queue_s", "ttft_s", "tpot_s", "e2e_s", "prompt_tokens",
    "output_tokens", "tokens_from", "usage_tokens", "chunks", "error", "detail", "excluded", "flag", "cpu_s",
)  # fmt: skip


def samples(records: list[RequestRecord], load: float) -> list[dict[str, Any]]:
    """One row per measured request (warm-ups left out, excluded ones kept and marked), times in
    seconds from the first scheduled arrival: what `--samples-csv` writes."""
    recs = [r for r in records if not r.warmup]
    t0 = min((r.scheduled for r in recs), default=0.0)
    return [
        {
            "load": load,
            "index": i,
            "scheduled_s": r.scheduled - t0,
            "queue_s": r.queue_s if r.sent else None,
            "ttft_s": r.ttft_s if r.chunks and r.streamed else None,
            "tpot_s": r.tpot_s if r.ok and r.streamed else None,
            "e2e_s": r.e2e_s if r.end else None,
            "prompt_tokens": r.prompt_tokens,
            "output_tokens": r.tokens,
            "tokens_from": r.tokens_from,
            "usage_tokens": r.usage_tokens,
            "chunks": len(r.chunks),
            "error": r.error or "",
            "detail": r.detail,
            "excluded": r.excluded,
            "flag": r.flag,
            "cpu_s": r.cpu_s if r.sent else None,
        }
        for i, r in enumerate(recs)
    ]


def sweep_row(load: float, summary: dict[str, Any]) -> dict[str, Any]:
    """One row of details['sweep'] (the keys charts.latency_chart reads): TTFT, ITL, TPOT, E2E and CPU at
    p50/p90/p99 (and p95 for TTFT, TPOT and queue), each metric's sample count beside it
    (`n_ttft`...; `n` is TTFT's), throughput, counts and errors."""
    row: dict[str, Any] = {"load": load}
    for m in METRICS:
        p = summary[f"{m}_s"]
        row.update({f"p{q}_{m}_s": p[f"p{q}"] for q in SHOWN})
        row[f"n_{m}"] = p["n"]
    t, p = summary["ttft_s"], summary["tpot_s"]
    row.update(
        p95_ttft_s=t["p95"],
        p95_tpot_s=p["p95"],
        throughput_tok_s=summary["output_throughput_tok_s"],
        throughput_chunks_s=summary.get("output_throughput_chunks_s"),
        tokens_from=summary.get("tokens_from", {}),
        itl_basis=summary.get("itl_basis", "per token"),
        request_throughput=summary["request_throughput"],
        goodput_req_s=summary["goodput_req_s"],
        p95_queue_s=summary["queue_s"]["p95"],
        n=t["n"],
        requests=summary["requests"],
        errors=summary["errors"],
    )
    return row


#: --sweep-csv's columns: the load, each metric's shown percentiles with its count, throughput
SWEEP_FIELDS = (
    "load",
    *(k for m in METRICS for k in (*(f"p{q}_{m}_s" for q in SHOWN), f"n_{m}")),
    "itl_basis",
    "throughput_tok_s",
    "throughput_chunks_s",
    "tokens_from",
    "request_throughput",
    "goodput_req_s",
    "requests",
    "errors",
    "invalid",
)


def sweep_csv_row(row: dict[str, Any]) -> dict[str, Any]:
    """A sweep row as --sweep-csv writes it: dicts (errors, tokens_from) as "kind n; kind n"."""
    out = {k: row.get(k) for k in SWEEP_FIELDS}
    for k in ("errors", "tokens_from"):
        v = out[k]
        out[k] = "; ".join(f"{a} {b}" for a, b in v.items()) if isinstance(v, dict) else v
    return out
