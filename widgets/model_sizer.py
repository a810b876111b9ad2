"""ModelSizer: a model (preset, pasted or uploaded config.json) and a workload in, the estimate out:
the headline verdict, the memory chart with the rule of thumb, the catalogue GPUs it fits on, cost.

Choices are filtered through the library: an option is offered only when `Workload(...)` with it
validates against the model. Training modes add the fine-tuning controls (widgets/finetune.py); host
memory that offloading or a paged optimizer takes is shown beside the GPU's. Recomputing runs on a
worker thread; the results are applied on the kernel's event loop, so typing never blocks the kernel.
"""

from __future__ import annotations

import html
import json
from typing import Any

import ipywidgets as W
import traitlets

from aiworkbook.errors import SpecError

from .base import Background, Composite, chart_view, dropdown, html_table, value_html
from .finetune import FinetuneControls, all_fields, effective

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
MAX_CONFIG_BYTES = 1 << 20
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
    from aiworkbook.sizing import workload as wl
    from aiworkbook.units import KV_DTYPES

    return {
        "mode": wl.MODES,
        "precision": wl.PRECISIONS,
        "recipe": wl.RECIPE_NAMES,
        "checkpointing": wl.CHECKPOINTING,
        "attention": wl.ATTENTIONS,
        "engine": wl.ENGINES,
        "weights_dtype": wl.WEIGHT_DTYPES,
        "kv_dtype": KV_DTYPES,
        "zero": (0, 1, 2, 3),
    }


def spec_from_text(text: str, name: str = "pasted") -> Any:
    """A ModelSpec from the text of a config.json (pasted or uploaded), or a SpecError."""
    from aiworkbook.specs import spec_from_config

    if not isinstance(text, str) or not text.strip():
        raise SpecError("config", "empty", "the text of a Hugging Face config.json")
    if len(text.encode()) > MAX_CONFIG_BYTES:
        raise SpecError(
            "config", f"{len(text.encode()):,} bytes", f"a config.json under {MAX_CONFIG_BYTES:,} bytes"
        )
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError("config", f"invalid JSON ({exc.msg}, line {exc.lineno})", "a JSON object") from None
    if not isinstance(cfg, dict):
        raise SpecError("config", type(cfg).__name__, "a JSON object (a Hugging Face config.json)")
    return spec_from_config(cfg, name=name, source=f"<{name}>")


def size(spec: Any, inputs: dict[str, Any], gpu: str) -> dict[str, Any]:
    """Everything the sizer shows, from the library: the estimate, the GPUs needed on each catalogue
    GPU and the cheapest one."""
    from aiworkbook.sizing import Workload, estimate
    from aiworkbook.sizing.capacity import cheapest_gpu, gpus_needed
    from aiworkbook.specs import list_gpus

    w = Workload(**inputs)
    est = estimate(spec, w, gpu=gpu)
    fits_on = []
    for g in list_gpus():
        n = gpus_needed(spec, w, g)
        fits_on.append({"gpu": g.name, "gpus": n, "price_per_gpu_hour": g.price_per_hour_usd})
    return {"estimate": est, "fits_on": fits_on, "cheapest": cheapest_gpu(spec, w)}


class ModelSizer(Composite):
    """`value`: {"model", "gpu", "config"?, and the Workload fields the form offers, fine-tuning ones
    included (hidden ones at their defaults)}; `result`: the estimate's JSON
    (`aiworkbook size --json`) plus `fits_on` and `cheapest`. `wait()` blocks until the newest
    computation is shown (tests and scripts)."""

    css = "model-sizer"
    value = traitlets.Dict()

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
        self._syncing = False
        self._spec: Any = None
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
        from aiworkbook.paths import data_dir
        from aiworkbook.specs import FAMILIES
        from aiworkbook.specs.model import load_config_file

        start = load_config_file(data_dir() / "models" / "llama-3-8b" / "config.json")
        self.family = dropdown(FAMILIES, "llama", t("family"))
        self.family_fields = {
            k: W.BoundedIntText(
                value=int(start[k]),
                min=1,
                max=10_000_000,
                description=k,
                style={"description_width": "initial"},
            )
            for k in FAMILY_FIELDS
        }
        self.config_text = W.Textarea(placeholder='{"model_type": "llama", ...}', description=t("config"))
        self.upload = W.FileUpload(accept=".json", multiple=False, description=t("upload"))
        self.gpu = dropdown([g.name for g in list_gpus()], gpu, t("gpu"))
        self.controls: dict[str, Any] = {}
        for f in CHOICE_FIELDS:
            self.controls[f] = dropdown(self._all[f], defaults[f], t(f))
        for f in INT_FIELDS:
            low = 0 if f == "new_tokens" else 1
            self.controls[f] = W.BoundedIntText(
                value=defaults[f],
                min=low,
                max=10_000_000,
                description=t(f),
                style={"description_width": "initial"},
            )
        main = list(self.controls.values())
        self.finetune = FinetuneControls(t, defaults)
        self.controls.update(self.finetune.controls)
        self.headline = value_html("")
        self.chart = chart_view()
        self.rule = W.HTML("")
        self.fits_table = W.HTML("")
        self.cost = value_html("")
        self.host = W.HTML("", layout=W.Layout(display="none"))
        self.host.add_class("aiwb-host")
        for w in (
            self.source,
            self.preset,
            self.family,
            *self.family_fields.values(),
            self.gpu,
            *self.controls.values(),
        ):
            w.observe(self.guarded(self._changed), names="value")
        self.config_text.observe(self.guarded(self._changed), names="value")
        self.upload.observe(self.guarded(self._uploaded), names="value")
        form = W.GridBox(
            [self.gpu, *main],
            layout=W.Layout(grid_template_columns="repeat(3, minmax(200px, 1fr))"),
        )
        self.children = [
            self.headline,
            self.error_area,
            self.status,
            W.HBox([self.chart, W.VBox([self.rule, self.host, self.cost])]),
            self.source,
            self.preset,
            form,
            self.finetune.box,
            W.Accordion(
                [
                    W.VBox([self.family, *self.family_fields.values()]),
                    W.VBox([self.config_text, self.upload]),
                ],
                titles=(t("family"), t("config")),
            ),
            self.fits_table,
        ]
        self.guarded(self._changed)()
        self.ready()

    # -- inputs --------------------------------------------------------------------------------
    def _raw_inputs(self) -> dict[str, Any]:
        """Every control's value, shown or not."""
        return {
            **{f: self.controls[f].value for f in (*CHOICE_FIELDS, *INT_FIELDS)},
            **self.finetune.values(),
        }

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

            cfg = {"model_type": self.family.value, **{k: w.value for k, w in self.family_fields.items()}}
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
        if len(content) > MAX_CONFIG_BYTES:
            raise SpecError(
                "upload", f"{len(content):,} bytes", f"a config.json under {MAX_CONFIG_BYTES:,} bytes"
            )
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError:
            raise SpecError("upload", f.get("name", "file"), "a UTF-8 config.json") from None
        name = str(f.get("name", "uploaded")).rsplit(".", 1)[0] or "uploaded"
        self._spec = spec_from_text(text, name)
        self.source.value = "uploaded"
        self._changed()

    def _offer_valid_choices(self, spec: Any, raw: dict[str, Any]) -> None:
        """Each drop-down keeps only the choices that validate with the other current inputs (a mode
        counts its own shown fine-tuning controls), each switch only a flip that validates."""
        from aiworkbook.sizing import Workload

        inputs = effective(raw)
        self._syncing = True
        try:
            self.finetune.offer_valid(spec, inputs)
            raw = {**raw, "lora_targets": list(self.finetune.controls["lora_targets"].value)}
            for f in CHOICE_FIELDS:
                ok = []
                for c in self._all[f]:
                    try:
                        Workload(**effective({**raw, f: c})).check_against(spec)
                        ok.append(c)
                    except SpecError:
                        pass
                if inputs[f] not in ok:
                    ok.append(inputs[f])  # the current value stays selectable; its error is shown
                order = [c for c in self._all[f] if c in ok]
                if list(self.controls[f].options) != order:
                    self.controls[f].options = order
                    self.controls[f].value = inputs[f]
        finally:
            self._syncing = False

    def _changed(self, change: dict[str, Any] | None = None) -> None:
        if self._syncing:
            return
        from aiworkbook.sizing import Workload

        spec = self._model()
        raw = self._raw_inputs()
        inputs = effective(raw)
        self.finetune.show_for(str(inputs["mode"]))
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

    def _set_value(self, v: dict[str, Any]) -> None:
        self._syncing = True
        try:
            self.value = v
        finally:
            self._syncing = False

    @traitlets.observe("value")
    def _value_set(self, change: dict[str, Any]) -> None:
        if self._syncing:
            return
        self.guarded(self._apply_value)(change["new"])

    def _apply_value(self, v: Any) -> None:
        """Set controls from a value dict (unknown keys and bad values are SpecErrors, shown)."""
        if not isinstance(v, dict):
            raise SpecError("value", type(v).__name__, "a dict of model, gpu and workload fields")
        known = {"model", "gpu", "config", *CHOICE_FIELDS, *INT_FIELDS, *all_fields()}
        for k in v:
            if k not in known:
                raise SpecError("value", k, ", ".join(sorted(known)))
        self._check_hidden(v)
        self._syncing = True
        try:
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
                    if v[f] not in self._all[f]:
                        raise SpecError(f, v[f], ", ".join(map(str, self._all[f])))
                    if v[f] not in self.controls[f].options:
                        self.controls[f].options = list(self._all[f])
                    self.controls[f].value = v[f]
            for f in INT_FIELDS:
                if f in v:
                    x = v[f]
                    if isinstance(x, bool) or not isinstance(x, int) or x < self.controls[f].min:
                        raise SpecError(f, x, f"an integer >= {self.controls[f].min}")
                    self.controls[f].value = x
            for f in all_fields():
                if f in v:
                    self.finetune.set(f, v[f])
        finally:
            self._syncing = False
        self._changed()

    def _check_hidden(self, v: dict[str, Any]) -> None:
        """A fine-tuning field set to other than its default where its control is hidden (inference;
        LoRA fields outside lora/qlora) is refused: the library's message where it refuses the
        combination, else one saying which modes take the field."""
        from aiworkbook.sizing import Workload
        from aiworkbook.sizing.workload import MODES

        from .finetune import schema, shown

        mode = v.get("mode", self.controls["mode"].value)
        info = schema()
        for f in all_fields():
            if f not in v or shown(f, str(mode)):
                continue
            x = list(v[f]) if f == "lora_targets" and isinstance(v[f], list | tuple) else v[f]
            if x == info[f]["default"]:
                continue
            try:  # the library's own refusal first
                Workload(mode=mode, **{f: v[f]})
            except SpecError:
                raise
            except (TypeError, ValueError):
                pass
            modes = " or ".join(m for m in MODES if shown(f, m))  # where the control shows
            default = info[f]["default"]
            shown_default = ", ".join(default) if isinstance(default, list) else repr(default)
            raise SpecError(f, v[f], f"{shown_default} unless mode is {modes} (mode is {mode})")

    # -- output --------------------------------------------------------------------------------
    def _apply(self, out: dict[str, Any]) -> None:
        from aiworkbook.charts import memory_chart
        from aiworkbook.charts.memory import rule_formula
        from aiworkbook.i18n_format import integer, money
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
        colour = "#0072B2" if fit["fits"] else "#D55E00"
        line = self.t(
            "headline",
            model=html.escape(d["model"]),
            shape=shape,
            verdict=f'<span style="color:{colour}">{words}</span>',
            gpu=html.escape(str(fit["gpu"])),
            headroom=fmt_bytes(fit["headroom_bytes"], "GiB", lang),
            headroom_word=self.t("headroom"),
        )
        if cost.get("decode_usd_per_mtok") is not None:
            line += f", {money(cost['decode_usd_per_mtok'], lang)} {self.t('per_mtok')}"
        self.headline.value = f"<b>{line}</b>"
        self.chart.chart = memory_chart(est, lang=lang)
        rule = d["rules_of_thumb"]
        self.rule.value = (
            f"<b>{self.t('memory')}</b>: {fmt_bytes(d['memory']['total'], 'GiB', lang)}<br>"
            f"<b>{self.t('rule_of_thumb')}</b>: {fmt_bytes(rule['bytes'], 'GiB', lang)} "
            f"({html.escape(rule_formula(rule['formula'], lang))})"
        )
        self.cost.value = self._cost_html(cost)
        self.host.value = self._host_html(d.get("host") or {})
        self.host.layout.display = "" if self.host.value else "none"
        rows = [
            [
                r["gpu"],
                r["gpus"] if r["gpus"] is not None else "—",
                money(r["price_per_gpu_hour"], lang) if r["price_per_gpu_hour"] else "—",
            ]
            for r in out["fits_on"]
        ]
        best = out["cheapest"]
        note = (
            self.t("cheapest", n=best["gpus"], gpu=best["gpu"], price=money(best["usd_per_hour"], lang))
            if best
            else self.t("none_fit")
        )
        self.fits_table.value = (
            f"<b>{self.t('fits_on')}</b>"
            + html_table([self.t("gpu"), self.t("gpus_needed"), self.t("per_gpu_hour")], rows)
            + f"<p>{html.escape(note)}</p>"
        )
        self.status.value = ""
        self.error = ""
        self.result = {**d, "fits_on": out["fits_on"], "cheapest": best}

    def _cost_html(self, cost: dict[str, Any]) -> str:
        from aiworkbook.i18n_format import money

        if cost.get("decode_usd_per_mtok") is not None:
            return f"<b>{self.t('cost')}</b>: {money(cost['decode_usd_per_mtok'], self.lang)} {self.t('per_mtok')}"
        if cost.get("usd_per_mtok_trained") is not None:
            return (
                f"<b>{self.t('cost')}</b>: {money(cost['usd_per_mtok_trained'], self.lang)} "
                f"{self.t('per_mtok_trained')}"
            )
        return html.escape(cost.get("note", ""))

    def _host_html(self, host: dict[str, Any]) -> str:
        """Host RAM that offloaded state, offloaded activations or a paged optimizer take (empty: none)."""
        from aiworkbook.sizing.memory import HOST_KEYS
        from aiworkbook.units import fmt_bytes

        if not host.get("host_bytes"):
            return ""
        lang = self.lang
        parts = ", ".join(f"{self.t(k)} {fmt_bytes(host[k], 'GiB', lang)}" for k in HOST_KEYS if host.get(k))
        return f"<b>{self.t('host_memory')}</b>: {fmt_bytes(host['host_bytes'], 'GiB', lang)} ({parts})"

    def wait(self, timeout: float = 60.0) -> bool:
        return True if self._bg is None else self._bg.wait(timeout)

    def close(self) -> None:
        if self._bg is not None:
            self._bg.shutdown()
        super().close()
