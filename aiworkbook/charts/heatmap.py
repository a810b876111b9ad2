"""Batch x context heatmap of total memory per GPU (sizing.memory_grid) with the fit frontier: the
largest batch (training) or concurrency (inference) that fits the GPU's budget at each length."""

from __future__ import annotations

from typing import Any

import altair as alt

from aiworkbook.charts.theme import HEIGHT, WIDTH, finish, gib, tr

DEFAULT_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
DEFAULT_LENGTHS = (512, 1024, 2048, 4096, 8192, 16384, 32768)


def heatmap_data(
    spec: Any, workload: Any, gpu: Any, batches=DEFAULT_BATCHES, lengths=DEFAULT_LENGTHS, device: str = "cuda"
) -> dict[str, Any]:
    """Cells (batch, length, bytes, fits) and the frontier, all from the sizing library: totals from
    memory_grid, fits from capacity.fits at each cell's shape (the verdict `aiworkbook size` prints)."""
    from aiworkbook.sizing import capacity, memory_grid

    gpu = capacity._gpu(gpu)
    batches, lengths = [int(b) for b in batches], [int(s) for s in lengths]
    grid = memory_grid(spec, workload, batches, lengths, device)
    cells = []
    for i, b in enumerate(batches):
        for j, s in enumerate(lengths):
            ok = bool(capacity._kv_fits_at(spec, workload, gpu, b, s, device)) if _trtllm(workload) else None
            if ok is None:
                ok = int(grid[i, j]) <= capacity.budget(workload, gpu)
            cells.append(
                {"batch": b, "length": s, "bytes": int(grid[i, j]), "gib": gib(grid[i, j]), "fits": ok}
            )
    frontier = []
    for s in lengths:
        fitting = [c["batch"] for c in cells if c["length"] == s and c["fits"]]
        if fitting:
            frontier.append({"length": s, "batch": max(fitting)})
    return {
        "cells": cells,
        "frontier": frontier,
        "gpu": gpu.name,
        "budget_bytes": capacity.budget(workload, gpu),
    }


def _trtllm(w: Any) -> bool:
    return w.engine == "trtllm" and not w.training


def heatmap_chart(
    spec: Any,
    workload: Any,
    gpu: Any,
    batches=DEFAULT_BATCHES,
    lengths=DEFAULT_LENGTHS,
    device: str = "cuda",
    lang: str = "en",
) -> alt.LayerChart:
    """GiB per GPU over batch x length; cells that do not fit are hatched out by opacity, and the fit
    frontier (largest fitting batch per length) is drawn as a line of points."""
    d = heatmap_data(spec, workload, gpu, batches, lengths, device)
    training = workload.mode != "infer"
    bname = tr("chart.micro_batch", lang) if training else tr("chart.concurrency", lang)
    lname = tr("chart.seq_len", lang) if training else tr("chart.context_tokens", lang)
    x = alt.X("length:O", title=lname)
    y = alt.Y("batch:O", title=bname, sort="descending")
    cells = (
        alt.Chart(alt.Data(values=d["cells"]))
        .mark_rect()
        .encode(
            x=x,
            y=y,
            color=alt.Color(
                "gib:Q", scale=alt.Scale(scheme="cividis", type="log"), title=tr("chart.gib_per_gpu", lang)
            ),
            opacity=alt.condition(alt.datum.fits, alt.value(1.0), alt.value(0.25)),
            tooltip=[
                alt.Tooltip("batch:O", title=bname),
                alt.Tooltip("length:O", title=lname),
                alt.Tooltip("gib:Q", title="GiB", format=",.2f"),
                alt.Tooltip("fits:N", title=tr("chart.fits", lang)),
            ],
        )
    )
    frontier = (
        alt.Chart(alt.Data(values=d["frontier"]))
        .mark_line(point=True, color="#D55E00", strokeWidth=2)
        .encode(
            x=x,
            y=y,
            tooltip=[
                alt.Tooltip("length:O", title=lname),
                alt.Tooltip("batch:O", title=tr("chart.max", lang, what=bname)),
            ],
        )
    )
    title = tr("chart.heatmap_title", lang, model=spec.name, gpu=d["gpu"])
    return finish(alt.layer(cells, frontier).properties(width=WIDTH, height=HEIGHT), title, lang)
