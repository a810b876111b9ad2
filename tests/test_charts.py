"""Chart builders: each Vega-Lite spec carries the library's numbers; SVG renders offline."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aiworkbook.charts import (
    heatmap_chart,
    heatmap_data,
    latency_chart,
    memory_chart,
    proofs_chart,
    roofline_chart,
    telemetry_chart,
    to_svg,
)
from aiworkbook.errors import SpecError
from aiworkbook.sizing import Workload, estimate, memory_grid
from aiworkbook.sizing.capacity import fits
from aiworkbook.specs import get_gpu, load_model
from aiworkbook.units import GiB


def rows_of(chart) -> list[dict]:
    """Every inline data row in a chart's Vega-Lite spec, or in a spec dict (inline values and datasets)."""
    spec = chart if isinstance(chart, dict) else chart.to_dict()
    out: list[dict] = []

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("values"), list):
                out.extend(v for v in node["values"] if isinstance(v, dict))
            for k, v in node.items():
                if k == "datasets":
                    for rows in v.values():
                        out.extend(rows)
                else:
                    walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(spec)
    return out


def assert_offline_svg(chart) -> None:
    svg = to_svg(chart)
    assert svg.lstrip().startswith("<svg")
    # XML namespace declarations are names, not fetched; nothing else may point at the network
    assert not re.search(r"https?://", re.sub(r'xmlns(:\w+)?="[^"]*"', "", svg))


@pytest.fixture(scope="module")
def llama():
    return load_model("llama-3-8b")


@pytest.fixture(scope="module")
def infer_estimate(llama):
    w = Workload(mode="infer", concurrency=8, seq_len=4096, new_tokens=512)
    return estimate(llama, w, gpu="H100-SXM")


def test_memory_chart_holds_each_component_formula_rule_and_budget(infer_estimate):
    chart = memory_chart(infer_estimate)
    rows = rows_of(chart)
    by = {r["component"]: r for r in rows if "component" in r}
    mem = infer_estimate.memory
    for comp in ("weights", "activations", "kv_cache", "cuda_context", "reserve"):
        assert by[comp]["bytes"] == getattr(mem, comp)
        assert by[comp]["gib"] == pytest.approx(getattr(mem, comp) / GiB)
        assert by[comp]["formula"] == mem.formulas[comp]
    assert "gradients" not in by  # zero components are left out of the stack
    itemised = sum(r["bytes"] for r in rows if r.get("bar") == "itemised")
    assert itemised == mem.total
    rule = [r for r in rows if r.get("bar") == "rule of thumb"]
    assert rule[0]["bytes"] == infer_estimate.rules_of_thumb["bytes"]
    assert rule[0]["formula"] == infer_estimate.rules_of_thumb["formula"]
    budget = [r for r in rows if str(r.get("label", "")).startswith("budget")]
    assert budget[0]["gib"] == pytest.approx(infer_estimate.fits["budget_bytes"] / GiB)
    assert "H100-SXM" in chart.to_dict()["title"]
    assert_offline_svg(chart)


def test_memory_chart_marks_a_training_steps_peak_below_the_stack(llama):
    est = estimate(llama, Workload(recipe="pure-bf16"), gpu="H100-SXM")
    assert est.memory.total < est.memory.summed  # gradients are not alive at the loss backward
    rows = rows_of(memory_chart(est))
    assert (
        sum(r["bytes"] for r in rows if r.get("bar") == "itemised" and "component" in r) == est.memory.summed
    )
    peak = [r for r in rows if r.get("label") == "the step's peak (the total)"]
    assert len(peak) == 1 and peak[0]["gib"] == pytest.approx(est.memory.total / GiB)
    assert peak[0]["formula"] == est.memory.formulas["total"] and "not alive then" in peak[0]["formula"]
    inference = rows_of(memory_chart(estimate(llama, Workload(mode="infer"), gpu="H100-SXM")))
    assert not [r for r in inference if r.get("label") == "the step's peak (the total)"]  # stack == total


def test_memory_chart_accepts_the_json_of_size(infer_estimate):
    assert rows_of(memory_chart(infer_estimate.to_dict())) == rows_of(memory_chart(infer_estimate))


def test_heatmap_totals_and_frontier_come_from_sizing(llama):
    w = Workload(mode="infer", seq_len=1024, new_tokens=0)
    batches, lengths = [1, 8, 64, 256], [1024, 8192, 32768]
    chart = heatmap_chart(llama, w, "L4", batches, lengths)
    grid = memory_grid(llama, w, batches, lengths)
    cells = {(r["batch"], r["length"]): r for r in rows_of(chart) if "bytes" in r}
    gpu = get_gpu("L4")
    for i, b in enumerate(batches):
        for j, s in enumerate(lengths):
            assert cells[(b, s)]["bytes"] == int(grid[i, j])
            wl = w.replace(concurrency=b, context=s)
            assert cells[(b, s)]["fits"] == fits(llama, wl, gpu)["fits"]
    d = heatmap_data(llama, w, "L4", batches, lengths)
    assert d["frontier"]  # something fits a 24 GB L4 at 1 sequence
    for f in d["frontier"]:
        assert cells[(f["batch"], f["length"])]["fits"]
        bigger = [b for b in batches if b > f["batch"]]
        assert all(not cells[(b, f["length"])]["fits"] for b in bigger)
    assert_offline_svg(chart)


def test_heatmap_refuses_bad_grid(llama):
    with pytest.raises(SpecError):
        heatmap_chart(llama, Workload(mode="infer"), "L4", [0, 1], [128])


def test_roofline_point_sits_on_its_own_dtype_roof(llama):
    from aiworkbook.proofs.roofline import roofline_chart_data, workload_point

    gpu = get_gpu("H100-SXM")
    point = workload_point(llama, batch=4, context=2048)
    data = roofline_chart_data(gpu, point, dtypes=["fp8", "bf16"], label="llama-3-8b")
    chart = roofline_chart(data)
    rows = rows_of(chart)
    (p,) = [r for r in rows if r.get("kind") == "workload"]
    assert p["intensity"] == pytest.approx(point["intensity"])
    expected = min(gpu.peak_flops(p["dtype"]), gpu.memory_bandwidth_bps * point["intensity"])
    assert p["tflops"] == pytest.approx(expected / 1e12)
    roofs = {r["dtype"] for r in rows if r.get("kind") == "ceiling"}
    assert roofs == {"fp8", "bf16"}
    assert "memory-bound" in chart.to_dict()["title"]
    assert_offline_svg(chart)


def test_roofline_without_ceilings_is_a_spec_error():
    with pytest.raises(SpecError):
        roofline_chart([{"kind": "workload", "intensity": 1.0, "attainable_flops": 1.0, "dtype": "bf16"}])


def _sweep():
    return [
        {
            "load": n,
            "p50_ttft_s": 0.05 * n,
            "p95_ttft_s": 0.08 * n,
            "p99_ttft_s": 0.1 * n,
            "p50_tpot_s": 0.01 + 0.001 * n,
            "p95_tpot_s": 0.012 + 0.001 * n,
            "p99_tpot_s": 0.015 + 0.001 * n,
            "throughput_tok_s": 90.0 * n,
        }
        for n in (1, 2, 4, 8)
    ]


def test_latency_chart_in_milliseconds_with_knee():
    sweep = _sweep()
    chart = latency_chart(sweep, knee=4)
    rows = rows_of(chart)
    p99 = {r["load"]: r["ms"] for r in rows if r.get("metric") == "TTFT" and r.get("percentile") == "p99"}
    assert p99 == {r["load"]: pytest.approx(r["p99_ttft_s"] * 1e3) for r in sweep}
    tput = {r["load"]: r["throughput_tok_s"] for r in rows if "throughput_tok_s" in r}
    assert tput == {r["load"]: r["throughput_tok_s"] for r in sweep}
    assert [r["load"] for r in rows if "label" in r] == [4, 4, 4]  # the knee in each panel
    assert_offline_svg(chart)
    assert not [r for r in rows_of(latency_chart(sweep)) if "label" in r]
    # throughput has no percentile: its line must not take p50's, p95's or p99's colour from the legend
    spec = chart.to_dict()
    scale = spec["hconcat"][0]["layer"][0]["encoding"]["color"]["scale"]
    colour_of = dict(zip(scale["domain"], scale["range"], strict=True))
    percentile_colours = {colour_of[p] for p in ("p50", "p95", "p99")}
    thr = spec["hconcat"][2]["layer"][0]["encoding"]["color"]
    assert colour_of[thr["scale"]["domain"][3]] not in percentile_colours  # its own legend entry


def test_latency_chart_names_missing_keys():
    with pytest.raises(SpecError, match="p99_tpot_s"):
        latency_chart([{"load": 1, "p50_ttft_s": 0.1}])


def test_proofs_chart_ratio_verdict_and_flags():
    from aiworkbook.proofs.result import ProofResult

    results = [
        ProofResult(
            "vram", "cpu", {}, 1.05e9, "B", 1.0e9, "itemised peak", flags=["accounted", "cpu-fallback"]
        ),
        ProofResult("kv", "cpu", {}, 2.0e9, "B", 1.0e9, "kv bytes"),
        ProofResult("roofline", "cpu", {}, 5e10, "B/s"),
    ]
    rows = rows_of(proofs_chart(results))
    measured = {r["proof"]: r for r in rows if r.get("kind") == "measured"}
    assert measured["vram (cpu)"]["relative"] == pytest.approx(results[0].ratio)
    assert measured["vram (cpu)"]["verdict"] == "info (CPU only)"  # a CPU fallback is never a GPU pass
    assert measured["vram (cpu)"]["flags"] == "accounted, cpu-fallback"
    assert measured["kv (cpu)"]["verdict"] == "fail"
    assert measured["roofline (cpu)"]["relative"] is None and measured["roofline (cpu)"]["verdict"] == "info"
    est = [r for r in rows if r.get("kind") == "estimate" and r["relative"] is not None]
    assert {r["relative"] for r in est} == {1.0}
    assert_offline_svg(proofs_chart(results))


def test_telemetry_chart_titles_say_recorded_or_synthetic():
    from aiworkbook.telemetry.export import to_dataframe
    from aiworkbook.telemetry.replay import load_trace, shipped_traces

    header, samples = load_trace(shipped_traces()[0])
    frame = to_dataframe(samples)
    chart = telemetry_chart(frame, "power_w", header=header)
    title = chart.to_dict()["title"]
    assert "synthetic" in title
    rows = rows_of(chart)
    assert [r["value"] for r in rows] == pytest.approx(list(frame["gpu0.power_w"].dropna()))
    assert rows[0]["t_s"] == 0.0
    recorded = {
        **header,
        "source": "recorded",
        "label": None,
        "gpu": "NVIDIA L4",
        "recorded_at": "2026-02-03T10:00:00",
    }
    assert (
        "recorded on NVIDIA L4, 2026-02-03"
        in telemetry_chart(frame, "power_w", header=recorded).to_dict()["title"]
    )
    mem = rows_of(telemetry_chart(samples, "mem_used_bytes", header=header))
    assert mem[0]["value"] == pytest.approx(frame["gpu0.mem_used_bytes"].iloc[0] / GiB)
    assert_offline_svg(chart)


def test_telemetry_chart_unknown_metric_lists_known_ones():
    from aiworkbook.telemetry.replay import load_trace, shipped_traces

    _, samples = load_trace(shipped_traces()[0])
    with pytest.raises(SpecError, match="power_w"):
        telemetry_chart(samples, "no_such_metric")


def test_enable_offline_caches_the_bundle(tmp_path):
    """The offline JavaScript is bundled once and reused by later kernels (same text, from the cache)."""
    import os
    import subprocess
    import sys

    code = (
        "import altair as alt; from aiworkbook.charts.render import enable_offline; enable_offline(); "
        "import hashlib; print(alt.JupyterChart._is_offline, hashlib.sha256(alt.JupyterChart._esm.encode()).hexdigest())"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    runs = [
        subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        ).stdout
        for _ in range(2)
    ]
    (cached,) = list((tmp_path / "aiworkbook").glob("jupyterchart-*.js"))
    import hashlib

    digest = hashlib.sha256(cached.read_text(encoding="utf-8").encode()).hexdigest()
    assert runs[0] == runs[1] == f"True {digest}\n"


def test_encodings_are_channel_objects_never_shorthand_strings():
    """Altair turns a shorthand string given to encode() ("gib:Q", a tooltip's "label:N") into its channel
    class through `from_dict`, which builds its table of every schema class again on each call (several
    ms a string; the sizer's chart had two, on every redraw). The chart builders give channel objects
    (alt.Y("gib:Q"), alt.Tooltip("label:N")), whose spec is the same."""
    import ast

    charts = Path(__file__).resolve().parents[1] / "aiworkbook" / "charts"
    found = []
    for path in sorted(charts.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "encode"
            ):
                for kw in node.keywords:
                    values = kw.value.elts if isinstance(kw.value, ast.List | ast.Tuple) else [kw.value]
                    found += [
                        f"{path.name}:{node.lineno} {kw.arg}={v.value!r}"
                        for v in values
                        if isinstance(v, ast.Constant) and isinstance(v.value, str)
                    ]
    assert found == []
