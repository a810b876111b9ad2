"""The serving proof through the registry (plan, run, cancel), the importers, and the CLI."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from aiworkbook.errors import SpecError
from aiworkbook.proofs import registry
from aiworkbook.proofs.result import ProofResult
from aiworkbook.serving.importers import import_results

DATA = Path(__file__).parent / "data"
ROW_KEYS = (
    "load",
    "p50_ttft_s",
    "p95_ttft_s",
    "p99_ttft_s",
    "p50_tpot_s",
    "p95_tpot_s",
    "p99_tpot_s",
    "throughput_tok_s",
)


def test_plan_predicts_the_kv_of_the_heaviest_load_without_running():
    p = registry.plan("serving", quick=True, sweep=[1, 4])
    # tiny-llama fp32: 2 KiB per token; 4 sequences of 32 + 16 tokens (three 16-token blocks)
    assert p.predicted == 4 * 48 * 2048 and p.unit == "B"
    remote = registry.plan("serving", target="http://127.0.0.1:9", quick=True)
    assert remote.predicted is None and remote.device == "remote"
    with pytest.raises(SpecError):
        registry.plan("serving", scheduler="fifo")


@pytest.mark.serial  # p99 of 8 requests is their slowest: another worker's load can bend the curve early
def test_run_sweeps_finds_the_planted_knee_and_compares_schedulers(tmp_path):
    seen = []
    r = registry.run(
        "serving",
        progress=lambda d, t, m: seen.append((d, t, m)),
        quick=True,
        backend="synthetic",
        max_batch=2,  # the planted knee: beyond 2 in flight, requests queue for a whole request
        synthetic_step_s=0.005,
        sweep=[1, 2, 4, 8],
        requests=8,
        min_requests=8,
        output_tokens=32,
        context_sweep=False,
        slo_ttft_ms=60.0,
    )
    rows = r.details["sweep"]
    assert [x["load"] for x in rows] == [1, 2, 4, 8]
    assert all(k in x for x in rows for k in ROW_KEYS)
    assert r.details["knee"] == 2
    assert rows[-1]["p99_ttft_s"] > 2 * rows[0]["p99_ttft_s"]
    assert r.details["slo_search"]["max_load"] in (1, 2, 3, 4)
    s = r.details["schedulers"]
    assert s["static"]["throughput_tok_s"] > 0 and s["continuous"]["throughput_tok_s"] > 0
    # the KV pool's peak at concurrency 8 with 2 slots: 2 sequences x 64 tokens (the estimate's too)
    assert r.measured == r.predicted == 2 * 64 * 2048 and r.verdict == "pass"
    assert "telemetry" in r.details and seen[-1][0] == seen[-1][1]
    # the SLO's load and static vs continuous read from the result's notes (a dashboard shows notes)
    best = r.details["slo_search"]["max_load"]
    assert any(n.startswith("most load meeting the SLO (p95 TTFT <= 60 ms): " + f"{best}") for n in r.notes)
    ratio = f"({s['throughput_ratio']:.2f}x)"
    each = f"static vs continuous batching at concurrency 8, {s['requests']} requests each ("
    assert s["requests"] >= 16 and any(n.startswith(each) and ratio in n for n in r.notes)
    assert not any(n.startswith("context sweep") for n in r.notes)  # not run
    r.save(tmp_path / "s.json")
    assert ProofResult.load(tmp_path / "s.json").details["knee"] == 2


def test_context_sweep_runs_out_where_the_estimate_says():
    r = registry.run(
        "serving", quick=True, backend="synthetic", sweep=[2], requests=4, compare=False, min_requests=4
    )
    c = r.details["context_sweep"]
    assert c["runs_out_at_context"] == c["predicted_runs_out_at_context"] == c["rows"][-1]["context"]
    peaks = [x["kv_bytes_peak"] for x in c["rows"][:-1]]
    assert peaks == sorted(peaks) and peaks[0] < peaks[-1]  # KV grows with the context
    longest = c["rows"][-1]["context"]
    assert f"the KV pool ran out at context {longest} (the estimate: at context {longest})" in " ".join(
        r.notes
    )


@pytest.mark.serial  # a wall-clock bound: alone, not beside another worker
def test_cancel_lands_within_a_second():
    ev = threading.Event()
    t0 = []

    def progress(done, total, msg):
        if msg.endswith("3/400 requests") and not ev.is_set():  # mid-way through a load point
            t0.append(time.monotonic())
            ev.set()

    r = registry.run(
        "serving",
        progress=progress,
        cancel=ev,
        backend="synthetic",
        sweep=[1, 2, 4],
        requests=400,
        compare=False,
        context_sweep=False,
    )
    assert r.verdict == "interrupted"
    # ~0.8-0.9 s alone; 2-2.8 s measured right after the serial browser tests (their kernels ending).
    # The bound still shows the cancel landed inside the load point: its 400 requests take ~150 s.
    assert time.monotonic() - t0[0] < 5.0


def test_remote_target_is_info_and_counts_errors():
    from aiworkbook.serving.server import FixedDelay, ServerThread, make_app

    with ServerThread(make_app("remote-model", fixed=FixedDelay(ttft_s=0.01, itl_s=0.002))) as s:
        r = registry.run(
            "serving", target=s.url, served_model="remote-model", sweep=[1, 2], requests=4, min_requests=4
        )
    assert r.verdict == "info" and r.device == "remote"
    assert [x["n"] for x in r.details["sweep"]] == [4, 4]
    assert "schedulers" not in r.details


def test_import_vllm_recomputes_pooled_percentiles_from_raw_samples():
    r = import_results(DATA / "vllm_bench_serve_result.json")
    row = r.details["sweep"][0]
    assert r.verdict == "info" and r.details["source"]["format"] == "vllm"
    assert row["load"] == 2.0
    assert row["p50_ttft_s"] == pytest.approx(0.025)  # median of 10, 20, 30, 40 ms
    assert row["p99_ttft_s"] == pytest.approx(0.0397)
    assert row["p50_tpot_s"] == pytest.approx(0.01)  # nine 10 ms ITLs over 10 - 1 tokens
    assert row["throughput_tok_s"] == 10.0


def test_import_guidellm_rows_per_benchmark(tmp_path):
    r = import_results(DATA / "guidellm_report.json")
    rows = r.details["sweep"]
    assert [x["load"] for x in rows] == [1.0, 4.0]
    assert rows[1]["p99_ttft_s"] == pytest.approx(0.26) and rows[1]["errors"]["errored"] == 2
    bad = tmp_path / "x.json"
    bad.write_text('{"hello": 1}')
    with pytest.raises(SpecError):
        import_results(bad)


def test_cli(tmp_path, capsys):
    from aiworkbook.cli import main

    out = tmp_path / "r.json"
    assert main(["prove", "serving", "--import", str(DATA / "guidellm_report.json"), "--json", str(out)]) == 0
    assert ProofResult.load(out).details["sweep"][0]["load"] == 1.0
    assert main(["prove", "serving", "--quick", "--sweep", "1,x"]) == 2
    assert main(["serve", "tiny-llama", "--host", "0.0.0.0", "--duration", "0.1"]) == 2
    assert main(["serve", "tiny-llama", "--port", "0", "--duration", "0.2", "--kv-budget-mib", "1"]) == 0
    assert main(["serve", "tiny-llama", "--port", "0", "--duration", "0.2", "--scheduler", "fifo"]) == 2
    assert main(["serve", "tiny-llama", "--port", "0", "--duration", "0.1", "--max-batched-tokens", "4"]) == 2
    err = capsys.readouterr().err
    assert "loopback" in err and "max_batched_tokens" in err
    assert (
        main(
            [
                "prove",
                "serving",
                "--quick",
                "--backend",
                "synthetic",
                "--sweep",
                "1,2",
                "--requests",
                "4",
                "--min-requests",
                "4",
                "--no-compare",
                "--no-context",
            ]
        )
        == 0
    )
    cap = capsys.readouterr()
    assert "knee:" in cap.out
    assert "serving:" in cap.err  # progress on the tqdm bar every `prove` command uses (stderr)


def test_summary_notes_say_when_nothing_met_or_ran_out():
    from aiworkbook.serving.proof import _summary_notes

    row = {"throughput_tok_s": None, "p95_ttft_s": None}
    notes = _summary_notes(  # a result saved before the comparison recorded its request count
        {
            "slo_search": {
                "slo": {"ttft_s": 0.001, "tpot_s": None},
                "max_load": None,
                "throughput_tok_s_at_max_load": None,
            },
            "schedulers": {
                "concurrency": 4,
                "length_dist": "uniform +-90 %",
                "static": row,
                "continuous": row,
            },
            "context_sweep": {
                "concurrency": 2,
                "rows": [{"context": 48}, {"context": 112}],
                "runs_out_at_context": None,
                "predicted_runs_out_at_context": None,
            },
        }
    )
    assert notes == [
        "no load in the sweep meets the SLO (p95 TTFT <= 1 ms)",
        "static vs continuous batching at concurrency 4 (output lengths uniform +-90 %): n/a vs n/a tok/s, "
        "p95 TTFT n/a vs n/a ms",
        "context sweep at concurrency 2: the KV pool held up to context 112 (the estimate: not up to context 112)",
    ]


@pytest.mark.timeout(120)
def test_cli_table_and_sweep_csv_show_every_metric_with_its_count(tmp_path, capsys):
    """TTFT, ITL, TPOT, E2E and the client's CPU per request (each request measured on its own) at
    p50/p90/p99 with the count each rests on, in the table, the JSON and --sweep-csv; a percentile from fewer samples than --min-requests is n/a (empty in the CSV)."""
    import csv

    from aiworkbook.cli import main

    csv_path, js = tmp_path / "sweep.csv", tmp_path / "r.json"
    args = ["prove", "serving", "--backend", "synthetic", "--sweep", "1", "--requests", "10"]
    args += ["--output-tokens", "4", "--no-compare", "--no-context", "--sweep-csv", str(csv_path)]
    assert main([*args, "--json", str(js)]) == 0
    out = capsys.readouterr().out
    for name in ("TTFT", "ITL", "TPOT", "E2E", "CPU"):
        line = next(x for x in out.splitlines() if x.strip().startswith(name + " "))
        assert len(line.split()) == 5 and "n/a" not in line  # p50, p90, p99, n
    assert "tok/s (tokens from usage 10)" in out
    row = ProofResult.load(js).details["sweep"][0]
    assert row["n_ttft"] == row["n_e2e"] == row["n_tpot"] == 10 and row["n_itl"] == 30  # 3 gaps x 10
    assert row["n_cpu"] == 10 and 0 < row["p50_cpu_s"] <= row["p99_cpu_s"]
    (got,) = list(csv.DictReader(csv_path.open()))
    assert got["n_itl"] == "30" and float(got["p90_e2e_s"]) == pytest.approx(row["p90_e2e_s"])
    assert got["n_cpu"] == "10" and float(got["p50_cpu_s"]) == pytest.approx(row["p50_cpu_s"])
    assert main([*args, "--min-requests", "11"]) == 1  # 10 completed: invalid, and no percentile shown
    (got,) = list(csv.DictReader(csv_path.open()))
    assert got["p50_ttft_s"] == "" and got["n_ttft"] == "10" and got["invalid"]
