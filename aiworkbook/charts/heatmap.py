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
    """Cells (batch, length, bytes, fits) and the frontier from `sizing.capacity.fit_grid` (the
    verdict `aiworkbook size` prints at each cell's shape), with each cell's GiB for the axis."""
    from aiworkbook.sizing import capacity

    d = capacity.fit_grid(spec, workload, gpu, batches, lengths, device)
    d["cells"] = [{**c, "gib": gib(c["bytes"])} for c in d["cells"]]
    return d


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
