"""The fine-tuning controls of ModelSizer: the Workload switches and sizes that real recipes set
(torch.compile, chunked loss, optimizer step in backward, activation and FSDP CPU offload, dropout,
LoRA rank and target modules), built from the Workload's field schema so that bounds and choices come
from the library.

They are shown for training modes only (the LoRA rows for lora/qlora only). A hidden control counts as
the field's default, so the estimate always uses what the viewer can see.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as W

from aiworkbook.errors import SpecError

from .form import applies, control, effective, schema

__all__ = ["FinetuneControls", "all_fields", "bool_fields", "effective", "schema", "shown"]

#: Modes whose LoRA rows are shown (and whose lora_rank/lora_targets reach the estimate).
LORA_MODES = ("lora", "qlora")
#: Optional numbers: None is the library's default (unchunked loss, the model family's dropout).
OPTIONAL_FIELDS = ("loss_chunks", "dropout")
LORA_FIELDS = ("lora_rank", "lora_targets")


def bool_fields() -> tuple[str, ...]:
    from aiworkbook.sizing.workload import BOOL_FIELDS

    return BOOL_FIELDS


def all_fields() -> tuple[str, ...]:
    return (*bool_fields(), *OPTIONAL_FIELDS, *LORA_FIELDS)


def shown(field: str, mode: str) -> bool:
    """Whether `field`'s control applies (and is shown) in `mode`: the modes `Workload.fields()`
    declares for it."""
    return applies(field, mode)


def _targets(x: Any) -> Any:
    """lora_targets as the Workload takes it: one name alone stands for a one-module list."""
    return (x,) if isinstance(x, str) else tuple(x) if isinstance(x, list | tuple) else x


class FinetuneControls:
    """One control per fine-tuning field (`controls[name]`, each with an observable `value`) and the
    box that holds them (`box`, CSS class `aiwb-finetune`).

    The controls are built when the section is first shown (`show_for` a training mode) or first
    touched from Python (`controls`, `lora`): in inference the page never shows them, and not building
    them spares the first render 58 widget models. Until then the fields' values live in `values()`
    and `set()` checks a value as its control would. `on_build(controls)` runs once they exist."""

    def __init__(
        self,
        t: Callable[..., str],
        defaults: dict[str, Any],
        on_build: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self._t = t
        self._on_build = on_build
        self.targets: tuple[str, ...] = tuple(schema()["lora_targets"]["choices"])
        self._values: dict[str, Any] = {f: defaults[f] for f in all_fields()}
        self._values["lora_targets"] = _targets(defaults["lora_targets"])
        self._controls: dict[str, Any] | None = None
        self._lora: Any = None
        self.box = W.VBox([])
        self.box.add_class("aiwb-finetune")

    @property
    def built(self) -> bool:
        return self._controls is not None

    @property
    def controls(self) -> dict[str, Any]:
        return self.build()

    @property
    def lora(self) -> Any:
        self.build()
        return self._lora

    def build(self) -> dict[str, Any]:
        """The controls, made now from the fields' current values if they do not exist yet."""
        if self._controls is not None:
            return self._controls
        t, v = self._t, self._values
        controls: dict[str, Any] = {}
        for f in (*bool_fields(), *OPTIONAL_FIELDS, "lora_rank"):  # from the field's own description
            controls[f] = control(f, v[f], t(f))
        controls["lora_targets"] = W.SelectMultiple(
            options=self.targets,
            value=v["lora_targets"],
            rows=len(self.targets),
            description=t("lora_targets"),
            style={"description_width": "initial"},
        )
        grid = W.GridBox(
            [controls[f] for f in (*bool_fields(), *OPTIONAL_FIELDS)],
            layout=W.Layout(grid_template_columns="repeat(3, minmax(200px, 1fr))"),
        )
        # top-aligned: beside the tall target list, the rank's box stretched and its label sat centred,
        # a row below its own input (seen in Chromium at 1400 px)
        self._lora = W.HBox(
            [controls["lora_rank"], controls["lora_targets"]], layout=W.Layout(align_items="flex-start")
        )
        self._lora.add_class("aiwb-lora")
        self._lora.layout.display = self._lora_display
        self._controls = controls
        self.box.children = [W.HTML(f"<b>{t('finetune')}</b>"), grid, self._lora]
        if self._on_build is not None:
            self._on_build(controls)
        return controls

    _lora_display = "none"

    def snapshot(self) -> dict[str, Any] | None:
        """The fields' values while the controls do not exist (None once they do: the controls hold them)."""
        return None if self._controls is not None else dict(self._values)

    def restore(self, snapshot: dict[str, Any] | None) -> None:
        if snapshot is not None and self._controls is None:
            self._values = dict(snapshot)

    def values(self, mode: str | None = None) -> dict[str, Any]:
        """Every control's value as a Workload field (lora_targets a list, as in `Workload.to_dict`);
        typed numbers parsed by the library (a SpecError names one out of range; with `mode`, only
        the ones that mode shows: `form.read`)."""
        from .form import read

        if self._controls is None:
            return {**self._values, "lora_targets": list(self._values["lora_targets"])}
        return read({f: self._controls[f] for f in all_fields()}, mode)

    def show_for(self, mode: str) -> None:
        shows = shown("compile", mode)
        self._lora_display = "" if shown("lora_targets", mode) else "none"
        if shows:
            self.build()
        self.box.layout.display = "" if shows else "none"
        if self._lora is not None:
            self._lora.layout.display = self._lora_display

    def offer_valid(self, spec: Any, inputs: dict[str, Any]) -> None:
        """A switch that cannot flip with the other inputs is disabled (one that is on stays usable, so
        it can be switched off); LoRA offers the modules the model has (`workload.allowed`). Before the
        controls exist only the LoRA selection is kept in step (it is part of `values()`)."""
        if self._controls is not None:
            self._disable_what_cannot_flip(inputs)
        self._offer_targets(spec, inputs)

    def _disable_what_cannot_flip(self, inputs: dict[str, Any]) -> None:
        from aiworkbook.sizing import Workload

        controls = self.controls
        for f in bool_fields():
            box = controls[f]
            try:
                Workload(**effective({**inputs, f: not box.value}))
                box.disabled = False
            except SpecError:
                box.disabled = not box.value
        for f in OPTIONAL_FIELDS:  # an unset number whose switching on the library refuses
            opt = controls[f]
            if opt.value is None:
                try:
                    Workload(**effective({**inputs, f: opt.number.number()}))
                    opt.toggle.disabled = False
                except SpecError:
                    opt.toggle.disabled = True
            else:
                opt.toggle.disabled = False

    def _offer_targets(self, spec: Any, inputs: dict[str, Any]) -> None:
        from aiworkbook.sizing.workload import allowed

        others = {k: v for k, v in inputs.items() if k != "lora_targets"}
        current = self.targets_value()
        if shown("lora_targets", str(inputs.get("mode"))):
            ok = allowed("lora_targets", spec, **others)
        else:
            # a hidden selection is kept as far as the model has its modules: one the model lacks
            # would make the LoRA modes invalid, and the viewer could not see why (nor fix it)
            ok = allowed("lora_targets", spec, **effective({**others, "mode": "lora"}))
            default = _targets(schema()["lora_targets"]["default"])
            current = tuple(m for m in current if m in ok) or tuple(m for m in default if m in ok)
        assert isinstance(ok, list)
        order = tuple(m for m in self.targets if m in ok or m in current)
        self.set_targets(current, order)

    def targets_value(self) -> tuple[str, ...]:
        """The LoRA modules selected (shown or not)."""
        if self._controls is None:
            return tuple(self._values["lora_targets"])
        return tuple(self._controls["lora_targets"].value)

    def set_targets(self, value: tuple[str, ...], options: tuple[str, ...] | None = None) -> None:
        if self._controls is None:  # the options are offered when the control is built and shown
            self._values["lora_targets"] = tuple(value)
            return
        sel = self._controls["lora_targets"]
        options = self.targets if options is None else options
        if tuple(sel.options) != options:
            sel.options = options  # resets the selection: set it again below
        if tuple(sel.value) != value:
            sel.value = value

    def set(self, f: str, x: Any) -> None:
        """Set field `f` from a `value` dict: a SpecError names a value of the wrong kind or range (the
        library checks the combination when the estimate is built)."""
        from .form import check_number, set_number

        if f in bool_fields():
            if not isinstance(x, bool):
                raise SpecError(f, x, "True or False")
        elif f == "lora_targets":
            x = _targets(x)
            if not isinstance(x, list | tuple) or not all(m in self.targets for m in x):
                raise SpecError(f, x, "a list of " + ", ".join(self.targets))
            self.set_targets(tuple(x))
            return
        elif self._controls is None:
            x = check_number(f, x)  # what the control's value would read as
        else:
            set_number(self._controls[f], f, x)
            return
        if self._controls is None:
            self._values[f] = x
        else:
            self._controls[f].value = x
