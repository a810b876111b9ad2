"""Per-request timings and the run's latency metrics, with vLLM's and MLPerf LoadGen's definitions.

Every latency counts from the request's *scheduled* arrival (no coordinated omission); the queue
time (scheduled -> actually sent) is reported apart. TTFT = first content chunk - scheduled;
TPOT = (E2E - TTFT) / (output tokens - 1); ITL per token (a chunk carrying n tokens splits its gap
into n equal parts); percentiles over the pooled raw samples, never averaged percentiles.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

PERCENTILES = (50, 90, 95, 99)


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

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.chunks)

    @property
    def tokens(self) -> int:
        """Output tokens: the server's usage count when it sent one, else the tokens seen in chunks."""
        return self.usage_tokens if self.usage_tokens is not None else sum(n for _, n in self.chunks)

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
        return (self.e2e_s - self.ttft_s) / (n - 1) if n > 1 else None

    def itls(self) -> list[float]:
        """Per-token inter-token latencies: each chunk's gap divided by the tokens it carried."""
        out: list[float] = []
        for (t0, _), (t1, n) in zip(self.chunks, self.chunks[1:], strict=False):
            n = max(1, n)
            out.extend([(t1 - t0) / n] * n)
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
    out_tokens = sum(r.tokens for r in ok)
    in_tokens = sum(r.prompt_tokens for r in ok)
    tpots = [t for r in ok if (t := r.tpot_s) is not None]
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
        "output_tokens": out_tokens,
        "request_throughput": per_s(len(ok)),
        "output_throughput_tok_s": per_s(out_tokens),
        "total_throughput_tok_s": per_s(out_tokens + in_tokens),
        "goodput_req_s": per_s(len(good)) if (slo_ttft_s or slo_tpot_s) else None,
        "slo": {"ttft_s": slo_ttft_s, "tpot_s": slo_tpot_s},
        "ttft_s": percentiles([r.ttft_s for r in ok], min_n),
        "tpot_s": percentiles(tpots, min_n),
        "itl_s": percentiles([x for r in ok for x in r.itls()], min_n),
        "e2e_s": percentiles([r.e2e_s for r in ok], min_n),
        "queue_s": percentiles([r.queue_s for r in recs if r.sent], min_n),
        "prompt_tokens": spread([r.prompt_tokens for r in recs]),
        "output_tokens_per_request": spread([r.tokens for r in ok]),
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
    "output_tokens", "usage_tokens", "chunks", "error", "detail", "excluded", "flag",
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
            "ttft_s": r.ttft_s if r.chunks else None,
            "tpot_s": r.tpot_s if r.ok else None,
            "e2e_s": r.e2e_s if r.end else None,
            "prompt_tokens": r.prompt_tokens,
            "output_tokens": r.tokens,
            "usage_tokens": r.usage_tokens,
            "chunks": len(r.chunks),
            "error": r.error or "",
            "detail": r.detail,
            "excluded": r.excluded,
            "flag": r.flag,
        }
        for i, r in enumerate(recs)
    ]


def sweep_row(load: float, summary: dict[str, Any]) -> dict[str, Any]:
    """One row of details['sweep'] (the keys charts.latency_chart reads), plus counts and errors."""
    t, p = summary["ttft_s"], summary["tpot_s"]
    return {
        "load": load,
        "p50_ttft_s": t["p50"],
        "p95_ttft_s": t["p95"],
        "p99_ttft_s": t["p99"],
        "p50_tpot_s": p["p50"],
        "p95_tpot_s": p["p95"],
        "p99_tpot_s": p["p99"],
        "throughput_tok_s": summary["output_throughput_tok_s"],
        "request_throughput": summary["request_throughput"],
        "goodput_req_s": summary["goodput_req_s"],
        "p99_e2e_s": summary["e2e_s"]["p99"],
        "p95_queue_s": summary["queue_s"]["p95"],
        "n": t["n"],
        "requests": summary["requests"],
        "errors": summary["errors"],
    }
