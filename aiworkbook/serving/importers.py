"""Results other tools wrote on a user's cluster, as ProofResults (so a locked profile can hold them):
`vllm bench serve --save-result` JSON (one result per file, or JSON lines from --append-result) and
GuideLLM `benchmarks.json` reports. Each load point becomes a row of details['sweep'].

vLLM keys: `request_rate`, `max_concurrency`, `{mean,median,std,p99}_{ttft,tpot,itl,e2el}_ms` (plus
any `pNN_*_ms` from --metric-percentiles), `output_throughput`; with --save-detailed the raw `ttfts`,
`itls` and `output_lens`, from which the pooled percentiles are recomputed here. GuideLLM: per
benchmark, `metrics.<metric>.successful` statistics (`median`, `percentiles.pNN` or `pNN`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aiworkbook.errors import SpecError
from aiworkbook.proofs.result import ProofResult
from aiworkbook.serving.knee import find_knee
from aiworkbook.serving.metrics import percentiles

FORMATS = ("vllm", "guidellm")


def _docs(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text()
    except OSError as exc:
        raise SpecError("import", str(path), f"a readable file ({exc.strerror})") from None
    try:
        doc = json.loads(text)
        return doc if isinstance(doc, list) else [doc]
    except json.JSONDecodeError:
        try:  # --append-result: one JSON object per line
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError:
            raise SpecError("import", str(path), "a JSON (or JSON lines) result file") from None


def detect(doc: dict[str, Any]) -> str:
    if isinstance(doc.get("benchmarks"), list):
        return "guidellm"
    if any(k in doc for k in ("median_ttft_ms", "mean_ttft_ms", "ttfts")):
        return "vllm"
    raise SpecError("import", "unknown format", "a `vllm bench serve` result or a GuideLLM report")


def _ms(doc: dict[str, Any], key: str) -> float | None:
    v = doc.get(key)
    return float(v) / 1e3 if isinstance(v, int | float) and not isinstance(v, bool) else None


def _vllm_row(doc: dict[str, Any]) -> dict[str, Any]:
    load = doc.get("max_concurrency") or doc.get("request_rate")
    load = float(load) if isinstance(load, int | float) and load != float("inf") else None
    row: dict[str, Any] = {"load": load, "n": doc.get("completed")}
    for m in ("ttft", "tpot"):
        row[f"p50_{m}_s"] = _ms(doc, f"median_{m}_ms") or _ms(doc, f"p50_{m}_ms")
        for p in (95, 99):
            row[f"p{p}_{m}_s"] = _ms(doc, f"p{p}_{m}_ms")
    ttfts, itls, outs = doc.get("ttfts"), doc.get("itls"), doc.get("output_lens")
    if isinstance(ttfts, list) and ttfts:  # --save-detailed: recompute from the raw samples
        errs = doc.get("errors") or [""] * len(ttfts)
        ok = [i for i, e in enumerate(errs) if not e and i < len(ttfts)]
        t = percentiles([float(ttfts[i]) for i in ok])
        row.update(p50_ttft_s=t["p50"], p95_ttft_s=t["p95"], p99_ttft_s=t["p99"], n=t["n"])
        if isinstance(itls, list) and isinstance(outs, list):
            tp = [sum(itls[i]) / (outs[i] - 1) for i in ok if i < len(outs) and outs[i] > 1 and i < len(itls)]
            q = percentiles(tp)
            row.update(p50_tpot_s=q["p50"], p95_tpot_s=q["p95"], p99_tpot_s=q["p99"])
    row["throughput_tok_s"] = doc.get("output_throughput")
    row["request_throughput"] = doc.get("request_throughput")
    row["errors"] = {"failed": int(doc.get("num_prompts", 0) or 0) - int(doc.get("completed", 0) or 0)}
    return row


def _gstat(metrics: dict[str, Any], name: str, p: int | None, scale: float) -> float | None:
    s = ((metrics.get(name) or {}).get("successful")) or {}
    v = s.get("median") if p is None else (s.get("percentiles") or {}).get(f"p{p}", s.get(f"p{p}"))
    if v is None and p == 50:
        v = s.get("median")
    return float(v) * scale if isinstance(v, int | float) else None


def _guidellm_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for b in doc["benchmarks"]:
        m = b.get("metrics") or {}
        strat = ((b.get("args") or {}).get("strategy")) or (b.get("config") or {}).get("strategy") or {}
        load = strat.get("rate") or strat.get("streams") or (b.get("config") or {}).get("rate")
        row: dict[str, Any] = {"load": float(load) if isinstance(load, int | float) else None}
        for short, name in (("ttft", "time_to_first_token_ms"), ("tpot", "time_per_output_token_ms")):
            for p in (50, 95, 99):
                row[f"p{p}_{short}_s"] = _gstat(m, name, p, 1e-3)
        row["throughput_tok_s"] = _gstat(m, "output_tokens_per_second", None, 1.0)
        row["request_throughput"] = _gstat(m, "requests_per_second", None, 1.0)
        made = ((b.get("run_stats") or {}).get("requests_made")) or (m.get("request_totals") or {})
        row["n"] = made.get("successful")
        row["errors"] = {"errored": made.get("errored", 0), "incomplete": made.get("incomplete", 0)}
        rows.append(row)
    return rows


def import_results(path: str | Path) -> ProofResult:
    """A ProofResult (verdict 'info', device 'remote') from a vLLM or GuideLLM result file."""
    path = Path(path)
    docs = _docs(path)
    if not docs or not all(isinstance(d, dict) for d in docs):
        raise SpecError("import", str(path), "a JSON object per result")
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
        notes=[
            f"imported from a {fmt} result ({len(rows)} load point{'s' if len(rows) != 1 else ''}); "
            "no estimate to compare against"
        ],
    )
