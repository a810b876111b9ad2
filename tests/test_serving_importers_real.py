"""The importers on files the real tools wrote (tools/peer_results.py: GuideLLM and `vllm bench serve`
against the planted-delay stand-in, first token after 50 ms, then a token every 5 ms), each checked
against the tool's own statistics and per-request samples in the same file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from aiworkbook.serving.importers import import_results

DATA = Path(__file__).parent / "data"
GUIDELLM = DATA / "guidellm_0.8.1_report.json"
VLLM = DATA / "vllm_0.34.0_bench_serve.jsonl"
PLANTED_ITL_S = 0.005


def _meta(path: Path) -> dict:
    return json.loads(Path(f"{path}.meta.json").read_text())


def test_files_say_which_tool_wrote_them():
    for path, tool in ((GUIDELLM, "guidellm"), (VLLM, "vllm bench serve")):
        meta = _meta(path)
        assert meta["tool"].startswith(tool) and meta["version"] in path.name
        assert meta["command"] and "127.0.0.1" in meta["command"]


def test_guidellm_real_report_against_its_own_statistics():
    doc = json.loads(GUIDELLM.read_text())
    r = import_results(GUIDELLM)
    rows = r.details["sweep"]
    assert r.details["source"]["format"] == "guidellm"
    assert [x["load"] for x in rows] == [float(b["config"]["strategy"]["streams"]) for b in doc["benchmarks"]]
    assert any("counts from each request's send" in n for n in r.notes)
    for row, b in zip(rows, doc["benchmarks"], strict=True):
        m, reqs = b["metrics"], b["requests"]
        ok = reqs["successful"]
        # TTFT percentiles: GuideLLM's own, in seconds
        ttft = m["time_to_first_token_ms"]["successful"]["percentiles"]
        for p in (50, 95, 99):
            assert row[f"p{p}_ttft_s"] == pytest.approx(ttft[f"p{p}"] / 1e3)
        # its median is one of the samples (numpy's of an even count is between the middle two)
        median = np.median([q["time_to_first_token_ms"] for q in ok]) / 1e3
        assert row["p50_ttft_s"] == pytest.approx(median, rel=0.01)
        # per request, from GuideLLM's own clock readings: TTFT from the send (request_start), not the
        # scheduled start; inter_token_latency_ms is the gap between tokens (first to last token over
        # tokens - 1); time_per_output_token_ms is send to last token over tokens, TTFT included
        for q in ok:
            t, n = q["timings"], q["output_tokens"]
            assert q["time_to_first_token_ms"] == pytest.approx(
                (t["first_token_iteration"] - t["request_start"]) * 1e3
            )
            gap_s = (t["last_token_iteration"] - t["first_token_iteration"]) / (n - 1)
            assert q["inter_token_latency_ms"] == pytest.approx(gap_s * 1e3)
            whole_s = t["last_token_iteration"] - t["request_start"]
            assert q["time_per_output_token_ms"] == pytest.approx(whole_s * 1e3 / n)
            assert t["targeted_start"] <= t["request_start"]
        itl = m["inter_token_latency_ms"]["successful"]["percentiles"]
        for p in (50, 95, 99):
            assert row[f"p{p}_tpot_s"] == pytest.approx(itl[f"p{p}"] / 1e3)
        tpot_with_ttft = m["time_per_output_token_ms"]["successful"]["percentiles"]["p50"] / 1e3
        assert tpot_with_ttft > 1.3 * row["p50_tpot_s"]  # what the importer read before: TTFT inside
        assert row["p50_tpot_s"] == pytest.approx(PLANTED_ITL_S, rel=0.15)
        # output tokens/s: the successful requests' tokens over the benchmark's duration
        tokens = sum(q["output_tokens"] for q in ok)
        assert tokens == m["output_token_count"]["successful"]["total_sum"]
        assert row["throughput_tok_s"] == pytest.approx(tokens / b["duration"])
        assert row["throughput_tok_s"] != pytest.approx(m["output_tokens_per_second"]["successful"]["median"])
        # request counts and errors
        made = b["scheduler_metrics"]["requests_made"]
        assert row["n"] == len(ok) == made["successful"] == m["request_totals"]["successful"]
        assert row["errors"] == {"errored": len(reqs["errored"]), "incomplete": len(reqs["incomplete"])}
        assert row["request_throughput"] == pytest.approx(len(ok) / b["duration"])


def test_vllm_real_result_against_its_own_statistics():
    docs = [json.loads(line) for line in VLLM.read_text().splitlines() if line.strip()]
    r = import_results(VLLM)
    rows = r.details["sweep"]
    assert r.details["source"]["format"] == "vllm"
    assert [x["load"] for x in rows] == [float(d["max_concurrency"]) for d in docs]
    for row, d in zip(rows, docs, strict=True):
        # TTFT percentiles recomputed from the raw ttfts agree with vLLM's own
        assert row["p50_ttft_s"] == pytest.approx(d["median_ttft_ms"] / 1e3)
        assert row["p99_ttft_s"] == pytest.approx(d["p99_ttft_ms"] / 1e3)
        # TPOT as the gap between tokens: the request's ITLs over its tokens - 1, which is vLLM's TPOT
        # ((E2E - TTFT) / (tokens - 1))
        for lat, ttft, itls, out in zip(d["latencies"], d["ttfts"], d["itls"], d["output_lens"], strict=True):
            assert sum(itls) / (out - 1) == pytest.approx((lat - ttft) / (out - 1), rel=0.02)
        assert row["p50_tpot_s"] == pytest.approx(d["median_tpot_ms"] / 1e3)
        assert row["p99_tpot_s"] == pytest.approx(d["p99_tpot_ms"] / 1e3)
        assert row["p50_tpot_s"] == pytest.approx(PLANTED_ITL_S, rel=0.15)
        # output tokens/s: tokens over the run's duration
        assert sum(d["output_lens"]) == d["total_output_tokens"]
        assert row["throughput_tok_s"] == pytest.approx(d["total_output_tokens"] / d["duration"])
        # request counts and errors
        assert row["n"] == d["completed"] == sum(1 for e in d["errors"] if not e)
        assert row["errors"] == {"failed": d["failed"]} and d["failed"] == sum(1 for e in d["errors"] if e)
