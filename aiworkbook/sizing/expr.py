"""Term: a number and the text that says how it was made, combined by the same operations, so a
formula shown beside a figure is built from the expression that computed it and cannot drift from it.

    weights = Term(n, "{:,} params") * Term(2, "{} B") // Term(8, "{} tp")
    weights.value  # n * 2 // 8
    weights.text   # "8,030,261,248 params · 2 B / 8 tp"

A sum multiplied or divided is put in parentheses in the text, as the value is computed, so the text
read back as arithmetic gives the value (tests/formula_text.py reads it). Values may be numpy arrays
(sweeps and capacity solvers); the text is rendered only when asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: A count or byte figure in a formula: an int, or a numpy array of them when a sweep (a heatmap, a fit
#: solver) evaluates a whole grid in one pass. The formulas are written once for both; numpy's operator
#: overloads do not type mixed int/array arithmetic, so it is Any, named for what it holds.
Num = Any

#: Precedence of a Term's outermost operation: a leaf, a product or quotient, a sum or difference.
_LEAF, _PRODUCT, _SUM = 0, 1, 2


class Term:
    """A value with its rendering: `*` renders " · ", `//` " / ", `+` " + ", `-` " − "; `fmt` formats
    the value."""

    __slots__ = ("_prec", "_render", "value")

    def __init__(self, value: Any, fmt: str = "{}", render: Callable[[], str] | None = None) -> None:
        self.value = value
        self._render = render if render is not None else (lambda: fmt.format(value))
        self._prec = _LEAF

    @property
    def text(self) -> str:
        return self._render()

    def _join(self, other: Term, value: Any, sep: str, prec: int, right_max: int) -> Term:
        left_max = _PRODUCT if prec == _PRODUCT else _SUM

        def render() -> str:
            left = f"({self.text})" if self._prec > left_max else self.text
            right = f"({other.text})" if other._prec > right_max else other.text
            return f"{left}{sep}{right}"

        out = Term(value, render=render)
        out._prec = prec
        return out

    def __mul__(self, other: Term) -> Term:
        return self._join(other, self.value * other.value, " · ", _PRODUCT, _PRODUCT)

    def tight(self, other: Term) -> Term:
        """A product written without spaces ("2,048·2048·192"), as a per-layer or per-token term."""
        return self._join(other, self.value * other.value, "·", _PRODUCT, _PRODUCT)

    def __floordiv__(self, other: Term) -> Term:
        return self._join(other, self.value // other.value, " / ", _PRODUCT, _LEAF)

    def __add__(self, other: Term) -> Term:
        return self._join(other, self.value + other.value, " + ", _SUM, _SUM)

    def __sub__(self, other: Term) -> Term:
        return self._join(other, self.value - other.value, " − ", _SUM, _PRODUCT)

    def grouped(self) -> Term:
        """The same value, its text in parentheses (a sum about to be multiplied)."""
        return Term(self.value, render=lambda: f"({self.text})")

    def said(self, suffix: str) -> Term:
        """The same value with `suffix` appended to its text (a note on what the term is)."""
        out = Term(self.value, render=lambda: self.text + suffix)
        out._prec = self._prec
        return out

    def introduced(self, prefix: str) -> Term:
        """The same value with `prefix` before its text (what the expression is)."""
        out = Term(self.value, render=lambda: prefix + self.text)
        out._prec = self._prec
        return out

    def __repr__(self) -> str:
        return f"Term({self.value!r}, {self.text!r})"
