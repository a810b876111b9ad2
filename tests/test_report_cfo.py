"""What a CFO asks of the report (aiworkbook.profile.report_cfo): the month at an expected traffic
(tokens a day, its default said), $ per million tokens on each GPU option side by side, and the
energy in dollars at a stated $/kWh; the inputs are bounded and named when refused."""

from __future__ import annotations

import pytest
from english_left import english_left
from profile_fakes import priced_profile

from aiworkbook.cli import main
from aiworkbook.errors import SpecError
from aiworkbook.profile.report import answer_of, build, render_markdown
from aiworkbook.profile.report_blocks import usd
from aiworkbook.profile.report_cfo import DAYS_PER_MONTH, DEFAULT_TOKENS_PER_DAY, Traffic, dollars, monthly
from aiworkbook.sizing import Workload, capacity
from aiworkbook.specs import load_model
from aiworkbook.units import fmt_value

INFER = Workload(mode="infer", seq_len=4096, new_tokens=512, concurrency=8)


@pytest.fixture(scope="module")
def prof():
    return priced_profile(
        {"name": "chat", "model": "llama-3-8b", "gpu": "H100-SXM", "workload": INFER},
        {"name": "big", "model": "llama-3-70b", "gpu": "RTX-4090", "workload": INFER},
    )


def _table(md: str, first: str) -> list[list[str]]:
    lines = md.splitlines()
    i = next(k for k, x in enumerate(lines) if x.startswith(f"| {first} |"))
    rows = []
    for x in lines[i + 2 :]:
        if not x.startswith("|"):
            break
        rows.append([c.strip() for c in x.strip("|").split("|")])
    return rows


def test_the_month_is_the_traffic_at_the_answers_price_with_the_default_said(prof):
    md = render_markdown(prof)
    assert f"At {DEFAULT_TOKENS_PER_DAY:,} tokens a day (the default; --tokens-per-day sets it)" in md
    rows = {r[0]: r for r in _table(md, "Workload")}
    for name in ("chat", "big"):
        ans = answer_of(prof, next(w for w in prof.workloads if w.name == name))
        month = DEFAULT_TOKENS_PER_DAY * DAYS_PER_MONTH / 1e6 * ans.usd_per_mtok
        assert rows[name][1] == f"{ans.option.gpus} × {ans.option.on}"  # what the headline prices
        assert rows[name][3] == f"{month:,.0f}"
    # a given traffic scales it, said as given
    md10 = render_markdown(prof, traffic=Traffic(tokens_per_day=1e9))
    assert "At 1,000,000,000 tokens a day (given)" in md10
    chat = answer_of(prof, prof.workloads[0])
    assert {r[0]: r for r in _table(md10, "Workload")}["chat"][3] == f"{monthly(chat.usd_per_mtok, 1e9):,.0f}"


def test_energy_in_dollars_at_the_stated_price_of_a_kwh(prof):
    chat = answer_of(prof, prof.workloads[0])
    kwh = chat.option.joules_per_mtok * DEFAULT_TOKENS_PER_DAY * DAYS_PER_MONTH / 1e6 / 3.6e6
    assumed = {r[0]: r for r in _table(render_markdown(prof), "Workload")}["chat"]
    given_md = render_markdown(prof, traffic=Traffic(usd_per_kwh=0.3))
    given = {r[0]: r for r in _table(given_md, "Workload")}["chat"]
    assert assumed[5] == dollars(kwh * 0.15, "en") and given[5] == dollars(kwh * 0.3, "en")
    assert assumed[4] == given[4] == fmt_value(kwh, "kWh", "en")  # energy with its unit, not money
    assert (
        "energy at 0.3 $ per kWh (given), the GPUs at TDP (an upper bound on power) and PUE 1.3" in given_md
    )
    assert "energy at 0.15 $ per kWh (the workload's assumption)" in render_markdown(prof)


def test_each_gpu_option_side_by_side_cheapest_first(prof):
    md = render_markdown(prof)
    assert "### big: $ per million tokens on each GPU option" in md
    body = md.split("### big: $ per million tokens on each GPU option", 1)[1]
    rows = _table(body, "GPU")
    ref = [r for r in capacity.per_gpu(load_model("llama-3-70b"), INFER) if r["usd_per_mtok"] is not None]
    ref.sort(key=lambda r: (r["usd_per_mtok"], r["gpus"]))
    assert [r[0] for r in rows] == [r["gpu"] for r in ref]
    assert [r[3] for r in rows] == [usd(r["usd_per_mtok"]) for r in ref]
    ans = answer_of(prof, prof.workloads[1])
    assert rows[0][0] == ans.option.gpu  # the answer's option is the cheapest one
    assert "ranked by what the workload costs" in body.split("\n\n", 3)[2]


@pytest.mark.parametrize("lang", ["en", "de"])
def test_the_kwh_column_is_energy_with_its_unit_in_the_reports_numbers(prof, lang):
    """kWh a month is a number of kWh (the number-with-unit formatter, in the report's number format),
    never formatted as money as the dollar columns beside it are."""
    blocks = build(prof, lang, charts=False, traffic=Traffic(tokens_per_day=5e7))
    month = next(b for b in blocks if b.css == "aiwb-cfo-month")
    chat = answer_of(prof, prof.workloads[0])
    kwh = chat.option.joules_per_mtok * 5e7 * DAYS_PER_MONTH / 1e6 / 3.6e6
    cell = {r[0]: r for r in month.rows}["chat"][4]
    assert cell == fmt_value(kwh, "kWh", lang) and cell.endswith(" kWh") and "$" not in cell
    assert cell != dollars(kwh, lang)  # the money formatter's figure has no unit


@pytest.mark.parametrize("lang", ["nl", "de"])
def test_the_cfo_part_is_in_the_reports_language(prof, lang):
    blocks = build(prof, lang, charts=False, traffic=Traffic(tokens_per_day=5e7, usd_per_kwh=0.2))
    start = next(i for i, b in enumerate(blocks) if b.css == "aiwb-cfo")
    for b in blocks[start - 1 : start + 8]:
        text = " ".join([b.text, *b.header, *(" ".join(r) for r in b.rows)])
        assert not english_left(text, lang), (b.kind, text)


@pytest.mark.parametrize(
    "kw",
    [{"tokens_per_day": 0}, {"tokens_per_day": 2e15}, {"usd_per_kwh": -1}, {"usd_per_kwh": float("nan")}],
)
def test_bad_inputs_are_refused_naming_the_field(kw):
    with pytest.raises(SpecError) as exc:
        Traffic(**kw)
    assert exc.value.field == next(iter(kw))


def test_report_takes_the_traffic_and_refuses_a_bad_one(prof, tmp_path, capsys):
    path = tmp_path / "p.json"
    prof.save(path)
    out = tmp_path / "r.md"
    assert (
        main(["report", str(path), "--md", str(out), "--tokens-per-day", "2e8", "--usd-per-kwh", "0.1"]) == 0
    )
    assert "At 200,000,000 tokens a day (given)" in out.read_text()
    assert main(["report", str(path), "--md", str(tmp_path / "x.md"), "--tokens-per-day", "0"]) == 2
    err = capsys.readouterr().err
    assert "tokens_per_day" in err and "(0, 10^15]" in err and not (tmp_path / "x.md").exists()


@pytest.mark.parametrize("bad", ["true", True, [0.15], float("nan"), -1.0, None])
def test_an_edited_profiles_energy_price_that_is_no_number_counts_as_not_recorded(prof, bad):
    """A locked profile is a file anyone may edit (the profile fuzz found `"usd_per_kwh": "true"` made an
    internal error): a stored $/kWh or PUE that is not a finite number >= 0 is not recorded, so no
    energy cost is shown for it, and the report still renders."""
    import copy

    edited = copy.deepcopy(prof)
    for est in edited.estimates.values():
        est["assumptions"] = {**(est.get("assumptions") or {}), "usd_per_kwh": bad, "pue": bad}
    rows = {r[0]: r for r in _table(render_markdown(edited), "Workload")}
    assert rows["chat"][5] == "—" and rows["chat"][4] != "—"  # kWh still shown, no dollars for them
    given = render_markdown(edited, traffic=Traffic(usd_per_kwh=0.3))  # a given price still prices it
    assert {r[0]: r for r in _table(given, "Workload")}["chat"][5] != "—"
    if bad is not None:  # the PUE it cannot read is said as such, never as Python's None
        assert "PUE n/a" in given and "None" not in given
