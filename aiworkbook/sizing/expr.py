"""Term: a number and the text that says how it was made, combined by the same operations, so a
formula shown beside a figure is built from the expression that computed it and cannot drift from it.

    weights = Term(n, "{:,} params") * Term(2, "{} B") // Term(8, "{} tp")
    weights.value  # n * 2 // 8
    weights.text   # "8,030,261,248 params · 2 B / 8 tp"

Values may be numpy arrays (sweeps and capacity solvers); the text is rendered only when asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Term:
    """A value with its rendering: `*` renders " · ", `//` " / ", `+` " + "; `fmt` formats the value."""

    __slots__ = ("_render", "value")

    def __init__(self, value: Any, fmt: str = "{}", render: Callable[[], str] | None = None) -> None:
        self.value = value
        self._render = render if render is not None else (lambda: fmt.format(value))

    @property
    def text(self) -> str:
        return self._render()

    def _join(self, other: Term, value: Any, sep: str) -> Term:
        return Term(value, render=lambda: f"{self.text}{sep}{other.text}")

    def __mul__(self, other: Term) -> Term:
        return self._join(other, self.value * other.value, " · ")

    def __floordiv__(self, other: Term) -> Term:
        return self._join(other, self.value // other.value, " / ")

    def __add__(self, other: Term) -> Term:
        return self._join(other, self.value + other.value, " + ")

    def grouped(self) -> Term:
        """The same value, its text in parentheses (a sum about to be multiplied)."""
        return Term(self.value, render=lambda: f"({self.text})")

    def said(self, suffix: str) -> Term:
        """The same value with `suffix` appended to its text (a note on what the term is)."""
        return Term(self.value, render=lambda: self.text + suffix)

    def __repr__(self) -> str:
        return f"Term({self.value!r}, {self.text!r})"
