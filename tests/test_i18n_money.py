"""One money formatter: aiworkbook.i18n_format.money, with usd_digits choosing the decimals where a
figure under a dollar must still be read (three significant digits, never an exponent)."""

from __future__ import annotations

from aiworkbook.i18n_format import fixed, money, usd_digits
from aiworkbook.units import fmt_value


def test_under_a_dollar_keeps_three_significant_digits():
    assert money(0.0000336, "en", None) == "$0.0000336"
    assert money(0.0259, "en", None) == "$0.0259"
    assert money(1234.5, "en", None) == "$1,234.50"
    assert money(0.0, "en", None) == "$0.00"
    assert money(0.0259, "en", 2) == "$0.03"  # fixed digits stay as asked
    assert money(0.0259, "en") == money(0.0259, "en", None)  # the default is the one rule


def test_every_face_reads_the_same_digits():
    for x in (0.0000336, 0.0259, 0.5, 3.0):
        for lang in ("nl", "de"):
            assert fixed(x, usd_digits(x), lang) in money(x, lang, None)
            assert fmt_value(x, "$/Mtok", lang).startswith(money(x, lang, None))
