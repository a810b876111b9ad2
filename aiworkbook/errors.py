"""One error type for bad input, so callers (CLI, widgets) can show it without a traceback."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

#: An error quotes at most this many characters of the value it rejects: a hand-edited 200 MB profile
#: must not come back as 200 MB of stderr.
MAX_QUOTE = 200


def quote(value: object, limit: int = MAX_QUOTE) -> str:
    """`repr(value)`, cut to `limit` characters with a note of how long it was."""
    try:  # a message (aiworkbook.message, a str that says itself in a language): its English text
        text = repr(str(value)) if isinstance(value, str) and hasattr(value, "render") else repr(value)
    except (ValueError, RecursionError):  # ints past sys.int_max_str_digits, self-nesting containers
        text = f"<{type(value).__name__}>"
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"


def printable(text: str, limit: int = MAX_QUOTE) -> str:
    """`text` for one line of a terminal: control characters (a newline, a carriage return, an escape
    sequence from a hand-edited key) written as escapes, cut at `limit` characters."""
    text = str(text)
    cut = len(text) > limit
    text = text[:limit]
    if not text.isprintable():
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text + ("…" if cut else "")


class SpecError(ValueError):
    """Bad input: names the file (if any), the field, the value and what is allowed."""

    def __init__(self, field: str, value: object, allowed: str, *, source: str | None = None) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        self.source = source
        where = f"{printable(source, 400)}: " if source else ""
        super().__init__(
            f"{where}field '{printable(field)}' = {quote(value)} is not valid; allowed: {printable(allowed, 1000)}"
        )


def refusal(exc: Any, fields: Collection[str], allowed: Callable[[str], str]) -> SpecError:
    """pydantic's refusal (a ValidationError) as the SpecError every face shows, for any model: a
    validator's own SpecError as it is; a name the model does not have, listing those it has; else the
    field, the value and what `allowed(field)` says the field's declaration allows."""
    err = exc.errors()[0]
    inner = (err.get("ctx") or {}).get("error")
    if isinstance(inner, SpecError):
        return inner
    loc = err.get("loc") or ("value",)
    name = str(loc[0])
    if name not in fields:
        return SpecError("field", name, ", ".join(fields))
    return SpecError(name, err.get("input"), allowed(name))
