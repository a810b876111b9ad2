"""KVPlanner: how many sequences of a context fit the KV budget an engine leaves, the batch x context
heatmap with its fit frontier, and the engine arguments that reproduce the plan (vLLM)."""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W
import traitlets

from aiworkbook.errors import SpecError

from .base import Background, Composite, chart_view, dropdown, value_html

FIELDS = ("model", "gpu", "engine", "kv_dtype", "context", "concurrency", "gpu_memory_utilization", "tp")


def plan(inputs: dict[str, Any]) -> dict[str, Any]:
    """The planner's figures, all from aiworkbook.sizing.capacity (and the heatmap's data)."""
    from aiworkbook.charts.heatmap import DEFAULT_BATCHES, DEFAULT_LENGTHS
    from aiworkbook.sizing import Workload, capacity
    from aiworkbook.sizing.memory import kv_bytes
    from aiworkbook.specs import get_gpu, load_model

    spec = load_model(inputs["model"])
    gpu = get_gpu(inputs["gpu"])
    ctx = inputs["context"]
    w = Workload(
        mode="infer",
        seq_len=ctx,
        context=ctx,
        concurrency=inputs["concurrency"],
        engine=inputs["engine"],
        kv_dtype=inputs["kv_dtype"],
        gpu_memory_utilization=inputs["gpu_memory_utilization"],
        tp=inputs["tp"],
    )
    w.check_against(spec)
    lengths = sorted({*(s for s in DEFAULT_LENGTHS if s <= spec.max_position_embeddings), ctx})
    return {
        "spec": spec,
        "workload": w,
        "gpu": gpu,
        "lengths": lengths,
        "batches": list(DEFAULT_BATCHES),
        "max_concurrency": capacity.max_concurrency(spec, w, gpu, context=ctx),
        "max_context": capacity.max_context(spec, w, gpu),
        "kv_per_seq_bytes": int(kv_bytes(spec, w, 1, ctx)),
        "kv_budget_bytes": capacity.kv_budget(spec, w, gpu),
        "fits": capacity.fits(spec, w, gpu),
        "vllm_args": _vllm_command(spec, w, gpu),
    }


def _vllm_command(spec: Any, w: Any, gpu: Any) -> str:
    """`vllm serve` arguments from aiworkbook.profile.snippets (max-num-seqs = the KV capacity), or why
    there are none (e.g. the context does not fit once)."""
    from aiworkbook.profile.snippets import vllm_args

    try:
        return vllm_args(spec, w, gpu, mig=False).command()
    except SpecError as exc:
        return f"# {exc}"


class KVPlanner(Composite):
    """`value`: {model, gpu, engine, kv_dtype, context, concurrency, gpu_memory_utilization, tp};
    `result`: max_concurrency, max_context, kv_per_seq_bytes, kv_budget_bytes, fits, vllm_args."""

    css = "kv-planner"
    value = traitlets.Dict()

    def __init__(
        self,
        model: str = "llama-3-8b",
        gpu: str = "H100-SXM",
        context: int = 8192,
        concurrency: int = 32,
        engine: str = "vllm",
        lang: str = "en",
        background: bool = True,
    ) -> None:
        super().__init__(lang=lang)
        from aiworkbook.sizing.workload import ENGINES
        from aiworkbook.specs import list_gpus, list_presets
        from aiworkbook.units import KV_DTYPES

        self._bg = Background() if background else None
        self._syncing = False
        t = self.t
        self.controls: dict[str, W.ValueWidget] = {
            "model": dropdown(list_presets(), model, t("model")),
            "gpu": dropdown([g.name for g in list_gpus()], gpu, t("gpu")),
            "engine": dropdown(ENGINES, engine, t("engine")),
            "kv_dtype": dropdown(KV_DTYPES, "bf16", t("kv_dtype")),
            "context": W.BoundedIntText(value=context, min=1, max=10_000_000, description=t("context")),
            "concurrency": W.BoundedIntText(
                value=concurrency, min=1, max=1_000_000, description=t("concurrency")
            ),
            "gpu_memory_utilization": W.BoundedFloatText(
                value=0.9,
                min=0.05,
                max=1.0,
                step=0.01,
                description=t("utilization"),
                style={"description_width": "initial"},
            ),
            "tp": W.BoundedIntText(value=1, min=1, max=64, description=t("tp")),
        }
        self.headline = value_html("")
        self.figures = value_html("")
        self.args = W.HTML("")
        self.chart = chart_view()
        for c in self.controls.values():
            c.observe(self.guarded(self._changed), names="value")
        form = W.GridBox(
            list(self.controls.values()),
            layout=W.Layout(grid_template_columns="repeat(2, minmax(220px, 1fr))"),
        )
        self.children = [
            self.headline,
            self.error_area,
            self.status,
            form,
            self.figures,
            self.chart,
            self.args,
        ]
        self.guarded(self._changed)()
        self.ready()

    def _inputs(self) -> dict[str, Any]:
        return {k: c.value for k, c in self.controls.items()}

    def _changed(self, change: dict[str, Any] | None = None) -> None:
        if self._syncing:
            return
        inputs = self._inputs()
        self._syncing = True
        try:
            self.value = inputs
        finally:
            self._syncing = False
        self.status.value = html.escape(self.t("working"))
        if self._bg is None:
            self._apply(plan(inputs))
        else:
            self._bg.submit(lambda: plan(inputs), self.guarded(self._apply), self.show_error)

    @traitlets.observe("value")
    def _value_set(self, change: dict[str, Any]) -> None:
        if not self._syncing:
            self.guarded(self._apply_value)(change["new"])

    def _apply_value(self, v: Any) -> None:
        if not isinstance(v, dict):
            raise SpecError("value", type(v).__name__, "a dict of " + ", ".join(FIELDS))
        for k in v:
            if k not in self.controls:
                raise SpecError("value", k, ", ".join(FIELDS))
        self._syncing = True
        try:
            for k, x in v.items():
                c = self.controls[k]
                if isinstance(c, W.Dropdown):
                    if x not in c.options:
                        raise SpecError(k, x, ", ".join(map(str, c.options)))
                elif isinstance(x, bool) or not isinstance(x, int | float) or not c.min <= x <= c.max:
                    raise SpecError(k, x, f"a number in [{c.min}, {c.max}]")
                elif isinstance(c, W.BoundedIntText) and not isinstance(x, int):
                    raise SpecError(k, x, f"an integer in [{c.min}, {c.max}]")
                c.value = x
        finally:
            self._syncing = False
        self._changed()

    def _apply(self, p: dict[str, Any]) -> None:
        from aiworkbook.charts import heatmap_chart
        from aiworkbook.i18n_format import integer
        from aiworkbook.units import fmt_bytes

        lang = self.lang
        w, spec = p["workload"], p["spec"]
        ctx, n = w.context_len, w.concurrency
        self.headline.value = (
            f"<b>{html.escape(self.t('max_concurrency', context=integer(ctx, lang)))}: "
            f"{integer(p['max_concurrency'], lang)}</b>"
        )
        self.figures.value = (
            f"{html.escape(self.t('max_context', n=integer(n, lang)))}: {integer(p['max_context'], lang)}<br>"
            f"{html.escape(self.t('kv_per_seq'))}: {fmt_bytes(p['kv_per_seq_bytes'], lang=lang)}<br>"
            f"{html.escape(self.t('kv_budget'))}: {fmt_bytes(p['kv_budget_bytes'], 'GiB', lang)}<br>"
            f"{integer(n, lang)} × {integer(ctx, lang)}: "
            f"{self.t('fits') if p['fits']['fits'] else self.t('does_not_fit')}"
        )
        args = p["vllm_args"]
        self.args.value = f"<b>{html.escape(self.t('vllm_args'))}</b><pre>{html.escape(args)}</pre>"
        self.chart.chart = heatmap_chart(spec, w, p["gpu"], p["batches"], p["lengths"], lang=lang)
        self.status.value = ""
        self.error = ""
        self.result = {
            "max_concurrency": p["max_concurrency"],
            "max_context": p["max_context"],
            "kv_per_seq_bytes": p["kv_per_seq_bytes"],
            "kv_budget_bytes": p["kv_budget_bytes"],
            "fits": p["fits"]["fits"],
            "vllm_args": args,
        }

    def wait(self, timeout: float = 60.0) -> bool:
        return True if self._bg is None else self._bg.wait(timeout)

    def close(self) -> None:
        if self._bg is not None:
            self._bg.shutdown()
        super().close()
