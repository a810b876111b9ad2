"""One colour per meaning across every chart (issue 33): the proofs chart's estimate bar was the legend's
"info" grey and not in its legend; black meant "rule of thumb" in an inference memory chart and "CUDA
context" in a training one (colours went by position); faded heatmap cells read as the top of the
scale. This walks every chart's Vega-Lite spec, in English and German, and holds each drawn colour to
one meaning (aiworkbook.charts.colours), every mark's colour to a scale with a legend, and a memory
component to the same colour in training and inference."""

from __future__ import annotations

from typing import Any

import pytest

from aiworkbook.charts import heatmap_chart, latency_chart, memory_chart, proofs_chart, roofline_chart
from aiworkbook.charts.colours import COMPONENT_COLOURS, ESTIMATE_COLOUR, MEANINGS, VERDICT_COLOURS
from aiworkbook.charts.telemetry import series_chart
from aiworkbook.charts.theme import component_label
from aiworkbook.sizing import Workload, estimate
from aiworkbook.specs import get_gpu, load_model

OUTLINE = "#FFFFFF"  # a white outline around a point separates it from the line under it; no meaning
DRAWN = {"bar", "rect", "line", "rule", "tick", "point", "area", "circle", "square", "arc", "trail"}


def _charts(lang: str) -> dict[str, Any]:
    from aiworkbook.proofs.roofline import roofline_chart_data, workload_point

    spec = load_model("llama-3-8b")
    infer = Workload(mode="infer", concurrency=8, seq_len=4096, new_tokens=512)
    train = Workload(mode="train", batch=2, seq_len=2048)
    lat = [
        {
            "load": n,
            **{
                f"{p}_{m}_s": 0.01 * n * k
                for k, p in enumerate(("p50", "p95", "p99"), 1)
                for m in ("ttft", "tpot")
            },
            "throughput_tok_s": 100.0 * n,
        }
        for n in (1, 2, 4, 8)
    ]
    proofs = [
        {"proof": "vram", "predicted": 10, "measured": 11, "ratio": 1.1, "verdict": "pass", "device": "cuda"},
        {"proof": "kv", "predicted": 10, "measured": 20, "ratio": 2.0, "verdict": "fail", "device": "cuda"},
        {
            "proof": "roofline",
            "predicted": 5,
            "measured": 5,
            "ratio": 1.0,
            "verdict": "info",
            "device": "cpu",
        },
    ]
    point = workload_point(spec, batch=4, context=2048)
    roof = roofline_chart_data(get_gpu("H100-SXM"), point, dtypes=["fp8", "bf16"], label="llama-3-8b")
    series = [
        {"t_s": float(t), "series": f"gpu{g}", "value": 100.0 + g, "phase": ""}
        for t in range(3)
        for g in range(3)
    ]
    return {
        "memory infer": memory_chart(estimate(spec, infer, gpu="H100-SXM"), lang=lang),
        "memory train": memory_chart(estimate(spec, train, gpu="H100-SXM"), lang=lang),
        "heatmap": heatmap_chart(spec, infer, "H100-SXM", (1, 8, 256), (1024, 32768), lang=lang),
        "latency": latency_chart(lat, knee=4, lang=lang),
        "proofs": proofs_chart(proofs, lang=lang),
        "roofline": roofline_chart(roof, lang=lang),
        "series": series_chart(series, "power_w", "live", lang=lang),
    }


def _units(node: Any) -> list[dict[str, Any]]:
    """Every single-view spec (one with a mark) under a layered or concatenated spec."""
    if isinstance(node, dict):
        here = [node] if "mark" in node else []
        return here + [u for v in node.values() for u in _units(v)]
    if isinstance(node, list):
        return [u for v in node for u in _units(v)]
    return []


def _pairs(spec: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(mark type, legend words, colour) of every colour a chart draws; a literal mark colour fails."""
    out = []
    for unit in _units(spec):
        mark = unit["mark"] if isinstance(unit["mark"], dict) else {"type": unit["mark"]}
        kind = mark["type"]
        if kind not in DRAWN:
            continue
        for prop in ("color", "fill"):
            assert prop not in mark, (
                f"a {kind} with a literal {prop} {mark[prop]}: no legend says what it means"
            )
        if "stroke" in mark:
            assert mark["stroke"] == OUTLINE and kind == "point", f"a {kind} stroked {mark['stroke']}"
        colour = unit.get("encoding", {}).get("color")
        assert colour is not None, f"a {kind} drawn in the default colour, outside any legend"
        assert colour.get("legend", {}) is not None, f"a {kind} whose colour has no legend"
        scale = colour.get("scale", {})
        if "scheme" in scale:  # a quantitative scale (GiB): its gradient is its legend
            assert colour["type"] == "quantitative"
            continue
        assert len(scale["domain"]) == len(scale["range"])
        out += [(kind, str(w), c.upper()) for w, c in zip(scale["domain"], scale["range"], strict=True)]
    return out


def test_each_meaning_has_its_own_colour():
    colours = [c.upper() for c in MEANINGS.values()]
    assert len(colours) == len(set(colours)), [c for c in colours if colours.count(c) > 1]
    assert ESTIMATE_COLOUR != VERDICT_COLOURS["info"]  # the grey


@pytest.mark.parametrize("lang", ["en", "de"])
def test_every_chart_draws_each_colour_with_one_meaning_in_its_legend(lang):
    meaning_of = {c.upper(): m for m, c in MEANINGS.items()}
    said: dict[str, set[str]] = {}  # meaning -> the legend words it was shown with
    for name, chart in _charts(lang).items():
        pairs = _pairs(chart.to_dict())
        assert pairs or name == "heatmap", name
        for _, words, colour in pairs:
            assert colour in meaning_of, f"{name}: {colour} ({words}) is no meaning's colour"
            said.setdefault(meaning_of[colour], set()).add(words)
        within = {}
        for _, words, colour in pairs:  # in one chart, one colour, one legend entry
            assert within.setdefault(colour, words) == words, (name, colour, within[colour], words)
    for meaning, words in said.items():  # a fixed meaning keeps its words across charts
        if not meaning.startswith(("series.", "mark.rule of thumb")):
            assert len(words) == 1, (meaning, words)


def test_a_component_keeps_its_colour_in_training_and_inference():
    charts = _charts("en")
    for name in ("memory infer", "memory train"):
        pairs = {words: colour for _, words, colour in _pairs(charts[name].to_dict())}
        for component, colour in COMPONENT_COLOURS.items():
            if component_label(component) in pairs:
                assert pairs[component_label(component)] == colour.upper(), (name, component)
    train = {w: c for _, w, c in _pairs(charts["memory train"].to_dict())}
    infer = {w: c for _, w, c in _pairs(charts["memory infer"].to_dict())}
    rule = [c for w, c in infer.items() if w.startswith("rule of thumb")]
    assert rule and rule[0] != train[component_label("cuda_context")]  # the black


def test_the_heatmap_draws_cells_that_do_not_fit_in_their_own_colour_not_faded():
    spec = _charts("en")["heatmap"].to_dict()
    assert "opacity" not in str(spec)
    pairs = {w: c for _, w, c in _pairs(spec)}
    assert pairs["does not fit"] == VERDICT_COLOURS["does-not-fit"].upper()
    assert "max concurrency" in pairs  # the frontier, named in the legend


def test_the_estimate_bar_and_its_line_are_in_the_legend():
    pairs = _pairs(_charts("en")["proofs"].to_dict())
    assert ("bar", "estimate", ESTIMATE_COLOUR.upper()) in pairs
    assert ("rule", "estimate", ESTIMATE_COLOUR.upper()) in pairs
