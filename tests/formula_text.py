"""Read a sizing formula's text back as arithmetic, to check it against the number shown beside it.

The texts are written for people: "32 layers · (2,048 tokens · 200,840 B [per-layer terms]) / 2 tp +
2,048 · 32788 B ids/labels". Read back, a number (thousands commas allowed; "64.00 MiB" and "4.127 bits"
in bytes) is a value and the words after it its unit; `·` multiplies, `/` divides, `+` and `−` add and
subtract, min(a, b) is the smaller; a parenthesised group after an operator (or after words naming it:
"one layer recomputed (...)") is arithmetic and one right after a value is a note; `[...]` is a note;
an introduction ending in ": " is skipped, and "0 on the GPU: ..." reads 0. A text with no number
reads None ("5 % of allocated bytes" reads 5: the caller knows it is a share).
"""

from __future__ import annotations

import re
from fractions import Fraction

UNITS: dict[str, Fraction] = {
    "KiB": Fraction(1 << 10),
    "MiB": Fraction(1 << 20),
    "GiB": Fraction(1 << 30),
    "TiB": Fraction(1 << 40),
    "bits": Fraction(1, 8),
}
_TOKEN = re.compile(
    r"(?P<num>(?<![\w.\-])\d[\d,]*(?:\.\d+)?(?![\w\-]))|(?P<op>\s+[/+−]\s+|\s*·\s*)|(?P<open>\()|(?P<close>\))"
    r"|(?P<bra>\[)|(?P<ket>\])|(?P<word>[^\s()\[\]·]+)|(?P<space>\s+)"
)


class NotArithmetic(ValueError):
    pass


def _strip_brackets(text: str) -> str:
    out, depth = [], 0
    for ch in text:
        depth += ch == "["
        if not depth:
            out.append(ch)
        depth -= ch == "]"
    return "".join(out)


def _after_intro(text: str) -> str:
    """The text after its last top-level ": " (an introduction such as "AMP (...): ")."""
    depth, cut = 0, 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and text.startswith(": ", i):
            cut = i + 2
    return text[cut:]


def read(text: str) -> tuple[Fraction, Fraction] | None:
    """(the text's value, how far the number may lie from it: the rounding of each decimal figure, and 8
    per division, which the code floors or rounds up to whole blocks), or None when the text says no
    number (a description). "0 on the GPU: ..." (a figure of 0 with what moved elsewhere) reads 0."""
    if re.match(r"0 [a-z(]", text):
        return Fraction(0), Fraction(0)
    text = _after_intro(_strip_brackets(text))
    toks: list[tuple[str, str]] = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup or ""
        if kind != "space":
            toks.append((kind, m.group().strip()))
    if not any(k == "num" for k, _ in toks):
        return None
    pos = 0
    divisions = 0

    def peek() -> tuple[str, str]:
        return toks[pos] if pos < len(toks) else ("end", "")

    def skip_note() -> None:
        """Words after a value (its unit, what it is) and a parenthesised note."""
        nonlocal pos
        while True:
            kind, _ = peek()
            if kind == "word" or (kind == "num" and toks[pos - 1][0] == "word"):
                pos += 1  # a word, or a number inside a note's words ("one of 8 chunks")
            elif kind == "open":
                depth = 0
                while pos < len(toks):
                    depth += toks[pos][0] == "open"
                    depth -= toks[pos][0] == "close"
                    pos += 1
                    if depth == 0:
                        break
            else:
                return

    def atom() -> tuple[Fraction, Fraction]:
        nonlocal pos
        kind, tok = peek()
        if kind == "word" and tok == "min" and toks[pos + 1][0] == "open":  # min(a, b)
            pos += 2
            first = expr()
            second = expr()
            if peek()[0] != "close":
                raise NotArithmetic("min() takes two numbers")
            pos += 1
            skip_note()
            return min(first, second)
        while kind == "word" and pos + 1 < len(toks):  # "one layer recomputed (...)": words naming a group
            if toks[pos + 1][0] not in ("word", "open"):
                break
            pos += 1
            kind, tok = peek()
        if kind == "open":
            pos += 1
            v, err = expr()
            if peek()[0] != "close":
                raise NotArithmetic(f"unclosed group at {tok!r}")
            pos += 1
        elif kind == "num":
            pos += 1
            v = Fraction(tok.replace(",", ""))
            decimals = len(tok.split(".")[1]) if "." in tok else 0
            err = Fraction(1, 2 * 10**decimals) if decimals else Fraction(0)
            unit = UNITS.get(peek()[1])
            if unit:
                pos += 1
                v, err = v * unit, err * unit
        else:
            raise NotArithmetic(f"expected a number at {tok!r}")
        skip_note()
        return v, err

    def term() -> tuple[Fraction, Fraction]:
        nonlocal pos, divisions
        v, err = atom()
        while peek()[1] in ("·", "/"):
            op = peek()[1]
            pos += 1
            r, rerr = atom()
            if op == "·":
                v, err = v * r, err * abs(r) + abs(v) * rerr + err * rerr
            else:
                divisions += 1
                v, err = v / r, (err + abs(v) * rerr / abs(r)) / abs(r)
        return v, err

    def expr() -> tuple[Fraction, Fraction]:
        nonlocal pos
        v, err = term()
        while peek()[1] in ("+", "−"):
            op = peek()[1]
            pos += 1
            r, rerr = term()
            v, err = (v + r if op == "+" else v - r), err + rerr
        return v, err

    v, err = expr()
    if pos != len(toks):
        raise NotArithmetic(f"left over: {' '.join(t for _, t in toks[pos:])!r}")
    return v, err + 8 * divisions
