"""Results other tools wrote on a user's cluster, as ProofResults (so a locked profile can hold them):
`vllm bench serve --save-result` JSON (one result per file, or JSON lines from --append-result) and
GuideLLM `benchmarks.json` reports. Each load point becomes a row of details['sweep'].

vLLM keys: `request_rate`, `max_concurrency`, `{mean,median,std,p99}_{ttft,tpot,itl,e2el}_ms` (plus
any `pNN_*_ms` from --metric-percentiles), `output_throughput`; with --save-detailed the raw `ttfts`,
`itls` and `output_lens`, from which the pooled percentiles are recomputed here. GuideLLM: per
benchmark, `metrics.<metric>.successful` statistics (`median`, `percentiles.pNN` or `pNN`), its
`duration` and request counts. Both tools count TTFT from a request's send, not from its scheduled
time as this project's load generator does (docs/serving.md); the result's notes say so. Checked on
files the tools wrote against the stand-in (tools/peer_results.py, tests/test_serving_importers_real.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeGuard

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.proofs.result import ProofResult
from aiworkbook.serving.knee import find_knee
from aiworkbook.serving.metrics import percentiles

FORMATS = ("vllm", "guidellm")


def _docs(path: Path) -> list[dict[str, Any]]:
    from aiworkbook.persist import read_text

    # a regular UTF-8 file of a bounded size (a FIFO, a device or a 100 GB file refused unread)
    text = read_text(path, what=Msg("import.file"))
    refused = SpecError("import", str(path), Msg("import.file_less_deep"))
    try:
        doc = json.loads(text)
        return doc if isinstance(doc, list) else [doc]
    except RecursionError:
        raise refused from None
    except ValueError:  # not one document (or an integer past int_max_str_digits)
        try:  # --append-result: one JSON object per line
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        except (ValueError, RecursionError):
            raise refused from None


def detect(doc: dict[str, Any]) -> str:
    if isinstance(doc.get("benchmarks"), list):
        return "guidellm"
    if any(k in doc for k in ("median_ttft_ms", "mean_ttft_ms", "ttfts")):
        return "vllm"
    raise SpecError("import", Msg("import.unknown_format"), Msg("import.formats"))


def _ms(doc: dict[str, Any], key: str) -> float | None:
    v = doc.get(key)
    return float(v) / 1e3 if isinstance(v, int | float) and not isinstance(v, bool) else None


def _vllm_row(doc: dict[str, Any]) -> dict[str, Any]:
    """One vLLM result: the load is its max concurrency, else its request rate, and both are kept
    (`concurrency`, `rate`: inf for vLLM's "all at once"); TTFT, TPOT, ITL and E2E at p50/p90/p95/p99
    where the file has them (pooled from the raw samples with --save-detailed), with their counts."""
    conc, rate = doc.get("max_concurrency"), doc.get("request_rate")
    load = conc or rate
    load = float(load) if _num(load) and load != float("inf") else None
    row: dict[str, Any] = {
        "load": load,
        "concurrency": conc if _num(conc) else None,
        "rate": float(rate) if _num(rate) else (rate if rate == "inf" else None),
        "n": doc.get("completed"),
    }
    for m, key in (("ttft", "ttft"), ("tpot", "tpot"), ("itl", "itl"), ("e2e", "e2el")):
        row[f"p50_{m}_s"] = _ms(doc, f"median_{key}_ms") or _ms(doc, f"p50_{key}_ms")
        for p in (90, 95, 99):
            row[f"p{p}_{m}_s"] = _ms(doc, f"p{p}_{key}_ms")
        if any(row[f"p{p}_{m}_s"] is not None for p in (50, 90, 99)):
            row[f"n_{m}"] = doc.get("completed") if m != "itl" else None  # ITL's sample count not written
    ttfts, itls, outs = doc.get("ttfts"), doc.get("itls"), doc.get("output_lens")
    if isinstance(ttfts, list) and ttfts:  # --save-detailed: recompute from the raw samples
        errs = doc.get("errors") or [""] * len(ttfts)
        ok = [i for i, e in enumerate(errs) if not e and i < len(ttfts)]
        _pooled(row, "ttft", percentiles([float(ttfts[i]) for i in ok]))
        row["n"] = row["n_ttft"]
        if isinstance(itls, list) and isinstance(outs, list):
            tp = [sum(itls[i]) / (outs[i] - 1) for i in ok if i < len(outs) and outs[i] > 1 and i < len(itls)]
            _pooled(row, "tpot", percentiles(tp))
            gaps = [float(x) for i in ok if i < len(itls) and isinstance(itls[i], list) for x in itls[i]]
            _pooled(row, "itl", percentiles(gaps))
    row["throughput_tok_s"] = doc.get("output_throughput")
    row["request_throughput"] = doc.get("request_throughput")
    failed = doc.get("failed")
    if not _num(failed):  # results before vLLM wrote `failed`
        failed = int(doc.get("num_prompts", 0) or 0) - int(doc.get("completed", 0) or 0)
    row["errors"] = {"failed": int(failed)}
    return row


def _pooled(row: dict[str, Any], m: str, q: dict[str, Any]) -> None:
    row.update({f"p{p}_{m}_s": q[f"p{p}"] for p in (50, 90, 95, 99)})
    row[f"n_{m}"] = q["n"]


def _gstats(metrics: dict[str, Any], name: str) -> dict[str, Any]:
    s = (metrics.get(name) or {}).get("successful")
    return s if isinstance(s, dict) else {}


def _gstat(metrics: dict[str, Any], name: str, p: int, scale: float) -> float | None:
    s = _gstats(metrics, name)
    v = (s.get("percentiles") or {}).get(f"p{p}", s.get(f"p{p}"))
    if v is None and p == 50:
        v = s.get("median")
    return float(v) * scale if _num(v) else None


def _num(v: Any) -> TypeGuard[int | float]:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _guidellm_load(b: dict[str, Any]) -> float | None:
    """Streams (concurrent) or rate (constant, poisson) of the benchmark's strategy: `config.strategy`
    in GuideLLM 0.8, `args.strategy` before; synchronous is one stream."""
    strat = (b.get("config") or {}).get("strategy") or (b.get("args") or {}).get("strategy") or {}
    if strat.get("type_") == "synchronous":
        return 1.0
    for key in ("streams", "rate", "max_concurrency"):
        if _num(strat.get(key)):
            return float(strat[key])
    rate = (b.get("config") or {}).get("rate")
    return float(rate) if _num(rate) else None


def _guidellm_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """TTFT from `time_to_first_token_ms` (GuideLLM counts it from the request's send, not its
    scheduled time); TPOT from `inter_token_latency_ms`, the gap between tokens (GuideLLM's own
    `time_per_output_token_ms` is E2E / output tokens, TTFT included); throughput as the successful
    requests' output tokens (and the requests) over the benchmark's duration, not the median of
    GuideLLM's per-interval rate series."""
    rows = []
    for b in doc["benchmarks"]:
        m = b.get("metrics") or {}
        row: dict[str, Any] = {"load": _guidellm_load(b)}
        metrics = (
            ("ttft", "time_to_first_token_ms"),
            ("itl", "inter_token_latency_ms"),  # where GuideLLM writes its ITL
            ("tpot", "inter_token_latency_ms"),  # each request's (E2E - TTFT) / (tokens - 1), per token
            ("e2e", "request_latency"),
        )
        for short, name in metrics:
            scale = 1.0 if name == "request_latency" else 1e-3  # GuideLLM's request latency is in s
            for p in (50, 90, 95, 99):
                row[f"p{p}_{short}_s"] = _gstat(m, name, p, scale)
            count = _gstats(m, name).get("count")
            row[f"n_{short}"] = int(count) if _num(count) else None
        made = (
            (b.get("scheduler_metrics") or {}).get("requests_made")
            or (b.get("run_stats") or {}).get("requests_made")
            or m.get("request_totals")
            or {}
        )
        duration, tokens = b.get("duration"), _gstats(m, "output_token_count").get("total_sum")
        ok_duration = _num(duration) and duration > 0
        row["throughput_tok_s"] = tokens / duration if ok_duration and _num(tokens) else None
        n = made.get("successful")
        row["request_throughput"] = n / duration if ok_duration and _num(n) else None
        row["n"] = n
        row["errors"] = {"errored": made.get("errored", 0), "incomplete": made.get("incomplete", 0)}
        rows.append(row)
    return rows


def _definitions(fmt: str) -> Msg:
    """How the tool that wrote the file defines its latencies, against this project's."""
    return Msg("import.definitions.vllm") if fmt == "vllm" else Msg("import.definitions.guidellm")


def import_results(path: str | Path) -> ProofResult:
    """A ProofResult (verdict 'info', device 'remote') from a vLLM or GuideLLM result file."""
    path = Path(path)
    docs = _docs(path)
    if not docs or not all(isinstance(d, dict) for d in docs):
        raise SpecError("import", str(path), Msg("import.object_per_result"))
    fmt = detect(docs[0])
    if fmt == "vllm":
        rows = [_vllm_row(d) for d in docs]
        meta = {k: docs[0].get(k) for k in ("backend", "model_id", "date", "burstiness")}
    else:
        rows = [r for d in docs for r in _guidellm_rows(d)]
        meta = {}
    rows.sort(key=lambda r: (r["load"] is None, r["load"] or 0))
    knee = find_knee([r for r in rows if r["load"] is not None], "p99_ttft_s")
    return ProofResult(
        proof="serving",
        device="remote",
        inputs={"import": str(path), "format": fmt},
        measured=None,
        unit="s",
        verdict="info",
        details={"sweep": rows, "knee": knee, "source": {"format": fmt, "path": str(path), **meta}},
        notes=[Msg("import.imported", format=fmt, points=len(rows)), _definitions(fmt)],
    )
