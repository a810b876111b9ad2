"""Controls built from `Workload.fields()`: one description of each field (type, choices, bounds,
doc, the modes it applies to) makes the CLI's options (aiworkbook/cli/size_cmds.py) and the widgets'
controls, so a bound lives in one place.

Numbers are typed into plain text boxes and parsed by the library (`workload.parse_field`): ipywidgets'
bounded boxes clamp silently and its number boxes drop what the browser cannot parse ("1e12" typed as
the sequence length became 112), so a value out of range reached the estimate unseen. Here it is
refused with the library's message, naming the field and the allowed range.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import ipywidgets as W
import traitlets

from .base import OptionalBox, dropdown


@cache
def schema() -> dict[str, dict[str, Any]]:
    """The Workload's own description of each field, by name (`Workload.fields()`), read once per
    kernel: a sizer asks it about 180 times while it builds (each a description of every field).
    Shared: read it, never change it."""
    from aiworkbook.sizing import Workload

    return {d["name"]: d for d in Workload.fields()}


def applies(field: str, mode: str) -> bool:
    """Whether `field` means something in `mode` (its control is shown only then)."""
    from aiworkbook.sizing.workload import applies as library_applies

    return library_applies(field, mode)


def choices_in(field: str, mode: str) -> tuple[Any, ...] | None:
    """The choices a mode narrows `field` to (QLoRA's weights: nf4 only), or None."""
    narrowed = schema()[field].get("choices_in_mode", {}).get(mode)
    return tuple(narrowed) if narrowed is not None else None


def effective(raw: dict[str, Any]) -> dict[str, Any]:
    """`raw` (every control's value) as the estimate takes it: a field that does not apply to the
    mode at its default (hidden controls keep their state for when they show again), a choice the
    mode narrows at an allowed value (the current one, else the default, else the first)."""
    info = schema()
    mode = str(raw.get("mode"))
    out = dict(raw)
    for f in raw:
        if f not in info:
            continue
        if not applies(f, mode):
            d = info[f]["default"]
            out[f] = list(d) if isinstance(d, list | tuple) else d
            continue
        narrowed = choices_in(f, mode)
        if narrowed is not None and out[f] not in narrowed:
            d = info[f]["default"]
            out[f] = d if d in narrowed else narrowed[0]
    return out


class NumberText(W.Text):
    """A text box for a number: `value` is the text as typed (a number set from Python is written as
    text); it never clamps or drops characters. It sends on Enter or a focus change, not per key."""

    value = traitlets.CUnicode("", help="the text as typed").tag(sync=True)

    def __init__(self, value: Any, description: str = "", **kw: Any) -> None:
        kw.setdefault("style", {"description_width": "initial"})
        super().__init__(value=_text(value), description=description, continuous_update=False, **kw)


class FieldText(NumberText):
    """The text box of a numeric Workload field: `number()` parses it through the library."""

    def __init__(
        self, field: str, value: Any, description: str = "", required: bool = False, **kw: Any
    ) -> None:
        super().__init__(value, description, **kw)
        self.field = field
        self.required = required  # an optional field this form always sets: empty is not offered

    def number(self) -> Any:
        """The typed value as the field takes it, or a SpecError naming the field and its range."""
        from aiworkbook.sizing.workload import parse_field

        return parse_field(self.field, self.value, required=self.required)


def _text(value: Any) -> str:
    return "" if value is None else str(value)


class OptionalField(OptionalBox):
    """An optional number (None: the library's default): the check box switches the number on. `value`
    is None when off, else what the box holds (a number set from Python, or the typed text, which
    `parse()` turns into the field's value or a SpecError)."""

    def __init__(self, field: str, description: str, start: Any) -> None:
        self.field = field
        self.toggle = self.toggle_box(description)
        self.number = FieldText(field, start, disabled=True, layout=W.Layout(width="9em"))
        self._wire()

    def _shown(self, v: Any) -> Any:
        return _text(v)

    def parse(self) -> Any:
        from aiworkbook.sizing.workload import parse_field

        return None if self.value is None else parse_field(self.field, self.value)


#: What the drop-down of an optional choice holds while the library decides (the recipe: None follows
#: the precision), shown in words (`choice.<it>`). ipywidgets reads a None value as "nothing selected"
#: and draws an empty box, which also left no way back to None once a recipe was picked.
#: attention: None runs what transformers runs for the model's family (sdpa, or eager where it has none).
#: English pages show values as they are.
UNSET = {"recipe": "follows the precision", "attention": "family default"}


def option_of(field: str, value: Any) -> Any:
    """The drop-down value that stands for the field's `value` (None: UNSET's word)."""
    return UNSET[field] if value is None and field in UNSET else value


def unset_first(field: str, values: Any) -> list[Any]:
    """A drop-down's options: an optional choice offers UNSET's word first."""
    return [UNSET[field], *values] if field in UNSET else list(values)


def control(field: str, value: Any, description: str, options: Any = None, optional: bool = True) -> Any:
    """The control for one Workload field: a drop-down for a choice (`options` overrides the field's
    choices, e.g. the ZeRO stages), a check box for a switch, a text box for a number (with a switch
    for an optional one, unless `optional=False`: a form that always sets it)."""
    return named(_control(field, value, description, options, optional), field, description)


def named(c: Any, field: str, description: str) -> Any:
    """Mark `c` as the control of `field`, shown as `description`: an error about the field names it
    as the screen does ("Sequence", not seq_len; Composite.field_label)."""
    c.aiwb_field, c.aiwb_label = field, description
    return c


def _control(field: str, value: Any, description: str, options: Any, optional: bool) -> Any:
    d = schema()[field]
    if options is not None or d["type"] == "choice":
        values = options if options is not None else unset_first(field, d["choices"])
        return dropdown(values, option_of(field, value), description)
    if d["type"] == "bool":
        return W.Checkbox(value=bool(value), description=description, indent=False)
    if d["type"] in ("int", "float"):
        if d["optional"] and optional:
            start = value if value is not None else (8 if d["type"] == "int" else 0.1)
            opt = OptionalField(field, description, start)
            opt.value = value
            return opt
        return FieldText(field, value, description, required=d["optional"])
    raise ValueError(f"no single control for {field} ({d['type']})")


def read(controls: dict[str, Any], mode: str | None = None) -> dict[str, Any]:
    """Every control's value as the Workload field it stands for; typed numbers parsed by the library
    (a SpecError names the first field out of range: nothing of it is used). With `mode`, a number
    box the mode hides is not parsed: it reads as the field's default, as `effective` would make it,
    and keeps its text for when it shows again (a bad concurrency left behind must not stop a switch
    to a training mode, where that box is not even shown)."""
    out = {}
    for f, c in controls.items():
        if mode is not None and isinstance(c, FieldText | OptionalField) and not applies(f, mode):
            default = schema()[f]["default"]
            out[f] = list(default) if isinstance(default, list) else default  # not the shared one
        elif isinstance(c, FieldText):
            out[f] = c.number()
        elif isinstance(c, OptionalField):
            out[f] = c.parse()
        elif isinstance(c, W.SelectMultiple):
            out[f] = list(c.value)
        elif f in UNSET and c.value == UNSET[f]:
            out[f] = None
        else:
            out[f] = c.value
    return out


def check_number(field: str, x: Any) -> Any:
    """A number from a `value` dict as the field takes it: the library checks it (a SpecError names
    the field and its range; a bool or text is refused, as typed text would be)."""
    from aiworkbook.errors import SpecError
    from aiworkbook.sizing.workload import parse_field

    if isinstance(x, bool) or not (x is None or isinstance(x, int | float)):
        parse_field(field, str(x))  # names the field and its range
        raise SpecError(field, x, "a number")
    return parse_field(field, x)


def set_number(c: Any, field: str, x: Any) -> None:
    """Set a number control from a `value` dict, checked first (`check_number`)."""
    check_number(field, x)
    c.value = x if isinstance(c, OptionalField) else _text(x)
