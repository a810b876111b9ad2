"""vLLM 0.19 start-up arithmetic (engine v1-019) against issue 23's held-out H100 runs
(tests/data/vllm_019_held_out_runs.json, rebuilt by tools/vllm_issue23_runs.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from statistics import median
from types import ModuleType

import pytest

GiB = 1 << 30
ROOT = Path(__file__).resolve().parents[1]


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "vllm_issue23_runs", ROOT / "tools" / "vllm_issue23_runs.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


TOOL = _tool()
RUNS = TOOL.RUNS["runs"]


def test_the_runs_used_utilisation_095():
    """The 72B run's per-rank figures add up only at 0.95 (issue 32's correction of issue 23's 0.9): at 0.9
    the weights, torch peak and memory outside torch alone pass the requested memory."""
    run = next(r for r in RUNS if "logged_per_rank_gib" in r)
    logged = run["logged_per_rank_gib"]
    total = TOOL.compare(run)["v1-019"].total_bytes / GiB
    used = logged["weights"] + logged["torch_peak"] + logged["non_torch"]
    assert TOOL.RUNS["gpu_memory_utilization"] == 0.95
    assert 0.95 * total - used == pytest.approx(logged["available_kv"], abs=0.1)
    assert 0.9 * total - used < 0


@pytest.mark.parametrize("run", RUNS, ids=TOOL.run_name)
def test_each_run_within_3_percent(run):
    c = TOOL.compare(run)
    assert c["logged"] and abs(c["error_pct"]) <= 3.0, (TOOL.run_name(run), c["error_pct"])


def test_median_within_1_percent_and_v1_019_beats_v1():
    errors = [TOOL.compare(r)["error_pct"] for r in RUNS]
    assert median(abs(e) for e in errors) <= 1.0, errors
    v1_errors = [r["v1_error_pct"] for r in RUNS]
    assert median(abs(e) for e in errors) < median(abs(e) for e in v1_errors)


def test_72b_tp2_per_rank_figures_beside_the_log():
    """Qwen2.5-72B-Instruct at tp 2: every per-rank figure beside the one vLLM logged (each logged to two
    decimals). The weights count each layer's 231 MiB down projection as the 232 MiB block the caching
    allocator hands out (67.80 GiB, logged 67.8); the torch peak holds the sampled rows and their
    rand_like (2 x 1,024 x 8,192 x 2 B) and the 32 MiB cuBLAS workspace the profile's first GEMM
    allocates (2.29 GiB, logged 2.29). What is left of the KV gap is the logged figures' own rounding:
    0.95 x 79.22 - 67.8 - 2.29 - 2.09 = 3.08 GiB against the 3.04 the tokens imply."""
    run = next(r for r in RUNS if "logged_per_rank_gib" in r)
    logged = run["logged_per_rank_gib"]
    c = TOOL.compare(run)
    r = c["v1-019"]
    assert r.weights_bytes / GiB == pytest.approx(logged["weights"], abs=0.005)
    assert r.activation_peak_bytes / GiB == pytest.approx(logged["torch_peak"], abs=0.005)
    assert r.non_torch_bytes / GiB == pytest.approx(logged["non_torch"], abs=0.015)
    assert r.available_kv_bytes / GiB == pytest.approx(logged["available_kv"], abs=0.1)
    assert abs(c["error_pct"]) <= 1.0


def test_the_rebuilt_logged_figure_is_engine_v1_as_filed():
    """The logged tokens are rebuilt from the v1 tokens the issue's errors were taken against, kept with
    the runs, not from v1 as it computes now (its weights now count the allocator's whole blocks)."""
    for run in RUNS:
        c = TOOL.compare(run)
        filed = run["v1_tokens_as_filed"]["0.95"]
        assert c["logged"] == pytest.approx(filed / (1 + run["v1_error_pct"] / 100))
        assert c["v1"].kv_cache_tokens <= filed  # the blocks only ever cost memory
