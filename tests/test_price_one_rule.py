"""One price, one rounding rule on every face (issue 33): the sizer's headline read "$0.54" beside its
own table's "$0.545" for the same $ per million tokens. The headline, the table, the cost line, the
`size` answer line and the report's headline now print it with the same digits."""

from __future__ import annotations

import re

import pytest

from aiworkbook.cli import main
from aiworkbook.i18n_format import money, usd_digits
from aiworkbook.profile import lock
from aiworkbook.profile.report import render_markdown
from aiworkbook.sizing import Workload
from aiworkbook.sizing.answer import answer
from aiworkbook.specs import load_model

#: 48 sequences need the whole GPU (32 fit one MIG 3g.40gb instance, priced as such: test_mig_answer.py)
KW = {"mode": "infer", "concurrency": 48, "seq_len": 4096, "new_tokens": 512}


def test_the_rule_keeps_three_significant_digits_and_no_zero_past_the_cents():
    assert [money(x) for x in (0.545, 0.7, 0.025, 1.26, 0.0000336)] == [
        "$0.545",
        "$0.70",
        "$0.025",
        "$1.26",
        "$0.0000336",
    ]
    assert usd_digits(0.545) == 3 and usd_digits(0.7) == 2


@pytest.mark.parametrize("lang", ["en", "de"])
def test_sizer_headline_table_and_cost_line_print_one_price(lang):
    import aiworkbook.widgets as aw

    ref = answer(load_model("llama-3-8b"), Workload(**KW), "H100-SXM")
    assert ref.fits and ref.usd_per_mtok < 1  # a price under a dollar: where the digits differed
    shown = money(ref.usd_per_mtok, lang)
    s = aw.ModelSizer(background=False, lang=lang)
    try:
        s.value = {"model": "llama-3-8b", "gpu": "H100-SXM", **KW}
        assert s.error == ""
        row = re.search(r"<tr><td>H100-SXM</td><td>1</td><td>[^<]*</td><td>([^<]*)</td>", s.fits_table.value)
        assert row is not None and row.group(1) == shown
        assert shown in s.headline.value and shown in s.cost.value
    finally:
        s.close()


def test_size_and_the_report_print_the_same_price(capsys):
    ref = answer(load_model("llama-3-8b"), Workload(**KW), "H100-SXM")
    argv = ["size", "llama-3-8b", "--gpu", "H100-SXM", "--mode", "infer", "--concurrency", "48"]
    assert main([*argv, "--seq", "4096", "--new-tokens", "512"]) == 0
    text = capsys.readouterr().out
    assert f"{money(ref.usd_per_mtok)} per million output tokens" in text
    prof = lock(
        "llm-inference",
        detected=None,
        workloads=[{"name": "w", "model": "llama-3-8b", "gpu": "H100-SXM", "workload": Workload(**KW)}],
    )
    line = next(x for x in render_markdown(prof).splitlines() if x.startswith("**w"))
    assert money(ref.usd_per_mtok).lstrip("$") in line
