"""What a CFO asks of the report: the monthly cost at an expected traffic, $ per million tokens on each
GPU option side by side, and the energy in dollars at a stated $/kWh, each price with its provenance.

The figures come from the answer (aiworkbook.sizing.answer) and the catalogue's per-GPU rows
(`capacity.per_gpu`), so they agree with the report's headline and cost table; a month is the traffic
times 365.25 / 12 days at the $ per million tokens the answer quotes (a lower bound at roofline
throughput: output tokens served, or tokens trained).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from aiworkbook.errors import SpecError
from aiworkbook.i18n_format import money
from aiworkbook.message import Msg
from aiworkbook.profile.report_blocks import Block, h, p, table, usd
from aiworkbook.sizing.cost import energy_usd, usd_for_tokens
from aiworkbook.units import fmt_value

#: the expected traffic when none is given: 100 million tokens a day (about 1,160 tokens/s)
DEFAULT_TOKENS_PER_DAY = 100_000_000
DAYS_PER_MONTH = 365.25 / 12
#: bounds of the inputs: up to 10^15 tokens a day; a kWh up to $100
MAX_TOKENS_PER_DAY = 1e15
MAX_USD_PER_KWH = 100.0


@dataclass(frozen=True)
class Traffic:
    """The CFO's inputs: tokens a day (output tokens served, or tokens trained) and the price of a kWh.
    None: the default (DEFAULT_TOKENS_PER_DAY; each workload's assumed $/kWh), said as such."""

    tokens_per_day: float | None = None
    usd_per_kwh: float | None = None

    def __post_init__(self) -> None:
        t, k = self.tokens_per_day, self.usd_per_kwh
        if t is not None and (_bad(t) or not 0 < t <= MAX_TOKENS_PER_DAY):
            raise SpecError("tokens_per_day", t, Msg("allowed.cfo_tokens"))
        if k is not None and (_bad(k) or not 0 <= k <= MAX_USD_PER_KWH):
            raise SpecError("usd_per_kwh", k, Msg("allowed.cfo_kwh"))

    @property
    def tokens(self) -> float:
        return DEFAULT_TOKENS_PER_DAY if self.tokens_per_day is None else self.tokens_per_day


def _bad(x: Any) -> bool:
    return isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x)


@dataclass(frozen=True)
class Priced:
    """One workload of the profile as the report prices it: its answer (None: sized without a catalogue
    GPU on CUDA), the spec and workload for the per-GPU options, and the estimate's assumptions."""

    name: str
    spec: Any
    workload: Any
    answer: Any
    assumptions: dict[str, Any]


def monthly(usd_per_mtok: float, tokens_per_day: float) -> float:
    """$ a month at `tokens_per_day`: tokens a month / 10^6 × $ per million tokens."""
    return usd_for_tokens(usd_per_mtok, tokens_per_day * DAYS_PER_MONTH)


def blocks(items: list[Priced], traffic: Traffic, lang: str) -> list[Block]:
    """The CFO's part of the cost section; nothing where no workload has a price."""
    priced = [i for i in items if i.answer is not None and i.answer.usd_per_mtok is not None]
    if not priced:
        return []
    tpd = traffic.tokens
    how = Msg("report.cfo.default") if traffic.tokens_per_day is None else Msg("report.cfo.given")
    out = [
        h(3, Msg("report.cfo.title").render(lang)),
        p(Msg("report.cfo.traffic", tokens=tpd, how=how, days=DAYS_PER_MONTH).render(lang), "aiwb-cfo"),
    ]
    rows: list[tuple[str, ...]] = []
    energy: dict[tuple[Any, ...], list[str]] = {}  # one sentence per ($/kWh, where it came from, PUE)
    for i in priced:
        a, o = i.answer, i.answer.option
        kwh_price = traffic.usd_per_kwh if traffic.usd_per_kwh is not None else recorded(i, "usd_per_kwh")
        kwh = _kwh(o.joules_per_mtok, tpd)
        rows.append(
            (
                i.name,
                f"{o.gpus} × {o.on}",
                _per(a, lang),
                dollars(monthly(a.usd_per_mtok, tpd), lang),
                fmt_value(kwh, "kWh", lang) if kwh is not None else "—",  # energy, not money
                dollars(energy_usd(kwh, kwh_price), lang)
                if kwh is not None and kwh_price is not None
                else "—",
                a.price_words.render(lang),
            )
        )
        if kwh is not None and kwh_price is not None:
            energy.setdefault((kwh_price, traffic.usd_per_kwh is not None, recorded(i, "pue")), []).append(
                i.name
            )
    header = [m.render(lang) for m in _columns()]
    out.append(table(header, rows, "aiwb-cfo-month"))
    for (kwh_price, given, pue), names in energy.items():
        how = Msg("report.cfo.given") if given else Msg("report.cfo.assumed")
        said = Msg("report.cfo.energy", name=", ".join(names), usd=kwh_price, how=how, pue=pue)
        out.append(p(said.render(lang), "aiwb-cfo-energy"))
    for i in priced:
        out += _options(i, tpd, lang)
    return out


def recorded(item: Priced, key: str) -> float | None:
    """A stored estimate's assumption when it is a number (finite, >= 0, not a bool): a locked profile
    is a file anyone may have edited, so a value of another kind counts as not recorded."""
    v = item.assumptions.get(key)
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
        return None
    return float(v)


def _columns() -> tuple[Msg, ...]:
    """The monthly table's headers."""
    return (
        Msg("report.cfo.col.workload"),
        Msg("report.cfo.col.setup"),
        Msg("sizer.per_mtok"),
        Msg("report.cfo.month"),
        Msg("report.cfo.col.kwh"),
        Msg("report.cfo.col.energy_usd"),
        Msg("report.cfo.col.price"),
    )


def dollars(x: float, lang: str) -> str:
    """A monthly sum: whole dollars from $100 on, else three significant digits (never a bare 0)."""
    return money(x, lang, 0 if x >= 100 else None, sign=False)


def _per(a: Any, lang: str) -> str:
    """The answer's $ per million tokens with what the tokens are."""
    what = Msg("report.cfo.per_output") if a.mode == "infer" else Msg("report.cfo.per_trained")
    return f"{usd(a.usd_per_mtok, lang)} {what.render(lang)}"


def _kwh(joules_per_mtok: float | None, tokens_per_day: float) -> float | None:
    """kWh a month at the facility: J per million tokens × millions of tokens a month / 3.6 MJ."""
    if joules_per_mtok is None:
        return None
    return joules_per_mtok * tokens_per_day * DAYS_PER_MONTH / 1e6 / 3.6e6


def _options(i: Priced, tokens_per_day: float, lang: str) -> list[Block]:
    """$ per million tokens on each catalogue GPU that holds the workload, side by side, cheapest
    first, with the month at the traffic, what was ranked and where the prices come from."""
    from aiworkbook.sizing import capacity
    from aiworkbook.sizing.prices import list_provenance
    from aiworkbook.specs import get_gpu

    rows = sorted(
        (r for r in capacity.per_gpu(i.spec, i.workload) if r["usd_per_mtok"] is not None),
        key=lambda r: (r["usd_per_mtok"], r["gpus"]),
    )
    if not rows:
        return []
    body = [
        (
            r["gpu"],
            str(r["gpus"] * (i.workload.dp if i.workload.training else 1)),
            usd(r["price_per_gpu_hour"], lang),
            usd(r["usd_per_mtok"], lang),
            dollars(monthly(r["usd_per_mtok"], tokens_per_day), lang),
        )
        for r in rows
    ]
    header = [
        "GPU",
        *(
            m.render(lang)
            for m in (
                Msg("report.cfo.gpus"),
                Msg("report.cfo.per_hour"),
                Msg("sizer.per_mtok"),
                Msg("report.cfo.month"),
            )
        ),
    ]
    said = "; ".join(m.render(lang) for m in list_provenance(get_gpu(r["gpu"]) for r in rows))
    return [
        h(3, Msg("report.cfo.options", name=i.name).render(lang)),
        table(header, body, "aiwb-cfo-options"),
        p(f"{capacity.cost_basis(i.spec, i.workload).render(lang)}; {said}", "aiwb-price-source"),
    ]
