"""GuideLLM's run options in the load generator: warm-up and cool-down by duration, a stop on the
error rate, the prompt-length distribution, and per-request samples as CSV."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from aiohttp import web

from aiworkbook.errors import SpecError
from aiworkbook.serving.arrivals import lengths
from aiworkbook.serving.client import ERROR_WINDOW, Load, Target, run_load_sync
from aiworkbook.serving.metrics import SAMPLE_FIELDS, summarize_run
from aiworkbook.serving.server import FixedDelay, ServerThread, make_app


def _stand_in() -> ServerThread:
    return ServerThread(make_app("stand-in", fixed=FixedDelay(ttft_s=0.01, itl_s=0.002)))


def test_a_failing_server_stops_the_run_at_the_error_rate():
    sent = []

    async def fail(request: web.Request) -> web.Response:
        sent.append(1)
        await request.read()
        return web.Response(status=500, text="down")

    app = web.Application()
    app.router.add_post("/v1/completions", fail)
    with ServerThread(app) as s:
        recs = run_load_sync(
            Target(s.url, "m"), Load(requests=200, concurrency=2, warmup=0, max_error_rate=0.5)
        )
    sm = summarize_run(recs)
    assert ERROR_WINDOW <= len(sent) <= ERROR_WINDOW + 2  # stopped once the window had filled
    assert sm["stopped"].startswith("stopped: ") and "max error rate 0.5" in sm["stopped"]
    assert sm["errors"]["http-500"] == len(sent)


def test_warmup_and_cooldown_durations_leave_out_the_edges():
    with _stand_in() as s:
        recs = run_load_sync(
            Target(s.url, "stand-in"),
            Load(requests=40, rate=80.0, output_tokens=2, warmup=0, warmup_s=0.1, cooldown_s=0.1),
        )
    t0 = min(r.scheduled for r in recs)
    t1 = max(r.end for r in recs)
    warm = [r for r in recs if r.excluded == "warm-up"]
    cool = [r for r in recs if r.excluded == "cool-down"]
    kept = [r for r in recs if not r.excluded]
    assert warm and cool and kept
    assert all(r.scheduled < t0 + 0.1 for r in warm) and all(r.end > t1 - 0.1 for r in cool)
    assert all(r.scheduled >= t0 + 0.1 and r.end <= t1 - 0.1 for r in kept)
    sm = summarize_run(recs)
    assert sm["requests"] == len(kept) and sm["excluded"] == {"warm-up": len(warm), "cool-down": len(cool)}


def test_the_prompt_length_distribution_is_reported():
    load = Load(
        requests=12, concurrency=3, prompt_tokens=20, length_dist="uniform", length_spread=0.5, warmup=1
    )
    with _stand_in() as s:
        sm = summarize_run(run_load_sync(Target(s.url, "stand-in"), load))
    drawn = np.asarray(lengths(13, 20, dist="uniform", spread=0.5, seed=0)[1:], dtype=float)
    pt = sm["prompt_tokens"]  # the stand-in's usage counts the prompt's words: the lengths drawn
    assert pt["n"] == 12 and pt["min"] == drawn.min() and pt["max"] == drawn.max()
    assert pt["mean"] == pytest.approx(drawn.mean()) and pt["stdev"] == pytest.approx(drawn.std())
    assert pt["min"] < pt["max"]


def test_samples_csv_has_a_row_per_request(tmp_path, capsys):
    from aiworkbook.cli import main

    out = tmp_path / "samples.csv"
    with _stand_in() as s:
        args = [
            "prove",
            "serving",
            "--target",
            s.url,
            "--sweep",
            "1,2",
            "--requests",
            "5",
            "--min-requests",
            "5",
        ]
        assert main([*args, "--output-tokens", "3", "--samples-csv", str(out)]) == 0
        assert main([*args, "--max-error-rate", "1.5"]) == 2
        assert main([*args, "--warmup-duration", "-1"]) == 2
    assert "max_error_rate" in capsys.readouterr().err
    rows = list(csv.DictReader(out.open()))
    assert list(rows[0]) == list(SAMPLE_FIELDS)
    assert len(rows) == 10 and [r["load"] for r in rows] == ["1"] * 5 + ["2"] * 5
    assert all(r["error"] == "" and float(r["ttft_s"]) >= 0.01 and r["usage_tokens"] == "3" for r in rows)


def test_load_options_are_checked():
    with pytest.raises(SpecError, match="max_error_rate"):
        Load(concurrency=1, max_error_rate=0)
    with pytest.raises(SpecError, match="cooldown_s"):
        Load(concurrency=1, cooldown_s=float("nan"))
