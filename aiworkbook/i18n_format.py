"""Numbers in the viewer's language: the one place where a figure gets its decimal sign and digit
grouping. English keeps Python's own format (`4,096`, `40.24`); Dutch and German use Babel's CLDR
data (`4.096`, `40,24`; https://babel.pocoo.org/en/latest/numbers.html). Babel loads only when a
figure is formatted in nl or de, so an English page pays nothing for it."""

from __future__ import annotations

import math
from functools import cache
from typing import Any

#: The variable that carries `aiworkbook app --lang` to a dashboard's kernel (here, not in the CLI: a
#: dashboard reads it at start-up and importing aiworkbook.cli there costs typer and the CLI's modules).
LANG_ENV = "AIWORKBOOK_LANG"


def check(lang: Any) -> str:
    """`lang` itself (a language with a catalogue, aiworkbook.catalogue.languages(); its name is the
    CLDR locale its figures are formatted in), or a SpecError naming the languages there are."""
    from aiworkbook.catalogue import check_lang

    return check_lang(lang)


@cache
def _pattern(digits: int, group: bool) -> str:
    return ("#,##0" if group else "0") + ("." + "0" * digits if digits > 0 else "")


def fixed(x: float, digits: int = 2, lang: str = "en", group: bool = True) -> str:
    """`x` with exactly `digits` decimals, digits grouped by thousands (`group`): 40.24 / 40,24."""
    if check(lang) == "en":
        return f"{x:,.{digits}f}" if group else f"{x:.{digits}f}"
    from babel.numbers import format_decimal

    return str(format_decimal(x, format=_pattern(digits, group), locale=check(lang)))


def integer(n: float, lang: str = "en") -> str:
    """A whole number with thousands grouped: 4,096 / 4.096."""
    return fixed(round(n), 0, lang)


def general(x: float, sig: int = 3, lang: str = "en") -> str:
    """Python's `{x:.{sig}g}` with the language's decimal sign (exponents left as they are)."""
    s = f"{x:.{sig}g}"
    return s if check(lang) == "en" else s.replace(".", decimal_sign(lang))


def percent(fraction: float, digits: int = 1, lang: str = "en") -> str:
    """A fraction as a percentage: 0.123 -> 12.3% / 12,3 %."""
    if check(lang) == "en":
        return f"{fraction:.{digits}%}"
    return f"{fixed(fraction * 100, digits, lang)} %"


def usd_digits(usd: float) -> int:
    """Decimals a dollar figure is shown with: 2, or three significant digits under a dollar
    ($0.0000336, not $0.00; never an exponent), never a zero past the cents ($0.70, $0.025)."""
    if usd >= 1 or usd <= 0 or not math.isfinite(usd):
        return 2
    digits = max(2, 2 - math.floor(math.log10(usd)))
    shown = round(usd, digits)
    while digits > 2 and round(shown, digits - 1) == shown:  # $0.70, not $0.700: no zeros past the cents
        digits -= 1
    return digits


def money(usd: float, lang: str = "en", digits: int | None = None, *, sign: bool = True) -> str:
    """US dollars, the one formatter of a dollar figure: $1.26 in English; Babel's currency format in nl
    (US$ 1,26) and de (1,26 $). One rounding rule for every face (`usd_digits`: two decimals from a
    dollar up, three significant digits under one: $0.545, never $0.54 on one face and $0.545 on
    another); `digits` only for a figure shown whole ($ per run); `sign=False`: the number alone, in
    `lang`'s number format, for a column whose heading says $."""
    if digits is None:
        digits = usd_digits(usd)
    if not sign:
        return fixed(usd, digits, lang)
    if check(lang) == "en":
        return f"${usd:,.{digits}f}"
    from babel import Locale
    from babel.numbers import format_currency

    pattern = Locale.parse(check(lang)).currency_formats["standard"].pattern.split(";")[0]
    pattern = pattern.replace("0.00", "0" + ("." + "0" * digits if digits > 0 else ""))
    return str(format_currency(usd, "USD", format=pattern, locale=check(lang), currency_digits=False))


@cache
def decimal_sign(lang: str) -> str:
    if check(lang) == "en":
        return "."
    from babel.numbers import get_decimal_symbol

    return str(get_decimal_symbol(check(lang)))


@cache
def group_sign(lang: str) -> str:
    if check(lang) == "en":
        return ","
    from babel.numbers import get_group_symbol

    return str(get_group_symbol(check(lang)))


def vega_locale(lang: str) -> dict[str, Any]:
    """A Vega number-format locale (d3-format) for chart axes and tooltips in `lang`."""
    return {
        "decimal": decimal_sign(lang),
        "thousands": group_sign(lang),
        "grouping": [3],
        "currency": ["$", ""] if check(lang) == "en" else ["", " $"],
    }
