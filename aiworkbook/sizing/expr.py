"""Term: a number and the words that say how it was made, combined by the same operations, so a
formula shown beside a figure is built from the expression that computed it and cannot drift from it.

    weights = Term(n, "term.params") * Term(2, "term.B") // Term(8, "term.tp")
    weights.value        # n * 2 // 8
    weights.text         # "8,030,261,248 params · 2 B / 8 tp": a message (aiworkbook.message.Joined)
    weights.text.render("de")  # "8.030.261.248 Parameter · 2 B / 8 TP"

A leaf's words are a message id of the catalogues with the value as its argument `n` (a bare whole
number is notation, like the operators and brackets every language writes alike; another bare figure
is `term.n`, its decimal sign the language's). So a formula is data (ids and figures) until it is shown, in the viewer's language.

A sum multiplied or divided is put in parentheses in the text, as the value is computed, so the text
read back as arithmetic gives the value (tests/formula_text.py reads it). Values may be numpy arrays
(sweeps and capacity solvers); the text is rendered only when asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiworkbook.message import Joined, Msg

#: A count or byte figure in a formula: an int, or a numpy array of them when a sweep (a heatmap, a fit
#: solver) evaluates a whole grid in one pass. The formulas are written once for both; numpy's operator
#: overloads do not type mixed int/array arithmetic, so it is Any, named for what it holds.
Num = Any

#: Precedence of a Term's outermost operation: a leaf, a product or quotient, a sum or difference.
_LEAF, _PRODUCT, _SUM = 0, 1, 2


class Term:
    """A value with its words: `*` renders " · ", `//` " / ", `+` " + ", `-` " − "; `id` (with `args`)
    is the message that says the value (given to it as `n`), a bare number when None."""

    __slots__ = ("_prec", "_render", "value")

    def __init__(
        self, value: Any, id: str | None = None, render: Callable[[], Msg] | None = None, **args: Any
    ) -> None:
        self.value = value
        if render is None and id is None and type(value) is int:  # a whole number reads alike everywhere

            def render() -> Msg:
                return Joined(str(value))

        elif render is None:
            name = id or "term.n"

            def render() -> Msg:
                return Msg(name, n=value, **args)

        self._render = render
        self._prec = _LEAF

    @property
    def text(self) -> Msg:
        return self._render()

    def _join(self, other: Term, value: Any, sep: str, prec: int, right_max: int) -> Term:
        left_max = _PRODUCT if prec == _PRODUCT else _SUM

        def render() -> Msg:
            left = Joined("(", self.text, ")") if self._prec > left_max else self.text
            right = Joined("(", other.text, ")") if other._prec > right_max else other.text
            return Joined(left, sep, right)

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
        return Term(self.value, render=lambda: Joined("(", self.text, ")"))

    def said(self, note: Msg, sep: str = " ") -> Term:
        """The same value with `note` after its text (what the term is), `sep` between."""
        out = Term(self.value, render=lambda: Joined(self.text, sep, note))
        out._prec = self._prec
        return out

    def introduced(self, what: Msg, sep: str = ": ") -> Term:
        """The same value with `what` before its text (what the expression is), `sep` between."""
        out = Term(self.value, render=lambda: Joined(what, sep, self.text))
        out._prec = self._prec
        return out

    def __repr__(self) -> str:
        return f"Term({self.value!r}, {self.text!r})"
