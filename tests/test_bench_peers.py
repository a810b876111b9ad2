"""benchmarks/peers.py's own arithmetic (the peers themselves run in `make bench-peers`, not here):
the overhead against the planted TTFT, and vLLM's client timed past its imports."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _peers():
    spec = importlib.util.spec_from_file_location("bench_peers", ROOT / "benchmarks" / "peers.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


B = _peers()


def test_stats_overhead_is_ttft_minus_the_planted_delay():
    st = B._stats([0.051, 0.052, 0.060], [0.005, 0.005], [0.005, 0.0052], 100.0)
    assert st["n"] == 3 and st["ttft_p50_ms"] == pytest.approx(52.0)
    assert st["overhead_p50_ms"] == pytest.approx(2.0)
    assert 2.0 < st["overhead_p99_ms"] <= 10.0
    assert st["itl_p50_ms"] == pytest.approx(5.0) and st["tpot_p50_ms"] == pytest.approx(5.1)


def test_vllm_client_is_timed_around_its_main_only():
    src = B._VLLM_TIMED
    assert src != B.P._VLLM_BENCH and "main(parser.parse_args" not in src
    assert src.index("t0 = time.process_time()") < src.index("main(args)") < src.index("AIWB_CPU_S")
    compile(src, "vllm-timed", "exec")


def test_request_counts_cover_every_stream_several_times():
    assert [B._requests(c) for c in B.CONCURRENCY] == [32, 64, 256]
