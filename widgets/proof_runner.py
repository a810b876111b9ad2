"""ProofRunner: choose a proof from the registry, see its plan (the prediction and sizes) before it
runs, run it on a worker thread with a progress bar and a cancel button, then the estimate next to
the measurement with the verdict and the honesty flags.

The proof runs under the registry's one proof lock: a second run anywhere in the process gets
ProofBusy, shown as a message. Progress arrives on the proof's thread and is applied on the kernel's
event loop.
"""

from __future__ import annotations

import html
import threading
from typing import Any

import ipywidgets as W
import traitlets

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg, words
from aiworkbook.units import fmt_value

from .base import (
    Composite,
    Delivery,
    OptionalNumber,
    chart_view,
    dropdown,
    html_table,
    load_charts,
    localize_choices,
    none_first,
    value_html,
    where_html,
)
from .form import named

#: Input kinds the form offers; paths and free text are never taken from a viewer (file system safety).
FORM_KINDS = ("model", "int", "float", "bool", "choice", "ints")


def input_widget(spec: Any) -> W.ValueWidget | None:
    """A control for one registry InputSpec, or None for kinds a viewer may not set."""
    from aiworkbook.specs import list_presets

    style = {"description_width": "initial"}
    if spec.kind == "model":  # an optional model
        return W.Dropdown(
            options=none_first(list_presets()), value=spec.default or "", description=spec.name, style=style
        )
    if spec.kind == "choice":
        return W.Dropdown(options=list(spec.choices), value=spec.default, description=spec.name, style=style)
    if spec.kind == "bool":
        return W.Checkbox(value=bool(spec.default), description=spec.name)
    if spec.kind in ("int", "float") and spec.default is None:  # unset: the proof's own default
        return optional_number(spec)
    if spec.kind == "int":
        return W.IntText(value=spec.default, description=spec.name, style=style)
    if spec.kind == "float":
        return W.FloatText(value=spec.default, description=spec.name, style=style)
    if spec.kind == "ints":
        default = ",".join(map(str, spec.default)) if spec.default else ""
        return W.Text(value=default, description=spec.name, placeholder="1,2,4", style=style)
    return None


#: the number boxes' range where an InputSpec sets no bound (ipywidgets' bounded boxes need one)
_UNBOUNDED = 2**31 - 1


def optional_number(spec: Any) -> OptionalNumber:
    """An int or float input without a default: off (None) leaves the proof's default, on offers a
    number inside the spec's bounds, starting at 1 or the lower bound (a 0 shown in a plain number box
    went to the proof as 0 and was refused: concurrency, size_mb, rows ...)."""
    low = spec.low if spec.low is not None else -_UNBOUNDED
    high = spec.high if spec.high is not None else _UNBOUNDED
    start = min(max(low, 1), high)
    return OptionalNumber(spec.name, low, high, start, integer=spec.kind == "int")


def parse_input(spec: Any, value: Any) -> Any:
    """A form value as the proof's input (None when left empty), checked against the spec's bounds."""
    if spec.kind == "model":
        return value or None
    if spec.kind == "ints":
        if not str(value).strip():
            return None
        try:
            out = [int(x) for x in str(value).replace(" ", "").split(",") if x]
        except ValueError:
            raise SpecError(spec.name, value, "integers separated by commas") from None
        for x in out:
            _bounds(spec, x)
        return out
    if spec.kind in ("int", "float") and value is not None:
        _bounds(spec, value)
    if spec.kind == "choice" and value not in spec.choices:
        raise SpecError(spec.name, value, ", ".join(spec.choices))
    return value


def _bounds(spec: Any, x: Any) -> None:
    if spec.low is not None and x < spec.low or spec.high is not None and x > spec.high:
        if spec.high is None:
            allowed = f">= {spec.low}"
        elif spec.low is None:
            allowed = f"<= {spec.high}"
        else:
            allowed = f"{spec.low} to {spec.high}"
        raise SpecError(spec.name, x, allowed)


class ProofRunner(Composite):
    """`value`: {"proof": name, "inputs": {...}}; `plan`: the registry's Plan as a dict (before running);
    `result`: the ProofResult as a dict once a run ends. `allow_run=False` shows plans only."""

    css = "proof-runner"
    value = traitlets.Dict()
    plan = traitlets.Dict()

    def __init__(
        self, proof: str | None = None, allow_run: bool = True, lang: str = "en", **inputs: Any
    ) -> None:
        super().__init__(lang=lang)
        from aiworkbook.proofs import registry

        self.registry = registry
        self.allow_run = bool(allow_run)
        self._delivery = Delivery()
        self._thread: threading.Thread | None = None
        self._cancel = threading.Event()
        self._done = threading.Event()
        self._done.set()
        names = list(registry.names())
        self.proof = dropdown(names, proof if proof in names else names[0], self.t("proof"))
        self.proof.observe(self.guarded(self._proof_changed), names="value")
        self.form = W.VBox([])
        self.inputs: dict[str, W.ValueWidget] = {}
        self.proves = W.HTML("")
        self.plan_view = value_html("")
        self.run_button = W.Button(description=self.t("run"), button_style="primary", icon="play")
        self.cancel_button = W.Button(description=self.t("cancel"), icon="stop", disabled=True)
        self.run_button.on_click(self.guarded(lambda _b: self.run()))
        self.cancel_button.on_click(self.guarded(lambda _b: self.cancel()))
        self.progress = W.FloatProgress(value=0.0, min=0.0, max=1.0, description="")
        self.progress_text = W.HTML("")
        self.progress_row = W.HBox([self.progress, self.progress_text])
        self.progress_row.layout.display = "none"  # no empty bar: shown when a run starts
        self.outcome = value_html("")
        # no altair import while the page builds (it slowed the later cells): it loads with the first
        # result, or sooner with another widget's first chart (the report page's sizer)
        self.chart = chart_view(later=True)
        self.chart.layout.display = "none"  # no empty chart: shown with the first result
        buttons = [self.run_button, self.cancel_button] if self.allow_run else [W.HTML(self.t("runs_off"))]
        self.where = where_html(measured=True, lang=lang)
        self.children = [
            self.where,
            self.proof,
            self.proves,
            self.form,
            self.error_area,
            self.plan_view,
            W.HBox(buttons),
            self.status,
            self.progress_row,
            self.outcome,
            self.chart,
        ]
        self.guarded(self._proof_changed)()
        self.guarded(self._set_inputs)(inputs)
        self.ready()

    # -- form and plan -------------------------------------------------------------------------
    def _info(self) -> Any:
        return self.registry.get(self.proof.value)

    def _proof_changed(self, change: dict[str, Any] | None = None) -> None:
        info = self._info()
        title, proves = (
            self._said(f"proof.{self.proof.value}.title", info.title),
            self._said(f"proof.{self.proof.value}.proves", info.proves),
        )
        self.proves.value = f"<b>{html.escape(title)}</b>: {html.escape(proves)}"
        self.inputs = {}
        for spec in info.inputs:
            w = input_widget(spec)
            if w is not None:
                said = self._said(f"input.{spec.name}", spec.name)
                said = said[:1].upper() + said[1:]  # as the page's other labels ("Proof", "Model")
                (w.toggle if isinstance(w, OptionalNumber) else w).description = said
                named(w, spec.name, said)  # an error names the input as the form shows it
                w.observe(self.guarded(self._replan), names="value")
                self.inputs[spec.name] = w
        self.form.children = list(self.inputs.values())
        localize_choices(self.form, self.lang)
        self._replan()

    def _set_inputs(self, inputs: dict[str, Any]) -> None:
        for k, v in inputs.items():
            if k not in self.inputs:
                raise SpecError("input", k, ", ".join(self.inputs))
            self.inputs[k].value = ",".join(map(str, v)) if isinstance(v, list | tuple) else v

    def current_inputs(self) -> dict[str, Any]:
        """The form's values as the proof's inputs (empty ones left out: the proof's defaults apply)."""
        specs = {s.name: s for s in self._info().inputs}
        out = {}
        for k, w in self.inputs.items():
            v = parse_input(specs[k], w.value)
            if v is not None:
                out[k] = v
        return out

    def _replan(self, change: dict[str, Any] | None = None) -> None:
        inputs = self.current_inputs()
        self.value = {"proof": self.proof.value, "inputs": inputs}
        p = self.registry.plan(self.proof.value, **inputs)
        self.plan = p.to_dict()
        self.plan_view.value = self._plan_words(p)
        self.error = ""

    def _plan_words(self, p: Any) -> str:
        """The plan as a sentence: what it predicts (or that it predicts nothing there), where it runs,
        roughly how long, then its sizes in units ("buffer 256.00 MiB", not "buffer_bytes=268435456")."""
        lang = self.lang
        proof = p.proof if lang == "en" else self._said(f"proof.{p.proof}.title", p.proof)
        device = {"cpu": self.t("the_cpu"), "cuda": self.t("the_gpu")}.get(p.device, p.device)
        rough = self.t("rough", seconds=p.rough_s) if p.rough_s else "—"
        if p.predicted is None:
            line = html.escape(self.t("plan_none", proof=proof, device=device, rough=rough))
        else:
            label = f"{words(p.predicted_label, lang)} = " if p.predicted_label else ""
            predicted = f"{label}{fmt_value(p.predicted, p.unit, lang)}"
            line = html.escape(
                self.t("plan_line", proof=proof, predicted=predicted, device=device, rough=rough)
            )
        if p.fits is not None:
            line += f" ({html.escape(self.t('fits') if p.fits else self.t('does_not_fit'))})"
        # a setting the proof leaves unset (a sweep's cap, an SLO off) is not shown at all
        sizes = ", ".join(_size_words(k, v, lang) for k, v in p.sizes.items() if v is not None)
        notes = "".join(f"<li>{html.escape(words(n, lang))}</li>" for n in p.notes)
        return (
            f"<b>{html.escape(self.t('plan'))}</b>: {line}"
            + (f"<br><small>{html.escape(self.t('plan_inputs', inputs=sizes))}</small>" if sizes else "")
            + (f"<ul>{notes}</ul>" if notes else "")
        )

    # -- running -------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def run(self) -> None:
        """Start the chosen proof on a worker thread (no-op while one runs here)."""
        if not self.allow_run:
            raise SpecError("run", "disabled", "a dashboard started with --allow-proofs")
        if self.running:
            return
        name, inputs = self.proof.value, self.current_inputs()
        self.registry.plan(name, **inputs)  # bad inputs fail here, before the thread starts
        self._cancel = threading.Event()
        self._done.clear()
        self.error = ""
        self.outcome.value = ""
        self.progress.value = 0.0
        self.progress.bar_style = ""
        self.progress_text.value = ""
        self.progress_row.layout.display = ""
        # a visible working sign while the proof runs (cleared when it ends, however it ends)
        self.status.value = f'<i class="fa fa-spinner fa-spin"></i> {html.escape(self.t("working"))}'
        self.run_button.disabled, self.cancel_button.disabled = True, False
        self._thread = threading.Thread(target=self._work, args=(name, inputs, self._cancel), daemon=True)
        self._thread.start()

    def cancel(self) -> None:
        """Ask the running proof to stop (it lands within about a second, verdict 'interrupted')."""
        self._cancel.set()
        self.cancel_button.disabled = True

    def _work(self, name: str, inputs: dict[str, Any], cancel: threading.Event) -> None:
        from aiworkbook.proofs.control import ProofBusy
        from aiworkbook.proofs.progress import Relay

        def show(done: int, total: int, message: str, unit: str) -> None:
            self._delivery.post(lambda: self._progress(done, total, message, unit))

        progress = Relay(show)  # told the unit too: bytes drawn as bytes

        try:
            result = self.registry.run(name, progress=progress, cancel=cancel, **inputs)
        except ProofBusy as busy:
            message = f"{self.t('busy')} ({busy})"
            self._delivery.post(lambda: self._finish(None, message))
        except Exception as exc:  # shown in the widget, never a traceback
            err = exc
            self._delivery.post(lambda: self._finish(None, None, err))
        else:
            self._delivery.post(lambda: self._finish(result))

    def _progress(self, done: int, total: int, message: str, unit: str = "") -> None:
        from aiworkbook.proofs.progress import counts

        self.progress.value = done / total if total else 0.0
        self.progress_text.value = html.escape(
            f"{counts(done, total, unit, self.lang)} {words(message, self.lang)}"
        )

    def _finish(self, result: Any, message: str | None = None, exc: BaseException | None = None) -> None:
        try:
            self.run_button.disabled, self.cancel_button.disabled = False, True
            self.status.value = ""
            if exc is not None:
                self.show_error(exc)
                self.progress.bar_style = "danger"
                return
            if result is None:
                self.error = message or ""
                return
            self._show_result(result)
        finally:
            self._done.set()

    def _show_result(self, r: Any) -> None:
        proofs_chart = load_charts().proofs_chart  # altair, by one thread at a time (base.load_charts)
        from aiworkbook.charts.theme import VERDICT_COLOURS, verdict_label
        from aiworkbook.proofs.flags import FLAGS
        from aiworkbook.provenance import verdict_words

        verdict = verdict_words(r.to_dict())  # a CPU fallback's pass reads "info (CPU only)"
        colour = VERDICT_COLOURS.get(verdict, VERDICT_COLOURS["info"])
        flags = [[f, self._said(f"flag.{f}", FLAGS.get(f, ""))] for f in r.flags]
        ratio = (
            fmt_value(r.ratio, "ratio", self.lang)
            if r.ratio is not None
            else Msg("value.na").render(self.lang)
        )
        self.outcome.value = (
            f'<b style="color:{colour}">[{html.escape(verdict_label(verdict, self.lang))}]</b> '
            f"{self.t('measured')} <b>{fmt_value(r.measured, r.unit, self.lang)}</b> / {self.t('predicted')} "
            f"{html.escape(words(r.predicted_label, self.lang))} <b>{fmt_value(r.predicted, r.unit, self.lang)}</b> "
            f"({self.t('ratio')} {ratio}, ±{fmt_value(r.tolerance, 'fraction', self.lang)}) "
            f"{self.t('on_device')} {html.escape(r.device)}"
            + (html_table([self.t("flags"), ""], flags) if flags else "")
            + "".join(f"<br><small>{html.escape(words(n, self.lang))}</small>" for n in r.notes)
        )
        self.progress.bar_style = "success" if verdict == "pass" else "warning"
        if r.verdict != "interrupted":  # a finished run's bar finishes, whatever the last step reported
            self.progress.value = 1.0
        self.chart.draw(self._chart(r, proofs_chart, self.lang))
        self.chart.layout.display = ""
        self.result = r.to_dict()

    def _said(self, key: str, english: str) -> str:
        """The catalog's words for `key` in this widget's language; the library's English when absent."""
        try:
            return self.t(key)
        except SpecError:
            return english

    @staticmethod
    def _chart(r: Any, default: Any, lang: str = "en") -> Any:
        """The chart the registry declares for this proof (`ProofInfo.chart`): the roofline, the
        latency sweep, else estimate vs measured (also when a run left the declared data empty)."""
        from aiworkbook.charts import latency_chart, roofline_chart
        from aiworkbook.proofs import registry

        kind = registry.chart_kind(r.proof)
        d = r.details
        if kind == "roofline" and d.get("chart"):
            return roofline_chart(d["chart"], lang=lang)
        if kind == "latency" and d.get("sweep"):
            return latency_chart(d["sweep"], knee=d.get("knee"), lang=lang)
        return default([r], lang=lang)

    def wait(self, timeout: float = 600.0) -> bool:
        """Block until the running proof has ended and its outcome is shown (tests, scripts)."""
        return self._delivery.wait_for(self._done, timeout)

    def close(self) -> None:
        self._cancel.set()
        super().close()


def _size_words(key: str, value: Any, lang: str = "en") -> str:
    """One plan size in words and units: buffer_bytes=268435456 -> "buffer 256.00 MiB" (numbers in
    `lang`'s format; the setting's name stays the library's)."""
    from aiworkbook.i18n_format import fixed, integer
    from aiworkbook.units import fmt_bytes

    from .i18n import size_name, yes_no

    if key.endswith("_bytes") and isinstance(value, int | float) and not isinstance(value, bool):
        return f"{size_name(key[: -len('_bytes')], lang)} {fmt_bytes(value, lang=lang)}"
    name = size_name(key, lang)
    if isinstance(value, bool):
        return f"{name} {yes_no(value, lang)}"
    if isinstance(value, int):
        return f"{name} {integer(value, lang)}"
    if isinstance(value, float):
        return f"{name} {fixed(value, 3 if abs(value) < 1 else 2, lang)}"
    if isinstance(value, list | tuple):
        shown = ", ".join(integer(x, lang) if isinstance(x, int) else str(x) for x in value)
        return f"{name} {shown}"
    return f"{name} {value}"
