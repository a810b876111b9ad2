"""KVPlanner: how many sequences of a context fit the KV budget an engine leaves, the batch x context
heatmap with its fit frontier, and the engine arguments that reproduce the plan (vLLM)."""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W
import traitlets

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg

from .base import Background, BackgroundComposite, chart_view, dropdown, value_html, where_html
from .form import FieldText, control, read, schema, set_number

FIELDS = ("model", "gpu", "engine", "kv_dtype", "context", "concurrency", "gpu_memory_utilization", "tp")
#: what the planner takes from a sizer that sizes serving, beside the model and GPU (its context is the
#: sizer's prompt + new tokens); a training sizer has no KV shape to give, and the planner says so
FOLLOWED = ("engine", "kv_dtype", "context", "concurrency", "tp")
#: each field's label key (widgets/i18n.py) for the sentence that says what the planner follows
LABELS = {"model": "model", "gpu": "gpu", "engine": "engine", "kv_dtype": "kv_dtype", "context": "context",
          "concurrency": "concurrency", "tp": "tp"}  # fmt: skip


def check_context(spec: Any, context: Any, lang: str = "en") -> None:
    """A context beyond the model's positions is refused (SpecError naming the allowed range)."""
    from .i18n import label

    top = int(spec.max_position_embeddings)
    if isinstance(context, int) and not isinstance(context, bool) and context > top:
        raise SpecError("context", context, label("beyond_positions", lang, max=f"{top:,}", model=spec.name))


def plan(inputs: dict[str, Any], lang: str = "en") -> dict[str, Any]:
    """The planner's figures, all from aiworkbook.sizing.capacity (and the heatmap's data)."""
    from aiworkbook.sizing import Workload, capacity
    from aiworkbook.sizing.capacity import GRID_BATCHES as DEFAULT_BATCHES
    from aiworkbook.sizing.capacity import GRID_LENGTHS as DEFAULT_LENGTHS
    from aiworkbook.sizing.memory import kv_bytes
    from aiworkbook.specs import get_gpu, load_model

    spec = load_model(inputs["model"])
    gpu = get_gpu(inputs["gpu"])
    ctx = inputs["context"]
    check_context(spec, ctx, lang)
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
    kv_budget = capacity.kv_budget(spec, w, gpu)
    fit = capacity.fits(spec, w, gpu)
    # the smallest tensor-parallel size that holds it, when the box's size does not
    tp_needed = w.tp if fit["fits"] else capacity.gpus_needed(spec, w, gpu)
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
        "kv_budget_bytes": kv_budget,
        "fits": fit,
        "tp_needed": tp_needed,
        "vllm_args": _vllm_command(spec, w, gpu, lang),
    }


def _vllm_command(spec: Any, w: Any, gpu: Any, lang: str = "en") -> str:
    """`vllm serve` arguments from aiworkbook.profile.snippets (max-num-seqs = the KV capacity), or why
    there are none (e.g. the context does not fit once). Never arguments that contradict the controls:
    where the snippet would raise the tensor-parallel size, it says to set the control instead."""
    from aiworkbook.profile.snippets import vllm_args

    from .i18n import label

    try:
        args = vllm_args(spec, w, gpu, mig=False)
    except SpecError as exc:
        return f"# {exc}"
    if args.tensor_parallel_size != w.tp:
        return label("args_need_tp", lang, box=w.tp, tp=args.tensor_parallel_size)
    return args.command()


class KVPlanner(BackgroundComposite):
    """`value`: {model, gpu, engine, kv_dtype, context, concurrency, gpu_memory_utilization, tp} (a dict
    of its fields; observable and linkable, e.g. `ipywidgets.dlink` from a ModelSizer's `value`);
    `result`: max_concurrency, max_context, kv_per_seq_bytes, kv_budget_bytes, fits, vllm_args. The
    workload controls and their bounds come from `Workload.fields()` (widgets/form.py)."""

    css = "kv-planner"
    marks_stale = True
    value_takes = "a dict of " + ", ".join(FIELDS)

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
        from aiworkbook.specs import list_gpus, list_presets

        self._bg = Background() if background else None
        t = self.t
        self.controls: dict[str, W.ValueWidget] = {
            "model": dropdown(list_presets(), model, t("model")),
            "gpu": dropdown([g.name for g in list_gpus()], gpu, t("gpu")),
            # the workload's fields from Workload.fields(): its choices, its bounds (parse_field)
            "engine": control("engine", engine, t("engine")),
            "kv_dtype": control("kv_dtype", "bf16", t("kv_dtype")),
            "context": control("context", context, t("context"), optional=False),
            "concurrency": control("concurrency", concurrency, t("concurrency")),
            "gpu_memory_utilization": control("gpu_memory_utilization", 0.9, t("utilization")),
            "tp": control("tp", 1, t("tp")),
        }
        self.headline = value_html("")
        self.headline.add_class("aiwb-headline")  # marked, not faded, while the figures are stale
        self.where = where_html(lang=lang)
        self.follows = W.HTML("")  # what the planner takes from a sizer it follows, and what it does not
        self.follows.add_class("aiwb-follows")
        self.figures = value_html("")
        self.args = W.HTML("")
        self.args.add_class("aiwb-figures")  # faded with the chart while stale
        self.chart = chart_view(later=True)  # altair loads once the page's cells have run (draw_later)
        for c in self.controls.values():
            c.observe(self.guarded(self._changed), names="value")
        form = W.GridBox(
            list(self.controls.values()),
            layout=W.Layout(grid_template_columns="repeat(2, minmax(220px, 1fr))"),
        )
        self.children = [
            self.where,
            self.follows,
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
        """The controls' values; typed numbers parsed by the library (a SpecError names the field
        and its range, and nothing is computed from it)."""
        out = read(self.controls)
        if out["context"] is None:  # the planner always sizes a context
            raise SpecError("context", "", Msg("allowed.int_range", low=1, high=schema()["context"]["high"]))
        return out

    def _changed(self, change: dict[str, Any] | None = None) -> None:
        if self._syncing:
            return
        inputs = self._inputs()
        with self.syncing():
            self.value = inputs
        from aiworkbook.specs import load_model

        check_context(load_model(inputs["model"]), inputs["context"], self.lang)  # refused now, not used
        self.status.value = html.escape(self.t("working"))
        lang = self.lang
        if self._bg is None:
            self._apply(plan(inputs, lang))
        else:
            self._bg.submit(lambda: plan(inputs, lang), self.guarded(self._apply), self.show_error)

    def follow(self, sizer: Any) -> traitlets.dlink:
        """Follow a ModelSizer: its model and GPU (a preset model; a pasted one is not a planner
        choice) and, when it sizes serving, its engine, KV cache dtype, context (prompt + new tokens),
        concurrency and tensor parallel, so the two show one workload; a line above the planner says
        what it follows and what stays its own (a training sizer has no KV shape to give).

        Returns the traitlets link: `link.unlink()` cuts it, and the planner keeps its own choices::

            planner = KVPlanner()
            link = planner.follow(sizer)
        """

        def pick(given: dict[str, Any]) -> dict[str, Any]:
            # the sizer's whole value: a notebook may set part of it, which the sizer completes first
            v = {**given, **sizer.value}
            out = {}
            if v.get("model") in self.controls["model"].options:
                out["model"] = v["model"]
            if v.get("gpu") in self.controls["gpu"].options:
                out["gpu"] = v["gpu"]
            serving = v.get("mode") == "infer"
            if serving:
                shape = {**v, "context": v.get("context") or _context(v)}
                out.update({k: shape[k] for k in FOLLOWED if shape.get(k) is not None})
            self._say_follows(out, serving)
            return out or dict(self.value)

        return _Follow((sizer, "value"), (self, "value"), transform=pick, cut=lambda: self._say_follows(None))

    def _say_follows(self, taken: dict[str, Any] | None, serving: bool = True) -> None:
        """The line above the planner: the fields it takes from the sizer and those it keeps (None:
        it follows nothing, the link is cut)."""
        if taken is None:
            self.follows.value = ""
            return
        names = [k for k in LABELS if k in taken]
        own = [k for k in LABELS if k not in taken]
        said = Msg("kv.follows", fields=", ".join(self.t(LABELS[k]) for k in names)).render(self.lang)
        if own:
            said += " " + Msg("kv.keeps", fields=", ".join(self.t(LABELS[k]) for k in own)).render(self.lang)
        if not serving:
            said += " " + Msg("kv.sizer_trains").render(self.lang)
        self.follows.value = (
            f'<div class="aiwb-explain" style="font-size:90%;color:#444">{html.escape(said)}</div>'
        )

    def _apply_value(self, v: dict[str, Any]) -> None:
        for k in v:
            if k not in self.controls:
                raise SpecError("value", k, ", ".join(FIELDS))
        changed = False
        with self.syncing():
            for k, x in v.items():
                c = self.controls[k]
                before = c.value
                if isinstance(c, FieldText):
                    set_number(c, k, x)  # the library's bounds and message
                elif x not in c.options:
                    raise SpecError(k, x, ", ".join(map(str, c.options)))
                else:
                    c.value = x
                changed = changed or c.value != before
        if changed or self.error:  # an error shown: the same inputs are computed again
            self.guarded(self._changed)()  # refused by the library: shown, the controls keep the inputs
        else:  # the same inputs (e.g. follow() linking a sizer on the same model and GPU): no new plan
            with self.syncing():
                self.value = self._inputs()

    def _apply(self, p: dict[str, Any]) -> None:
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
            f"{self.t('fits') if p['fits']['fits'] else self.t('does_not_fit')}" + self._tp_hint(p)
        )
        args = p["vllm_args"]
        self.args.value = f"<b>{html.escape(self.t('vllm_args'))}</b><pre>{html.escape(args)}</pre>"
        self.chart.draw_later(  # altair loads after the page's cells (base.ChartView.draw_later)
            self.guarded(lambda c: c.heatmap_chart(spec, w, p["gpu"], p["batches"], p["lengths"], lang=lang))
        )
        self.status.value = ""
        self.error = ""
        self.result = {
            "max_concurrency": p["max_concurrency"],
            "max_context": p["max_context"],
            "kv_per_seq_bytes": p["kv_per_seq_bytes"],
            "kv_budget_bytes": p["kv_budget_bytes"],
            "fits": p["fits"]["fits"],
            "vllm_args": args,
            "tp_needed": p["tp_needed"],
        }

    def _tp_hint(self, p: dict[str, Any]) -> str:
        """A negative KV budget means the weights alone overflow: say which tensor-parallel size fits."""
        if p["kv_budget_bytes"] >= 0:
            return ""
        box, gpu = p["workload"].tp, p["gpu"].name
        words = (
            self.t("raise_tp", box=box, gpu=gpu, tp=p["tp_needed"])
            if p["tp_needed"] is not None
            else self.t("raise_tp_none", box=box, gpu=gpu)
        )
        return f'<br><span class="aiwb-hint" style="color:#D55E00">{html.escape(words)}</span>'


def _context(v: dict[str, Any]) -> int | None:
    """A sizer's serving context: prompt + new tokens (the Workload's context_len)."""
    seq, new = v.get("seq_len"), v.get("new_tokens")
    return int(seq) + int(new or 0) if seq is not None else None


class _Follow(traitlets.dlink):
    """A directional link that also says when it is cut (the planner's line goes)."""

    def __init__(self, source: Any, target: Any, transform: Any, cut: Any) -> None:
        self._cut = cut
        super().__init__(source, target, transform=transform)

    def unlink(self) -> None:
        super().unlink()
        self._cut()
