"""One colour per meaning, across every chart and widget: a colour a viewer learns on one chart (grey is
"info", vermillion "fail") never means something else on another. Each meaning is a key here; a chart
asks for the colour of a meaning and shows that meaning in its legend (tests/test_chart_colours.py walks
every chart's spec and holds each colour to one meaning).

The verdicts keep Okabe & Ito's colour-blind-safe hues (2008); the rest come from Paul Tol's muted,
light and vibrant schemes (https://personal.sron.nl/~pault/), each hue used once. No altair import, so a
widget reads a verdict's colour without loading the chart library.
"""

from __future__ import annotations

#: Verdict -> colour: pass blue, fail vermillion (not red/green), the rest neutral.
VERDICT_COLOURS: dict[str, str] = {
    "pass": "#0072B2",
    "fail": "#D55E00",
    "info": "#999999",
    "info (CPU only)": "#BBBBBB",
    "fail (CPU only)": "#E8A07A",
    "does-not-fit": "#CC79A7",
    "interrupted": "#E69F00",
    "error": "#000000",
    "invalid": "#56B4E9",
}

#: What a chart draws besides verdicts, each in a colour no other meaning uses.
MARK_COLOURS: dict[str, str] = {
    "estimate": "#DDCC77",  # sand: what sizing predicted (a proof's estimate bar and its 1.0 line)
    "rule of thumb": "#A6761D",  # brown: the rule-of-thumb bar beside the itemised one
    "budget": "#332288",  # indigo: the GPU's memory budget line
    "peak": "#661100",  # dark brown: a training step's peak, below the stacked sum
    "fit frontier": "#117733",  # green: the largest batch that fits at each length
    "knee": "#AA4499",  # purple: the load past which latency climbs without throughput
    "throughput": "#44AA99",  # teal: output tokens per second against load
}

#: Memory components: one hue each, the same in every chart (training and inference alike).
COMPONENT_COLOURS: dict[str, str] = {
    "weights": "#88CCEE",
    "gradients": "#999933",
    "optimizer": "#882255",
    "master_weights": "#CC6677",
    "activations": "#6699CC",
    "logits": "#EE8866",
    "kv_cache": "#009E73",
    "workspace": "#FFAABB",
    "cuda_context": "#F0E442",
    "reserve": "#BBCC33",
}

#: Latency percentiles.
PERCENTILE_COLOURS: dict[str, str] = {"p50": "#004488", "p95": "#DDAA33", "p99": "#BB5566"}

#: Open-ended series (a GPU's line, a dtype's roof), in order; a chart with more series than hues
#: repeats them, the legend telling them apart.
SERIES_COLOURS: tuple[str, ...] = ("#0077BB", "#33BBEE", "#EE7733", "#CC3311", "#EE3377")

#: Every fixed meaning and its colour (the test holds the values unique).
MEANINGS: dict[str, str] = {
    **{f"verdict.{k}": v for k, v in VERDICT_COLOURS.items()},
    **{f"mark.{k}": v for k, v in MARK_COLOURS.items()},
    **{f"component.{k}": v for k, v in COMPONENT_COLOURS.items()},
    **{f"percentile.{k}": v for k, v in PERCENTILE_COLOURS.items()},
    **{f"series.{i}": v for i, v in enumerate(SERIES_COLOURS)},
}

ESTIMATE_COLOUR = MARK_COLOURS["estimate"]


def series(names: list[str] | tuple[str, ...]) -> list[str]:
    """The colours of open-ended series `names`, in order."""
    return [SERIES_COLOURS[i % len(SERIES_COLOURS)] for i in range(len(names))]
