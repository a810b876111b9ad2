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


def _rec(entered: float, last: float | None, tokens: int = 16) -> dict:
    t = {"prompt_head": "r0", "entered": entered, "first_write": entered + 0.05}
    return t if last is None else {**t, "last_write": last, "tokens": tokens}


def test_served_truth_is_the_runs_tokens_over_its_window_by_the_stand_ins_records():
    """The run's n requests are the last n to enter after it began: an earlier run's record and a
    test request before the run's own (vLLM's client sends one) are not in its window."""
    records = [
        _rec(9.0, 9.2),  # an earlier tool run
        _rec(10.0, 10.125),  # a test request before the run
        _rec(10.5, 10.625),
        _rec(10.5, 10.63),
        _rec(10.7, 10.825),
        _rec(10.75, None),  # cut: no last write, no tokens
    ]
    got = B.served(records, since=9.5, n=4)
    assert got["requests_seen"] == 5 and got["served_requests"] == 3
    assert got["served_tok_s"] == pytest.approx(48 / (10.825 - 10.5))
    assert B.served(records, since=11.0, n=4) == {
        "served_tok_s": None,
        "served_requests": 0,
        "requests_seen": 0,
    }


def test_verdict_sets_each_figure_against_its_truth():
    def row(tool, c, ovh, ttft=50.0, itl=5.0, tpot=5.0, off=0.0):
        return {
            "tool": tool,
            "concurrency": c,
            "overhead_p50_ms": ovh,
            "ttft_p50_ms": ttft,
            "itl_p50_ms": itl,
            "tpot_p50_ms": tpot,
            "tok_s_off_served_pct": off,
        }

    def rounds(x, *per_round):
        return x | {"overhead_p50_ms_rounds": list(per_round)}

    rows = [
        row("aiworkbook", 1, 1.0, ttft=51.0),
        rounds(row("aiworkbook", 64, 2.0, tpot=5.2, off=-3.5), 2.0, 2.0, 1.0, 2.0, 3.0),
        rounds(row("vllm bench serve", 64, 10.0), 10.0, 8.0, 10.0, 20.0, 10.0),
        rounds(row("guidellm", 64, 50.0), 50.0, 50.0, 2.0, 50.0, 50.0),
    ]
    text = B.verdict(rows)
    # per round against that round's best peer: 0.2, 0.25, 0.5 (guidellm 2.0 that round), 0.1, 0.3
    assert (
        "0.25x the best peer's in each round (median of 5 rounds, range 0.10..0.50); goal <= 0.5x: met"
        in text
    )
    rows[1]["overhead_p50_ms_rounds"][2] = 1.5  # one round at 0.75x: the rounds disagree
    assert "goal <= 0.5x: unsettled (the rounds disagree)" in B.verdict(rows)
    assert "aiworkbook c=1: TTFT +2.0 %, ITL +0.0 %, TPOT +0.0 %, tok/s +0.0 %; within 3 %: yes" in text
    assert "aiworkbook c=64:" in text and "within 3 %: no ['TPOT', 'tok/s']" in text
    assert B.off_pct(97.0, 100.0) == pytest.approx(-3.0) and B.off_pct(1.0, None) is None


def test_fewer_than_five_rounds_or_an_existing_folder_are_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        B.main(["--rounds", "2", "--out", str(tmp_path / "new")])
    assert e.value.code == 2 and "5..100" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        B.main(["--out", str(tmp_path)])  # exists: a round would overwrite another's files
    assert e.value.code == 2 and "exists" in capsys.readouterr().err


@pytest.mark.timeout(60)
def test_ours_is_also_measured_request_by_request(tmp_path):
    """Beside the process-tree CPU/req that all three tools share, ours carries the CPU of each request
    (serving/cpumeter.py): a p50 over every completed request, with its count."""
    from aiworkbook.serving.server import FixedDelay, ServerThread, make_app

    with ServerThread(make_app("stand-in", fixed=FixedDelay(ttft_s=0.005, itl_s=0.001))) as s:
        st, cpu = B.run_ours(s.url, 2, 6, tmp_path)
    assert st["cpu_each_n"] == st["n"] == 6 and st["cpu_each_p50_ms"] > 0 and cpu > 0
