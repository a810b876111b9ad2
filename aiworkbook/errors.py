"""One error type for bad input, so callers (CLI, widgets) can show it without a traceback."""

from __future__ import annotations


class SpecError(ValueError):
    """Bad input: names the file (if any), the field, the value and what is allowed."""

    def __init__(self, field: str, value: object, allowed: str, *, source: str | None = None) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        self.source = source
        where = f"{source}: " if source else ""
        super().__init__(f"{where}field '{field}' = {value!r} is not valid; allowed: {allowed}")
