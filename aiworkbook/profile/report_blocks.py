"""The report as a list of blocks (heading, paragraph, list, table, chart, code) built once from a
LockedProfile, so the HTML and the Markdown renderers say the same thing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

BlockKind = Literal["h1", "h2", "h3", "p", "ul", "table", "chart", "code"]


@dataclass(frozen=True)
class Block:
    """One piece of the report. `chart` blocks carry an Altair chart builder's output as SVG."""

    kind: BlockKind
    text: str = ""
    items: tuple[str, ...] = ()
    header: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    svg: str = ""
    css: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


def h(level: int, text: str) -> Block:
    return Block(f"h{level}", text)  # type: ignore[arg-type]


def p(text: str, css: str = "") -> Block:
    return Block("p", text, css=css)


def ul(items: Any, css: str = "") -> Block:
    return Block("ul", items=tuple(str(i) for i in items), css=css)


def table(header: Any, rows: Any, css: str = "") -> Block:
    return Block("table", header=tuple(header), rows=tuple(tuple(str(c) for c in r) for r in rows), css=css)


def chart(name: str, title: str, svg: str) -> Block:
    return Block("chart", title, svg=svg, meta={"chart": name})


def code(text: str, lang: str = "") -> Block:
    return Block("code", text, meta={"lang": lang})


def usd(x: Any, lang: str = "en") -> str:
    """Dollars with enough digits to be read: 1.26, 0.126, 0.000412 (never a bare 0.000), in `lang`'s
    number format; "—" for no figure."""
    if x is None:
        return "—"
    from aiworkbook.i18n_format import money

    return money(float(x), lang, sign=False)  # the column says $
