"""Batch x context heatmap of total memory per GPU (sizing.memory_grid) with the fit frontier: the
largest batch (training) or concurrency (inference) that fits the GPU's budget at each length."""

from __future__ import annotations

from typing import Any

import altair as alt

from aiworkbook.charts.colours import MARK_COLOURS, VERDICT_COLOURS
from aiworkbook.charts.theme import HEIGHT, WIDTH, finish, gib, meaning_scale, tr
from aiworkbook.sizing.capacity import GRID_BATCHES as DEFAULT_BATCHES  # noqa: E402
from aiworkbook.sizing.capacity import GRID_LENGTHS as DEFAULT_LENGTHS  # noqa: E402


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
    """GiB per GPU over batch x length on a colour scale (cividis) for the cells that fit; a cell that
    does not fit is drawn in the does-not-fit colour (never faded into the scale, where a pale cell read
    as its top), and the fit frontier (largest fitting batch per length) as a line of points; the
    legend names both."""
    d = heatmap_data(spec, workload, gpu, batches, lengths, device)
    training = workload.mode != "infer"
    bname = tr("chart.micro_batch", lang) if training else tr("chart.concurrency", lang)
    lname = tr("chart.seq_len", lang) if training else tr("chart.context_tokens", lang)
    x = alt.X("length:O", title=lname)
    y = alt.Y("batch:O", title=bname, sort="descending")
    tooltip = [
        alt.Tooltip("batch:O", title=bname),
        alt.Tooltip("length:O", title=lname),
        alt.Tooltip("gib:Q", title="GiB", format=",.2f"),
        alt.Tooltip("fits:N", title=tr("chart.fits", lang)),
    ]
    no_fit = tr("verdict.does-not-fit", lang)
    frontier_said = tr("chart.max", lang, what=bname)
    marks = meaning_scale(
        [(no_fit, VERDICT_COLOURS["does-not-fit"]), (frontier_said, MARK_COLOURS["fit frontier"])]
    )
    fit_cells = [c for c in d["cells"] if c["fits"]]
    over = [{**c, "key": no_fit} for c in d["cells"] if not c["fits"]]
    gib_scale = alt.Scale(scheme="cividis", type="log")
    cells = (
        alt.Chart(alt.Data(values=fit_cells))
        .mark_rect()
        .encode(
            x=x,
            y=y,
            color=alt.Color("gib:Q", scale=gib_scale, title=tr("chart.gib_per_gpu", lang)),
            tooltip=tooltip,
        )
    )
    outside = (
        alt.Chart(alt.Data(values=over))
        .mark_rect()
        .encode(x=x, y=y, color=alt.Color("key:N", scale=marks, title=None), tooltip=tooltip)
    )
    frontier = (
        alt.Chart(alt.Data(values=[{**f, "key": frontier_said} for f in d["frontier"]]))
        .mark_line(point=True, strokeWidth=2)
        .encode(
            x=x,
            y=y,
            color=alt.Color("key:N", scale=marks, title=None),
            tooltip=[
                alt.Tooltip("length:O", title=lname),
                alt.Tooltip("batch:O", title=frontier_said),
            ],
        )
    )
    title = tr("chart.heatmap_title", lang, model=spec.name, gpu=d["gpu"])
    layered = alt.layer(cells, alt.layer(outside, frontier)).resolve_scale(color="independent")
    return finish(layered.properties(width=WIDTH, height=HEIGHT), title, lang)
