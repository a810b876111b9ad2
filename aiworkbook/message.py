"""A sentence the library says, kept as a message id with named arguments (bytes, a device, counts,
lists) and put into words only when it is shown, in the viewer's language.

    note = Msg("roofline.buffers", size=268435456, free=free, device="cpu")
    str(note)          # the English text: what JSON, the CLI and goldens see, unchanged
    note.render("nl")  # "twee buffers van 256,00 MiB tegenover 20,54 GiB vrij op cpu"

A Msg is a `str` whose value is its English text, so every place that stores, prints or serialises
a note keeps working; the id and the arguments ride along for the places that show it in another
language (`words(x, lang)`). The template of each id is its entry in the language's gettext
catalogue (aiworkbook/locale/<lang>/LC_MESSAGES/messages.po, aiworkbook.catalogue). A field may carry a kind after a colon, which formats the
figure for the language with Babel (aiworkbook.i18n_format, aiworkbook.units):

    {n:int}      4,096 / 4.096            {x:f2}  two decimals, not grouped: 3.14 / 3,14 (f0..f9)
    {x:num}      str(x): 0.5 / 0,5        {n:bytes}  256.00 MiB / 256,00 MiB
    {x:g}        Python's `g`: 500 for 500.0, 0.25 / 0,25
    {n:bytes:GiB}  58.68 GiB / 58,68 GiB (in the unit named)
    {r:rate}     GB/s as datasheets write it ({r:rate:auto}: B/s .. TB/s by size)
    {x:pct0}     a fraction as a percentage: 5% / 5 % (pct0..pct9)
    {s:seconds}  ns .. days by magnitude: 239.73 s, 4.0 min / 4,0 min
    {x:value:$/Mtok}  a figure in a section's unit (units.fmt_value: $, $/h, $/Mtok, B, s, fraction ...)
    {xs:list}    the items as `num` (a Msg in the language), joined by ", " (by "; " where a decimal
                 comma would make it ambiguous)
    {n:plural:one=trial|other=trials}   the form CLDR's plural rule of the language picks for n
    {m}          a nested Msg in the same language, anything else as str()
    A figure given as None (not recorded) reads n/a in the language with any figure kind.
"""

from __future__ import annotations

import string
from functools import cache
from typing import Any


class Msg(str):
    """A message id with named arguments; its str value is the English text."""

    id: str
    args: dict[str, Any]

    def __new__(cls, id: str, /, **args: Any) -> Msg:
        self = super().__new__(cls, render(id, args, "en"))
        self.id = id
        self.args = args
        return self

    def render(self, lang: str = "en") -> str:
        """The words of this message in `lang`."""
        return str(self) if lang == "en" else render(self.id, self.args, lang)

    def __reduce__(self) -> tuple[Any, ...]:  # pickling (a proof's child process) keeps the id
        return (_rebuild, (self.id, self.args))

    def __copy__(self) -> Msg:  # a message is not changed once made: a copy is itself (no re-rendering)
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Msg:
        return self

    def __repr__(self) -> str:
        return f"Msg({self.id!r}, {', '.join(f'{k}={v!r}' for k, v in self.args.items())})"


def _rebuild(id: str, args: dict[str, Any]) -> Msg:
    return Msg(id, **args)


class Joined(Msg):
    """Messages and notation side by side, said piece by piece: a sizing formula is its figures' and
    words' messages joined by operators and brackets, which every language writes alike. Kept flat (a
    Joined inside is spliced in), so a stored formula stays shallow."""

    parts: tuple[Any, ...]

    def __new__(cls, *parts: Any) -> Joined:
        flat: list[Any] = []
        for p in parts:
            items = p.parts if isinstance(p, Joined) else (p,) if isinstance(p, Msg) or p else ()
            if not items:
                continue
            if flat and type(flat[-1]) is str and type(items[0]) is str:
                flat[-1] += items[0]  # notation next to notation: one piece
                flat.extend(items[1:])
            else:
                flat.extend(items)
        self = str.__new__(cls, "".join(map(str, parts)))
        self.id, self.parts = "", tuple(flat)
        self.args = {"parts": self.parts}
        return self

    def render(self, lang: str = "en") -> str:
        return str(self) if lang == "en" else "".join(words(p, lang) for p in self.parts)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Joined, self.parts)

    def __repr__(self) -> str:
        return f"Joined({', '.join(map(repr, self.parts))})"


def to_data(x: Any) -> Any:
    """A message as JSON keeps it (a profile stores its formulas so): {"id", "args"}, a Joined as
    {"parts": [...]}; figures and plain text as they are (numpy's as Python's)."""
    if isinstance(x, Joined):
        return {"parts": [to_data(p) for p in x.parts]}
    if isinstance(x, Msg):
        return {"id": x.id, "args": {k: to_data(v) for k, v in x.args.items()}}
    if isinstance(x, list | tuple):
        return [to_data(v) for v in x]
    if isinstance(x, str):
        return str(x)
    return x.item() if hasattr(x, "item") else x


def from_data(d: Any) -> Any:
    """`to_data`'s message back; SpecError for an id this version's catalogue does not hold."""
    if isinstance(d, dict) and set(d) == {"parts"} and isinstance(d["parts"], list):
        return Joined(*(from_data(p) for p in d["parts"]))
    if isinstance(d, dict) and set(d) == {"id", "args"} and isinstance(d["id"], str):
        if not isinstance(d["args"], dict):
            from aiworkbook.errors import SpecError

            raise SpecError("message args", d["args"], "an object of named arguments")
        return Msg(d["id"], **{str(k): from_data(v) for k, v in d["args"].items()})
    if isinstance(d, list):
        return [from_data(v) for v in d]
    return d


def quoted(text: object) -> Msg:
    """Words from outside this library (an OSError's strerror, a decoder's reason), kept as they were
    said: English prints them as before, Dutch and German mark them as a quotation («No such file or
    directory»), so a reader sees whose words they are (tests/english_left.py skips a quotation)."""
    return Msg("outside.quoted", text=str(text))


def words(x: object, lang: str = "en") -> str:
    """What a person reads for `x` in `lang`: a Msg's words, anything else as it is (a figure, a name,
    a note from a library outside this one)."""
    return x.render(lang) if isinstance(x, Msg) else str(x)


def render(id: str, args: dict[str, Any], lang: str = "en") -> str:
    from aiworkbook.catalogue import template

    said = _Words(lang)
    pieces = _pieces(template(id, lang))
    if pieces is None:  # a field with an attribute, an index or a conversion: str.format's own way
        return said.vformat(template(id, lang), (), args)
    return "".join(
        text if name is None else text + said.format_field(args[name], spec) for text, name, spec in pieces
    )


@cache
def _pieces(template: str) -> tuple[tuple[str, str | None, str], ...] | None:
    """A template parsed once: (literal text, field name or None, kind) pieces; None where a field is
    more than a name (left to str.format). Formulas render thousands of messages an estimate."""
    out = []
    for text, name, spec, conversion in string.Formatter().parse(template):
        if name is not None and (conversion or not name.isidentifier() or "{" in (spec or "")):
            return None
        out.append((text, name, spec or ""))
    return tuple(out)


class _Words(string.Formatter):
    """str.format with the message kinds above, figures in `lang`'s format."""

    def __init__(self, lang: str) -> None:
        self.lang = lang

    def format_field(self, value: Any, spec: str) -> str:
        from aiworkbook import i18n_format as f
        from aiworkbook.units import fmt_bytes, fmt_rate, fmt_seconds, fmt_value

        lang = self.lang
        kind, _, rest = spec.partition(":")
        if value is None and kind in _FIGURES:  # a figure not recorded reads n/a in the language
            return Msg("value.na").render(lang)
        if kind == "int":
            return f.integer(value, lang)
        if len(kind) == 2 and kind[0] == "f" and kind[1].isdigit():
            return f.fixed(value, int(kind[1]), lang, group=False)
        if kind == "num":
            return _num(value, lang)
        if kind == "g":
            return f.general(value, 6, lang)
        if len(kind) == 4 and kind[:3] == "pct" and kind[3].isdigit():
            return f.percent(value, int(kind[3]), lang)
        if kind == "bytes":  # {n:bytes:GiB} in the unit named
            return fmt_bytes(value, rest or "auto", lang=lang)
        if kind == "rate":  # {r:rate:auto} picks the unit by size
            return fmt_rate(value, rest or "GB/s", lang=lang)
        if kind == "seconds":
            return fmt_seconds(value, lang)
        if kind == "value":  # {x:value:$/Mtok}: in the unit a typed section's field declares
            return fmt_value(value, rest, lang)
        if kind == "list":
            items = [words(v, lang) if isinstance(v, Msg) else _num(v, lang) for v in value]
            figures = [i for v, i in zip(value, items, strict=True) if not isinstance(v, Msg)]
            comma = any("," in i for i in figures)  # 0,5, 1,0 would read as four numbers
            return ("; " if comma else ", ").join(items)
        if kind == "plural":
            return _plural(value, rest, lang)
        if spec:
            from aiworkbook.errors import SpecError

            raise SpecError(
                "message field kind",
                spec,
                "int, num, g, f0..f9, pct0..pct9, bytes, rate, seconds, value:<unit>, list, plural:…",
            )
        return words(value, lang)


#: the kinds that format a figure: None (not recorded) reads n/a in the language, never "None"
_FIGURES = (
    "int",
    "num",
    "g",
    "bytes",
    "rate",
    "seconds",
    "value",
    *(f"f{d}" for d in range(10)),
    *(f"pct{d}" for d in range(10)),
)


def _num(v: object, lang: str) -> str:
    """Python's own str() of a figure (1000, 0.5), with the language's decimal sign."""
    from aiworkbook.i18n_format import decimal_sign

    return str(v) if lang == "en" or not isinstance(v, float) else str(v).replace(".", decimal_sign(lang))


def _plural(n: float, forms: str, lang: str) -> str:
    """The form of `forms` ("one=trial|other=trials") that the language's CLDR plural rule picks for n."""
    from babel import Locale

    by = dict(part.split("=", 1) for part in forms.split("|"))
    return by.get(Locale.parse(lang).plural_form(abs(n)), by["other"])


def record(x: object) -> dict[str, Any] | None:
    """What a stored file keeps of a Msg so that it is said in another language after it is read back:
    {"id": ..., "args": {...}} (a nested Msg as its own record under {"msg": ...}); None for any other
    text. The file keeps the English text beside it (JSON, the CLI and goldens read that)."""
    if not isinstance(x, Msg):
        return None
    return {"id": x.id, "args": {k: _arg_record(v) for k, v in x.args.items()}}


def _arg_record(v: Any) -> Any:
    if isinstance(v, Msg):
        return {"msg": record(v)}
    if isinstance(v, list | tuple):
        return [_arg_record(x) for x in v]
    if isinstance(v, str | int | float | bool) or v is None:
        return v if not isinstance(v, str) else str(v)
    return str(v)


def restore(text: object, rec: object) -> str:
    """The Msg a stored `text` was made from, rebuilt from its `record`; `text` itself where there is no
    record, the id is not in the catalogues, or the arguments do not fit its template (a hand-edited or
    older file): a stored sentence is never lost, at worst it stays in the language it was written in."""
    if not isinstance(rec, dict):
        return str(text)
    try:
        return _restore(rec)
    except Exception:  # noqa: BLE001 (anything a file holds falls back to its own text)
        return str(text)


def _restore(rec: dict[str, Any]) -> Msg:
    from aiworkbook.catalogue import catalogue, languages

    id, args = rec.get("id"), rec.get("args")
    if not isinstance(id, str) or id not in catalogue("en") or not isinstance(args, dict):
        raise ValueError(f"no message {id!r}")
    m = Msg(id, **{str(k): _arg_restore(v) for k, v in args.items()})
    for lang in languages():  # a language may format a field English prints as it is (blocks:int)
        m.render(lang)
    return m


def _arg_restore(v: Any) -> Any:
    if isinstance(v, dict):
        return _restore(v["msg"])
    if isinstance(v, list):
        return [_arg_restore(x) for x in v]
    return v
