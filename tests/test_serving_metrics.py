"""Serving metrics: the definitions against hand-computed values, the knee detector, bisection."""

from __future__ import annotations

import numpy as np
import pytest

from aiworkbook.errors import SpecError
from aiworkbook.serving.arrivals import lengths, schedule
from aiworkbook.serving.knee import bisect_load, find_knee
from aiworkbook.serving.metrics import RequestRecord, percentiles, summarize_run, sweep_row


def _rec(**kw):
    base = dict(
        scheduled=0.0,
        sent=0.5,
        chunks=[(1.0, 1), (1.2, 1), (1.5, 3)],
        end=1.6,
        prompt_tokens=10,
        chunk_tokens="usage",
    )
    base.update(kw)
    return RequestRecord(**base)


def test_request_metrics_by_hand():
    r = _rec()
    assert r.tokens == 5
    assert r.queue_s == pytest.approx(0.5)
    assert r.ttft_s == pytest.approx(1.0)  # from the scheduled arrival, not from the send
    assert r.e2e_s == pytest.approx(1.6)
    assert r.tpot_s == pytest.approx((1.6 - 1.0) / 4)
    # the 3-token chunk's 0.3 s gap is three ITL samples of 0.1 s
    assert r.itls() == pytest.approx([0.2, 0.1, 0.1, 0.1])


def test_usage_count_wins_over_chunks_and_one_token_has_no_tpot():
    assert _rec(usage_tokens=9).tpot_s == pytest.approx(0.6 / 8)
    assert _rec(chunks=[(1.0, 1)], end=1.0).tpot_s is None


def test_percentiles_pool_raw_samples():
    x = list(np.random.default_rng(0).random(1000))
    p = percentiles(x)
    assert p["n"] == 1000
    assert p["p99"] == pytest.approx(np.percentile(x, 99))
    assert percentiles([])["p50"] is None


def test_summary_excludes_warmup_counts_errors_and_goodput():
    ok = [_rec(), _rec(chunks=[(3.0, 1), (3.5, 1)], end=3.5)]  # ttft 1.0 and 3.0
    bad = [_rec(chunks=[], error="http-429"), _rec(chunks=[], error="stream-dropped")]
    warm = [_rec(warmup=True, scheduled=-10.0)]
    s = summarize_run(ok + bad + warm, slo_ttft_s=2.0)
    assert s["requests"] == 4 and s["completed"] == 2
    assert s["errors"] == {"http-429": 1, "stream-dropped": 1} and s["rejected"] == 1
    assert s["duration_s"] == pytest.approx(3.5)  # first scheduled (0) to last end; warm-up excluded
    assert s["output_tokens"] == 7
    assert s["output_throughput_tok_s"] == pytest.approx(7 / 3.5)
    assert s["goodput_req_s"] == pytest.approx(1 / 3.5)  # only the first meets TTFT <= 2 s
    assert s["ttft_s"]["n"] == 2 and s["ttft_s"]["p50"] == pytest.approx(2.0)
    row = sweep_row(4, s)
    for k in ("load", "p95_ttft_s", "p95_tpot_s", "throughput_tok_s"):
        assert k in row
    # TTFT, ITL, TPOT and E2E at p50/p90/p99, each with the count it rests on
    assert row["p90_ttft_s"] == pytest.approx(np.percentile([1.0, 3.0], 90))
    assert row["p50_e2e_s"] == pytest.approx(2.55) and row["n_e2e"] == 2
    assert row["n_itl"] == 5 and row["p99_itl_s"] == pytest.approx(
        np.percentile([0.2, 0.1, 0.1, 0.1, 0.5], 99)
    )
    assert row["n_tpot"] == 2 and row["itl_basis"] == "per token"


def test_chunks_are_not_tokens():
    """Without usage or a tokenizer a request's count is chunks: kept out of TPOT, output tokens and
    tokens/s, reported as chunks per second; its ITL is one sample per gap between chunks."""
    plain = _rec(chunk_tokens="")  # chunks (1, 1, 3) as the stream carried them: 3 chunks
    assert plain.tokens is None and plain.tokens_from == "chunks" and plain.tpot_s is None
    assert plain.itls() == pytest.approx([0.2, 0.3])  # per gap, not split
    s = summarize_run([plain, _rec()])
    assert s["output_tokens"] is None and s["output_throughput_tok_s"] is None
    assert s["output_chunks"] == 6 and s["output_throughput_chunks_s"] == pytest.approx(6 / 1.6)
    assert s["tokens_from"] == {"chunks": 1, "usage": 1} and s["tpot_s"]["n"] == 1
    assert s["itl_s"]["n"] == 4 and s["itl_basis"] == "per token"  # the counted request's only
    only = summarize_run([plain, _rec(chunk_tokens="")])
    assert only["itl_basis"].startswith("per chunk gap") and only["itl_s"]["n"] == 4


def test_no_percentile_below_the_minimum_count():
    s = summarize_run([_rec(), _rec()], min_n=3)
    row = sweep_row(1, s)
    assert row["n_ttft"] == 2 and row["p50_ttft_s"] is None and row["p99_e2e_s"] is None
    assert row["n_itl"] == 8 and row["p50_itl_s"] is not None  # 8 ITL samples: enough


def test_schedule_is_seeded_poisson_with_the_asked_rate():
    a = schedule(4000, 10.0, seed=1)
    assert a == schedule(4000, 10.0, seed=1) and a != schedule(4000, 10.0, seed=2)
    assert a[0] == 0.0 and np.all(np.diff(a) >= 0)
    assert 4000 / a[-1] == pytest.approx(10.0, rel=0.05)
    gaps_bursty = np.diff(schedule(4000, 10.0, burstiness=0.25, seed=1))
    assert np.std(gaps_bursty) > 1.5 * np.std(np.diff(a))  # gamma shape < 1: burstier
    assert schedule(3, None) == [0.0, 0.0, 0.0]
    with pytest.raises(SpecError):
        schedule(3, -1.0)


def test_lengths():
    assert lengths(3, 8) == [8, 8, 8]
    u = lengths(500, 100, dist="uniform", spread=0.5, seed=3)
    assert min(u) >= 50 and max(u) <= 150 and len(set(u)) > 10
    with pytest.raises(SpecError):
        lengths(3, 8, dist="zipf")


def _rows(values):
    return [{"load": x, "p99_ttft_s": y} for x, y in values]


def test_knee_found_where_planted():
    rows = _rows([(1, 0.010), (2, 0.011), (4, 0.012), (8, 0.013), (16, 0.060), (32, 0.250)])
    assert find_knee(rows) == 8


def test_no_knee_on_a_flat_or_linear_tail():
    assert find_knee(_rows([(1, 0.010), (2, 0.0101), (4, 0.0102), (8, 0.0103)])) is None
    assert find_knee(_rows([(1, 0.01), (2, 0.02), (4, 0.04), (8, 0.08)])) is None
    assert find_knee(_rows([(1, 0.01), (2, 0.5)])) is None  # too few points to say


def test_bisection_finds_the_largest_load_meeting_the_slo():
    best, probes = bisect_load(lambda x: x <= 5.3, 1, 16, steps=8, integer=True)
    assert best == 5
    assert (1, True) in probes and (16, False) in probes
    assert bisect_load(lambda x: False, 1, 16)[0] is None
    assert bisect_load(lambda x: True, 1, 16)[0] == 16
