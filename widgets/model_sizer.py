"""ModelSizer: a model (preset, pasted or uploaded config.json) and a workload in, the estimate out:
the headline verdict, the memory chart with the rule of thumb, the catalogue GPUs it fits on, cost.

Choices are filtered through the library: an option is offered only when `Workload(...)` with it
validates against the model. Training modes add the fine-tuning controls (widgets/finetune.py); host
memory that offloading or a paged optimizer takes is shown beside the GPU's. Recomputing runs on a
worker thread; the results are applied on the kernel's event loop, so typing never blocks the kernel.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg, quoted
from aiworkbook.specs.reader import check_config_size, spec_from_text

from .base import (
    Background,
    BackgroundComposite,
    chart_row,
    chart_view,
    dropdown,
    html_table,
    value_html,
    where_html,
)
from .finetune import FinetuneControls, all_fields
from .form import (
    UNSET,
    NumberText,
    applies,
    choices_in,
    control,
    effective,
    option_of,
    read,
    set_number,
    unset_first,
)

#: Workload fields offered as drop-downs, their choices from aiworkbook.sizing.workload.
CHOICE_FIELDS = (
    "mode",
    "precision",
    "recipe",
    "checkpointing",
    "attention",
    "engine",
    "weights_dtype",
    "kv_dtype",
    "zero",
)
INT_FIELDS = ("batch", "seq_len", "new_tokens", "concurrency", "tp", "dp")
#: The architecture fields of a "model family" form (Hugging Face config.json names).
FAMILY_FIELDS = (
    "num_hidden_layers",
    "hidden_size",
    "num_attention_heads",
    "num_key_value_heads",
    "intermediate_size",
    "vocab_size",
    "max_position_embeddings",
)


def choices() -> dict[str, tuple[Any, ...]]:
    """Each drop-down's choices, from `Workload.fields()` (ZeRO's stages: its bounds)."""
    from .form import schema

    info = schema()
    out = {f: tuple(info[f]["choices"]) for f in CHOICE_FIELDS if f != "zero"}
    out["zero"] = tuple(range(info["zero"]["low"], info["zero"]["high"] + 1))
    return out


def size(spec: Any, inputs: dict[str, Any], gpu: str) -> dict[str, Any]:
    """Everything the sizer shows, from the library: the estimate, the GPUs needed on each catalogue
    GPU (`capacity.per_gpu`), the cheapest of those rows (`capacity.cheapest_of`) and the answer
    (aiworkbook.sizing.answer) the headline renders."""
    from aiworkbook.sizing import Workload, estimate
    from aiworkbook.sizing.answer import answer
    from aiworkbook.sizing.capacity import cheapest_of, cost_basis, per_gpu
    from aiworkbook.sizing.prices import list_provenance
    from aiworkbook.specs import list_gpus

    w = Workload(**inputs)
    est = estimate(spec, w, gpu=gpu)
    fits_on = per_gpu(spec, w)
    ans = answer(spec, w, gpu, rows=fits_on)
    return {
        "estimate": est,
        "fits_on": fits_on,
        "cheapest": cheapest_of(fits_on),
        "basis": cost_basis(spec, w),  # what "lowest cost" ranks by, in words
        "table_prices": list_provenance(list_gpus()),  # where the table's list prices come from
        "answer": ans,
        # what the headline prices: never a set-up that does not fit
        "needs": ans.needs.to_dict(),
    }


def _int(field: str, text: str) -> Any:
    """A typed architecture size as an integer (the config reader checks its range), or a SpecError
    naming the field."""
    try:
        return int(str(text).strip().replace(",", "").replace("_", ""))
    except ValueError:
        raise SpecError(field, text, "an integer") from None


class ModelSizer(BackgroundComposite):
    """`value`: {"model", "gpu", "config"?, and the Workload fields the form offers, fine-tuning ones
    included (those that do not apply to the mode at their defaults)}; `result`: the estimate's JSON
    (`aiworkbook size --json`) plus `fits_on` and `cheapest`. Both are traitlets a notebook can observe
    and link; `value` changes only once the library accepts the inputs. The controls come from
    `Workload.fields()` (widgets/form.py). `wait()` blocks until the newest computation is shown."""

    css = "model-sizer"
    marks_stale = True
    value_takes = "a dict of model, gpu and workload fields"

    def __init__(
        self,
        model: str = "llama-3-8b",
        gpu: str = "H100-SXM",
        lang: str = "en",
        background: bool = True,
        **workload: Any,
    ) -> None:
        super().__init__(lang=lang)
        from aiworkbook.sizing import Workload
        from aiworkbook.specs import list_gpus, list_presets

        self._bg = Background() if background else None
        self._spec: Any = None
        self._before_narrowing: dict[str, Any] = {}
        self._all = choices()
        defaults = Workload(mode="infer", concurrency=8, seq_len=4096, new_tokens=512).to_dict()
        defaults.update(workload)
        t = self.t
        self.source = W.ToggleButtons(
            options=[
                (t("preset"), "preset"),
                (t("family"), "family"),
                (t("pasted"), "pasted"),
                (t("uploaded"), "uploaded"),
            ],
            value="preset",
        )
        self.preset = dropdown(list_presets(), model if model in list_presets() else None, t("preset"))
        self.gpu = dropdown([g.name for g in list_gpus()], gpu, t("gpu"))
        self._main: dict[str, Any] = {}
        for f in (*CHOICE_FIELDS, *INT_FIELDS):  # from Workload.fields(): its choices, its bounds
            self._main[f] = control(f, defaults[f], t(f), self._all.get(f) if f == "zero" else None)
        self.finetune = FinetuneControls(t, defaults, on_build=lambda c: self._adopt(self.finetune.box, c))
        # the family and config entries, folded away, are built when opened or first used (_sections)
        self._sections: dict[str, dict[str, Any]] = {}
        self._folds = [W.VBox([]), W.VBox([])]
        self.headline = value_html("")
        self.headline.add_class("aiwb-headline")  # marked, not faded, while the figures are stale
        self.where = where_html(lang=lang)
        self.chart = chart_view(later=True)  # altair loads once the page's cells have run (draw_later)
        self.rule = W.HTML("")
        self.fits_table = W.HTML("")
        self.cost = value_html("")
        self.host = W.HTML("", layout=W.Layout(display="none"))
        for figures in (self.rule, self.fits_table, self.host):  # faded with the chart while stale
            figures.add_class("aiwb-figures")
        self.host.add_class("aiwb-host")
        for w in (self.source, self.preset, self.gpu, *self._main.values()):
            w.observe(self.guarded(self._changed), names="value")
        self._lay_out(list(self._main.values()))
        self.guarded(self._changed)()
        self.ready()

    @property
    def controls(self) -> dict[str, Any]:
        """Each Workload field's control by name, the fine-tuning ones included (built on first use)."""
        return {**self._main, **self.finetune.controls}

    # -- the sections built on first use ------------------------------------------------------
    # The fine-tuning section (FinetuneControls) and the family and config entries are 94 of the
    # sizer's 185 widget models, none visible on an inference page until the viewer picks a training
    # mode or opens a fold: each is built then, or when Python first touches it, so the first render
    # sends half the models (benchmarks/bench_dashboard_startup.py).

    def _adopt(self, box: Any, widgets: dict[str, Any]) -> None:
        """Wire widgets built after the page: their changes re-run the sizer, their choices speak
        the widget's language (as `ready()` does for the rest)."""
        for w in widgets.values():
            w.observe(self.guarded(self._changed), names="value")
        from .base import localize_choices

        localize_choices(box, self.lang)

    def _section(self, name: str) -> dict[str, Any]:
        """The family (`family`, the architecture boxes) or config (`config`, `upload`) entries."""
        if name not in self._sections:
            t = self.t
            if name == "family":
                from aiworkbook.paths import data_dir
                from aiworkbook.specs import FAMILIES
                from aiworkbook.specs.reader import load_config_file

                start = load_config_file(data_dir() / "models" / "llama-3-8b" / "config.json")
                # architecture sizes: plain text boxes, checked by the config reader (spec_from_config)
                fields = {k: NumberText(start[k], k) for k in FAMILY_FIELDS}
                made = {"family": dropdown(FAMILIES, "llama", t("family")), **fields}
                fold = self._folds[0]
            else:
                text = W.Textarea(placeholder='{"model_type": "llama", ...}', description=t("config"))
                upload = W.FileUpload(accept=".json", multiple=False, description=t("upload"))
                upload.observe(self.guarded(self._uploaded), names="value")
                made = {"config": text, "upload": upload}
                fold = self._folds[1]
            self._sections[name] = made
            fold.children = list(made.values())
            self._adopt(fold, {k: w for k, w in made.items() if k != "upload"})
        return self._sections[name]

    def _opened(self, change: dict[str, Any]) -> None:
        if change["new"] is not None:
            self._section(("family", "config")[change["new"]])

    @property
    def family(self) -> Any:
        return self._section("family")["family"]

    @property
    def family_fields(self) -> dict[str, Any]:
        return {k: self._section("family")[k] for k in FAMILY_FIELDS}

    @property
    def config_text(self) -> Any:
        return self._section("config")["config"]

    @property
    def upload(self) -> Any:
        return self._section("config")["upload"]

    def _lay_out(self, main: list[Any]) -> None:
        """The page: headline and chart on top, then the model's source, the form (the GPU, then the
        `main` controls), fine-tuning, the family and config entries folded away, the catalogue table."""
        t = self.t
        folds = W.Accordion(self._folds, titles=(t("family"), t("config")))
        folds.observe(self.guarded(self._opened), names="selected_index")
        form = W.GridBox(
            [self.gpu, *main],
            layout=W.Layout(grid_template_columns="repeat(3, minmax(200px, 1fr))"),
        )
        self.children = [
            self.where,
            self.headline,
            self.error_area,
            self.status,
            chart_row(self.chart, W.VBox([self.rule, self.host, self.cost])),
            self.source,
            self.preset,
            form,
            self.finetune.box,
            folds,
            self.fits_table,
        ]

    # -- inputs --------------------------------------------------------------------------------
    def _raw_inputs(self) -> dict[str, Any]:
        """Every control's value, shown or not; typed numbers parsed by the library (a SpecError names
        the first one out of range, and nothing is computed from it); a number box the mode hides
        reads as its default (`form.read`)."""
        mode = str(self._main["mode"].value)
        return {**read(self._main, mode), **self.finetune.values(mode)}

    def _inputs(self) -> dict[str, Any]:
        """The Workload fields the estimate uses: hidden fine-tuning controls count as defaults."""
        return effective(self._raw_inputs())

    def _model(self) -> Any:
        from aiworkbook.specs import load_model

        src = self.source.value
        if src == "preset":
            return load_model(self.preset.value)
        if src == "family":
            from aiworkbook.specs import spec_from_config

            cfg = {
                "model_type": self.family.value,
                **{k: _int(k, w.value) for k, w in self.family_fields.items()},
            }
            return spec_from_config(cfg, name=f"{self.family.value}-custom", source="<family form>")
        if src == "pasted":
            return spec_from_text(self.config_text.value, "pasted")
        if src == "uploaded":
            if self._spec is None:
                raise SpecError("upload", "nothing uploaded", "a config.json file")
            return self._spec
        raise SpecError("source", src, "preset, family, pasted, uploaded")

    def _uploaded(self, change: dict[str, Any]) -> None:
        files = change["new"]
        if not files:
            return
        f = files[0]
        content = bytes(f["content"]) if not isinstance(f["content"], bytes) else f["content"]
        name = str(f.get("name", "uploaded")).rsplit(".", 1)[0] or "uploaded"
        check_config_size(len(content), f"<{name}>")
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError as exc:
            why = Msg("allowed.utf8", at=exc.start, reason=quoted(exc.reason))
            raise SpecError("upload", f.get("name", "file"), why) from None
        self._spec = spec_from_text(text, name)
        self.source.value = "uploaded"
        self._changed()

    def _offer_valid_choices(self, spec: Any, raw: dict[str, Any]) -> None:
        """Each drop-down keeps only the choices the library allows with the other current inputs
        (`workload.allowed`; a mode is tried with the fields that apply to it), each switch only a flip
        that validates."""
        from aiworkbook.sizing.workload import allowed

        inputs = effective(raw)
        with self.syncing():
            self.finetune.offer_valid(spec, inputs)
            raw = {**raw, "lora_targets": list(self.finetune.targets_value())}
            mode, now = str(inputs["mode"]), effective(raw)
            for f in CHOICE_FIELDS:
                if f == "mode":  # each mode with its own applicable fields (the others at defaults)
                    ok = [m for m in self._all[f] if m in allowed(f, spec, **effective({**raw, f: m}))]
                else:
                    others = {k: v for k, v in now.items() if k != f}
                    narrowed = choices_in(f, mode)  # QLoRA's weights: NF4 only
                    ok = [c for c in allowed(f, spec, **others) if narrowed is None or c in narrowed]
                if inputs[f] not in ok:
                    ok.append(inputs[f])  # the current value stays selectable; its error is shown
                order = unset_first(f, [c for c in self._all[f] if c in ok])
                if list(self._main[f].options) != order:
                    self._main[f].options = order
                if self._main[f].value != option_of(f, inputs[f]):
                    self._main[f].value = option_of(f, inputs[f])

    def _narrow(self, raw: dict[str, Any]) -> None:
        """A mode that narrows a choice (QLoRA: NF4 weights) shows the value it uses; leaving that mode
        brings back what the viewer had chosen before it (in `raw` and in the control)."""
        mode = str(raw["mode"])
        for f in CHOICE_FIELDS:
            narrowed = choices_in(f, mode)
            if narrowed is not None:
                if raw[f] not in narrowed:
                    self._before_narrowing.setdefault(f, raw[f])
            elif f in self._before_narrowing:
                raw[f] = self._before_narrowing.pop(f)
                with self.syncing():
                    if option_of(f, raw[f]) not in self._main[f].options:
                        self._main[f].options = unset_first(f, self._all[f])
                    self._main[f].value = option_of(f, raw[f])

    def _changed(self, change: dict[str, Any] | None = None) -> None:
        if self._syncing:
            return
        from aiworkbook.sizing import Workload

        spec = self._model()
        raw = self._raw_inputs()
        self._narrow(raw)
        inputs = effective(raw)
        self._show_for(str(inputs["mode"]))
        if not isinstance(self.gpu.value, str):
            raise SpecError("gpu", self.gpu.value, "a catalogue GPU")
        Workload(**inputs).check_against(spec)  # a bad value shows now, before any work is queued
        self._offer_valid_choices(spec, raw)
        self._set_value({"model": spec.name, "gpu": self.gpu.value, **inputs})
        self.error = ""
        gpu = self.gpu.value
        self.status.value = html.escape(self.t("working"))
        if self._bg is None:
            self._apply(size(spec, inputs, gpu))
        else:
            self._bg.submit(lambda: size(spec, inputs, gpu), self.guarded(self._apply), self.show_error)

    def _show_for(self, mode: str) -> None:
        """Only the controls that apply to `mode` are shown (`Workload.fields()`'s modes): batch for
        training, concurrency and new tokens for inference, ZeRO, data parallel and recipe for training."""
        for f in (*CHOICE_FIELDS, *INT_FIELDS):
            if f != "mode":
                self._main[f].layout.display = "" if applies(f, mode) else "none"
        self.finetune.show_for(mode)

    def _set_value(self, v: dict[str, Any]) -> None:
        with self.syncing():
            self.value = v

    def _apply_value(self, v: dict[str, Any]) -> None:
        """Set controls from a value dict (unknown keys and bad values are SpecErrors, shown)."""
        known = {"model", "gpu", "config", *CHOICE_FIELDS, *INT_FIELDS, *all_fields()}
        for k in v:
            if k not in known:
                raise SpecError("value", k, ", ".join(sorted(known)))
        self._check_hidden(v)
        with self.syncing():
            if "config" in v:
                self.config_text.value = str(v["config"])
                self.source.value = "pasted"
            elif "model" in v:
                from aiworkbook.specs import list_presets

                if v["model"] not in list_presets():
                    raise SpecError("model", v["model"], ", ".join(list_presets()))
                self.preset.value = v["model"]
                self.source.value = "preset"
            if "gpu" in v:
                if v["gpu"] not in self.gpu.options:
                    raise SpecError("gpu", v["gpu"], ", ".join(self.gpu.options))
                self.gpu.value = v["gpu"]
            for f in CHOICE_FIELDS:
                if f in v:
                    if v[f] not in self._all[f] and not (v[f] is None and f in UNSET):
                        allowed_ = [*map(str, self._all[f]), *(["None"] if f in UNSET else [])]
                        raise SpecError(f, v[f], ", ".join(allowed_))
                    if option_of(f, v[f]) not in self._main[f].options:
                        self._main[f].options = unset_first(f, self._all[f])
                    self._main[f].value = option_of(f, v[f])
            for f in INT_FIELDS:
                if f in v:
                    set_number(self._main[f], f, v[f])  # the library's bounds and message
            for f in all_fields():
                if f in v:
                    self.finetune.set(f, v[f])
        self.guarded(self._changed)()  # refused by the library: shown, the controls keep the inputs

    def _snapshot(self) -> Any:
        return (
            super()._snapshot(),
            self.finetune.snapshot(),
        )  # unbuilt fine-tuning fields live outside widgets

    def _put_back(self, snapshot: Any) -> None:
        super()._put_back(snapshot[0])
        self.finetune.restore(snapshot[1])

    def _check_hidden(self, v: dict[str, Any]) -> None:
        """A field set to other than its default where its control is hidden (it does not apply to the
        mode) is refused by the library's own mode rule (`Workload`), which names the modes it applies
        to, as the CLI refuses it."""
        from aiworkbook.sizing import Workload

        mode = v.get("mode", self._main["mode"].value)
        for f in (*all_fields(), *CHOICE_FIELDS, *INT_FIELDS):  # the fine-tuning ones first
            if f in v and not applies(f, str(mode)):
                Workload(mode=mode, **{f: v[f]})

    # -- output --------------------------------------------------------------------------------
    def _apply(self, out: dict[str, Any]) -> None:
        from aiworkbook.i18n_format import integer, money
        from aiworkbook.message import Msg
        from aiworkbook.sizing.formula_data import rule_said
        from aiworkbook.sizing.sections import margin
        from aiworkbook.units import fmt_bytes

        lang = self.lang
        est = out["estimate"]
        d = est.to_dict()
        fit, cost, w = d["fits"], d["cost"], est.workload
        shape = (
            f"{w.concurrency} × {integer(w.context_len, lang)} {self.t('tokens')}"
            if not w.training
            else f"{w.batch} × {integer(w.seq_len, lang)} {self.t('tokens')}"
        )
        words = self.t("fits") if fit["fits"] else self.t("does_not_fit")
        from aiworkbook.charts.colours import VERDICT_COLOURS

        colour = VERDICT_COLOURS["pass" if fit["fits"] else "fail"]
        line = self.t(
            "headline",
            model=html.escape(d["model"]),
            shape=shape,
            verdict=f'<span style="color:{colour}">{words}</span>',
            n=out["answer"].given if "answer" in out else 1,
            gpu=html.escape(str(fit["gpu"])),
            margin=(margin(fit["headroom_bytes"]) or Msg("value.na")).render(lang),
        )
        ans = out.get("answer")
        on = ans.option.on if ans is not None and ans.option is not None else ""
        line += self._needs_words(out.get("needs") or {}, fit, on)
        self.headline.value = f"<b>{line}</b>"
        # altair loads after the page's cells (base.ChartView.draw_later); the words above show now
        self.chart.draw_later(self.guarded(lambda charts: charts.memory_chart(est, lang=lang)))
        rule = d["rules_of_thumb"]
        self.rule.value = (
            f"<b>{self.t('memory')}</b>: {fmt_bytes(d['memory']['total'], 'GiB', lang)}<br>"
            f"<b>{self.t('rule_of_thumb')}</b>: {fmt_bytes(rule['bytes'], 'GiB', lang)} "
            f"({html.escape(rule_said(rule, lang))})" + self._explain_html(d)
        )
        if "answer" in out and out["answer"].fits:  # a MIG instance's price where the answer deploys on one
            from aiworkbook.sizing.needs import priced_cost

            cost = priced_cost(cost, out["answer"].option)
        self.cost.value = (self._cost_html(cost) if fit["fits"] else "") + self._price_words(out)
        self.host.value = self._host_html(d.get("host") or {})
        self.host.layout.display = "" if self.host.value else "none"
        rows = [
            [
                r["gpu"],
                r["gpus"] if r["gpus"] is not None else "—",
                money(r["price_per_gpu_hour"], lang) if r["price_per_gpu_hour"] else "—",
                money(r["usd_per_mtok"], lang) if r.get("usd_per_mtok") is not None else "—",
            ]
            for r in out["fits_on"]
        ]
        best = out["cheapest"]
        note = self.t("none_fit")
        if best:
            price, hourly = money(best["usd_per_mtok"], lang), money(best["usd_per_hour"], lang)
            note = Msg("sizer.cheapest", n=best["gpus"], gpu=best["gpu"], price=price, hourly=hourly).render(
                lang
            )
            if "basis" in out:
                note += f"; {out['basis'].render(lang)}"
        per_mtok = Msg("sizer.per_mtok").render(lang)
        said = "; ".join(m.render(lang) for m in out.get("table_prices", []))
        self.fits_table.value = (
            f"<b>{self.t('fits_on')}</b>"
            + html_table([self.t("gpu"), self.t("gpus_needed"), self.t("per_gpu_hour"), per_mtok], rows)
            + f"<p>{html.escape(note)}</p>"
            + (f'<p class="aiwb-price-source">{html.escape(said)}</p>' if said else "")
        )
        self.status.value = ""
        self.error = ""
        self.result = {**d, "fits_on": out["fits_on"], "cheapest": best}
        if "answer" in out:
            self.result["answer"] = out["answer"].to_dict()

    def _needs_words(self, n: dict[str, Any], fit: dict[str, Any], on: str) -> str:
        """What the set-up needs and its price (aiworkbook.sizing.needs): a set-up that does not fit is
        priced on the GPUs it needs, never on the one it does not fit. `on`: what the priced option runs
        on (Option.on: a MIG instance is named)."""
        from aiworkbook.i18n_format import money

        t, out, lang = self.t, "", self.lang
        here, cheap, priced = n.get("here"), n.get("cheapest"), n.get("priced")
        if not fit["fits"]:
            if here is not None:
                out += "; " + t("needs", n=here["gpus"], gpu=html.escape(here["gpu"]))
            if cheap is not None and cheap != here:  # "or …" only after what it needs of this GPU
                said = "lowest_cost" if here is not None else "needs"
                out += (", " if here is not None else "; ") + t(
                    said, n=cheap["gpus"], gpu=html.escape(cheap["gpu"])
                )
            if here is None and cheap is None:
                return "; " + html.escape(t("none_fit"))
        if priced is None:
            return out
        where = {"n": priced["gpus"], "gpu": html.escape(on or priced["gpu"])}
        if fit["fits"] and not priced.get("mig"):  # priced as shown: the GPUs are the headline's own
            if priced.get("usd_per_mtok") is not None:
                return f"{out}, {money(priced['usd_per_mtok'], lang)} {t('per_mtok')}"
            if priced.get("usd_per_mtok_trained") is not None:
                return f"{out}, {money(priced['usd_per_mtok_trained'], lang)} {t('per_mtok_trained')}"
            return out
        if priced.get("usd_per_mtok") is not None:
            out += ", " + t("priced_on", price=money(priced["usd_per_mtok"], lang), **where)
        elif priced.get("usd_per_mtok_trained") is not None:
            out += ", " + t("priced_trained_on", price=money(priced["usd_per_mtok_trained"], lang), **where)
        return out

    def _price_words(self, out: dict[str, Any]) -> str:
        """Where the headline's price comes from (the answer's provenance), when it quotes one."""
        ans = out.get("answer")
        if ans is None or ans.usd_per_mtok is None:
            return ""
        said = html.escape(ans.price_words.render(self.lang))
        return f'<div class="aiwb-price-source aiwb-explain" style="font-size:90%;color:#444">{said}</div>'

    def _explain_html(self, d: dict[str, Any]) -> str:
        """One line each on the dashed budget line and the rule-of-thumb bar: which to trust and why."""
        rule, fit = d.get("rules_of_thumb") or {}, d.get("fits") or {}
        lines = []
        if fit.get("budget_bytes"):
            from aiworkbook.i18n_format import percent

            util = percent(d["workload"].get("gpu_memory_utilization", 0.9), 0, self.lang)
            lines.append(self.t("budget_line", util=util, gpu=html.escape(str(fit.get("gpu")))))
        if rule.get("ratio_to_itemised"):
            from aiworkbook.i18n_format import fixed

            ratio = fixed(rule["ratio_to_itemised"], 1, self.lang)
            lines.append(html.escape(self.t("rule_explained", ratio=ratio)))
        return "".join(f'<div class="aiwb-explain" style="font-size:90%;color:#444">{x}</div>' for x in lines)

    def _cost_html(self, cost: dict[str, Any]) -> str:
        from aiworkbook.i18n_format import integer, money

        if cost.get("decode_usd_per_mtok") is not None:
            return f"<b>{self.t('cost')}</b>: {money(cost['decode_usd_per_mtok'], self.lang)} {self.t('per_mtok')}"
        if cost.get("usd_per_mtok_trained") is not None:
            per_tok = f"{money(cost['usd_per_mtok_trained'], self.lang)} {self.t('per_mtok_trained')}"
            run = cost.get("run") or {}
            if run.get("usd") is not None:  # a training workload is priced per run when its tokens are known
                tokens = integer(run.get("train_tokens", 0), self.lang)
                per_tok = f"{money(run['usd'], self.lang, 0)} {self.t('per_run', tokens=tokens)}; {per_tok}"
            return f"<b>{self.t('cost')}</b>: {per_tok}"
        from aiworkbook.message import words

        return html.escape(words(cost.get("note", ""), self.lang))  # a message: said in the page's language

    def _host_html(self, host: dict[str, Any]) -> str:
        """Host RAM that offloaded state, offloaded activations or a paged optimizer take (empty: none)."""
        from aiworkbook.sizing.memory import HOST_KEYS
        from aiworkbook.units import fmt_bytes

        if not host.get("host_bytes"):
            return ""
        lang = self.lang
        parts = ", ".join(f"{self.t(k)} {fmt_bytes(host[k], 'GiB', lang)}" for k in HOST_KEYS if host.get(k))
        return f"<b>{self.t('host_memory')}</b>: {fmt_bytes(host['host_bytes'], 'GiB', lang)} ({parts})"
