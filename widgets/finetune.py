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
    box that holds them (`box`, CSS class `aiwb-finetune`)."""

    def __init__(self, t: Callable[..., str], defaults: dict[str, Any]) -> None:
        info = schema()
        self.controls: dict[str, Any] = {}
        for f in (*bool_fields(), *OPTIONAL_FIELDS, "lora_rank"):  # from the field's own description
            self.controls[f] = control(f, defaults[f], t(f))
        self.targets: tuple[str, ...] = tuple(info["lora_targets"]["choices"])
        self.controls["lora_targets"] = W.SelectMultiple(
            options=self.targets,
            value=_targets(defaults["lora_targets"]),
            rows=len(self.targets),
            description=t("lora_targets"),
            style={"description_width": "initial"},
        )
        grid = W.GridBox(
            [self.controls[f] for f in (*bool_fields(), *OPTIONAL_FIELDS)],
            layout=W.Layout(grid_template_columns="repeat(3, minmax(200px, 1fr))"),
        )
        self.lora = W.HBox([self.controls["lora_rank"], self.controls["lora_targets"]])
        self.box = W.VBox([W.HTML(f"<b>{t('finetune')}</b>"), grid, self.lora])
        self.box.add_class("aiwb-finetune")

    def values(self) -> dict[str, Any]:
        """Every control's value as a Workload field (lora_targets a list, as in `Workload.to_dict`);
        typed numbers parsed by the library (a SpecError names one out of range)."""
        from .form import read

        return read({f: self.controls[f] for f in all_fields()})

    def show_for(self, mode: str) -> None:
        self.box.layout.display = "" if shown("compile", mode) else "none"
        self.lora.layout.display = "" if shown("lora_targets", mode) else "none"

    def offer_valid(self, spec: Any, inputs: dict[str, Any]) -> None:
        """A switch that cannot flip with the other inputs is disabled (one that is on stays usable, so
        it can be switched off); LoRA offers the modules the model has (`workload.allowed`)."""
        from aiworkbook.sizing import Workload
        from aiworkbook.sizing.workload import allowed

        for f in bool_fields():
            box = self.controls[f]
            try:
                Workload(**effective({**inputs, f: not box.value}))
                box.disabled = False
            except SpecError:
                box.disabled = not box.value
        for f in OPTIONAL_FIELDS:  # an unset number whose switching on the library refuses
            opt = self.controls[f]
            if opt.value is None:
                try:
                    Workload(**effective({**inputs, f: opt.number.number()}))
                    opt.toggle.disabled = False
                except SpecError:
                    opt.toggle.disabled = True
            else:
                opt.toggle.disabled = False
        others = {k: v for k, v in inputs.items() if k != "lora_targets"}
        current = tuple(self.controls["lora_targets"].value)
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

    def set_targets(self, value: tuple[str, ...], options: tuple[str, ...] | None = None) -> None:
        sel = self.controls["lora_targets"]
        options = self.targets if options is None else options
        if tuple(sel.options) != options:
            sel.options = options  # resets the selection: set it again below
        if tuple(sel.value) != value:
            sel.value = value

    def set(self, f: str, x: Any) -> None:
        """Set field `f` from a `value` dict: a SpecError names a value of the wrong kind or range (the
        library checks the combination when the estimate is built)."""
        if f in bool_fields():
            if not isinstance(x, bool):
                raise SpecError(f, x, "True or False")
        elif f == "lora_targets":
            x = _targets(x)
            if not isinstance(x, list | tuple) or not all(m in self.targets for m in x):
                raise SpecError(f, x, "a list of " + ", ".join(self.targets))
            self.set_targets(tuple(x))
            return
        else:
            from .form import set_number

            set_number(self.controls[f], f, x)
            return
        self.controls[f].value = x
