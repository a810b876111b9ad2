"""One money formatter (aiworkbook.i18n_format.money): no other module of the library or the widgets
writes a dollar figure itself, with its own rounding rule or its own "$" before a number. A figure a
face formats by hand drifts from the others ($0.5 on one, $0.50 on another)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from aiworkbook.i18n_format import money

ROOT = Path(__file__).resolve().parents[1]
HOME = ROOT / "aiworkbook" / "i18n_format.py"
RULES = ("usd_digits", "format_currency")  # the rounding rule and Babel's currency format


def _sources() -> list[Path]:
    return sorted(p for d in ("aiworkbook", "widgets") for p in (ROOT / d).rglob("*.py") if p != HOME)


NUMBER_FORMATTERS = {"fixed", "integer", "general", "fmt_number", "round", "format_decimal"}


def _a_figure(field: ast.FormattedValue) -> bool:
    """A replacement field that writes a number: a format spec (`:,.2f`) or a number formatter's call
    (a bare name, such as an environment variable's in a help text, is not one)."""
    if field.format_spec is not None:
        return True
    call = field.value
    if not isinstance(call, ast.Call):
        return False
    fn = call.func
    return (fn.id if isinstance(fn, ast.Name) else getattr(fn, "attr", "")) in NUMBER_FORMATTERS


def _dollar_before_a_field(node: ast.JoinedStr) -> bool:
    """An f-string with "$" right before a figure: f"${x:,.2f}", f"${fmt_number(x)}"."""
    parts = node.values
    return any(
        isinstance(a, ast.Constant)
        and isinstance(a.value, str)
        and a.value.endswith("$")
        and isinstance(b, ast.FormattedValue)
        and _a_figure(b)
        for a, b in zip(parts, parts[1:], strict=False)
    )


def _money_by_hand(path: Path) -> list[str]:
    found, where = [], path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.JoinedStr) and _dollar_before_a_field(node):
            found.append(f"{where}:{node.lineno}: f-string '$' before a figure")
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
        if name in RULES:
            found.append(f"{where}:{node.lineno}: {name}")
        if isinstance(node, ast.alias) and node.name in RULES:
            found.append(f"{where}:{getattr(node, 'lineno', 0)}: imports {node.name}")
    return found


def test_no_module_but_the_formatter_writes_a_dollar_figure():
    found = [hit for p in _sources() for hit in _money_by_hand(p)]
    assert not found, "\n".join(found)


def test_the_check_finds_money_written_by_hand(tmp_path):
    """The check is not blind: each way of writing money by hand is caught."""
    probes = (
        'x = 1.5\ns = f"${x:,.2f}"\n',
        'x = 1.5\ns = f"${fmt_number(x)} per M tokens"\n',
        "from aiworkbook.i18n_format import usd_digits\n",
    )
    for text in probes:
        bad = tmp_path / "probe.py"
        try:
            bad.write_text(text)
            assert _money_by_hand(bad), text
        finally:
            bad.unlink()
    env = tmp_path / "env.py"
    try:
        env.write_text('NAME = "TOKEN"\nhelp = f"from ${NAME} or a file"\n')  # a shell variable, not money
        assert not _money_by_hand(env)
    finally:
        env.unlink()


@pytest.mark.parametrize(
    ("usd", "lang", "sign", "shown"),
    [
        (0.5, "en", True, "$0.50"),
        (0.0259, "en", True, "$0.0259"),
        (1234.5, "en", False, "1,234.50"),
        (0.545, "nl", False, "0,545"),
        (1234.5, "de", True, "1.234,50\xa0$"),
    ],
)
def test_one_rule_with_and_without_the_sign(usd, lang, sign, shown):
    assert money(usd, lang, sign=sign) == shown
