"""A set-up that does not fit reads "short by 646.95 GiB", never "-646.95 GiB headroom": on the sizer's
headline in every language, in `size`'s text and in the report's headline; the JSON keeps the signed
number (issue 33)."""

from __future__ import annotations

import json
import re

import pytest

from aiworkbook.cli import main
from aiworkbook.profile import lock
from aiworkbook.profile.report import render_markdown
from aiworkbook.sizing import Workload, estimate
from aiworkbook.sizing.sections import margin
from aiworkbook.specs import load_model
from aiworkbook.units import GiB, fmt_bytes

KW = {"mode": "infer", "concurrency": 8, "seq_len": 4096, "new_tokens": 512}
SHORT = {"en": "short by {}", "nl": "{} te kort", "de": "{} zu wenig"}
LEFT = {"en": "{} headroom", "nl": "{} ruimte over", "de": "{} Spielraum"}


def _short_bytes() -> int:
    est = estimate(load_model("llama-3-70b"), Workload(**KW), gpu="L4")
    assert est.fits.fits is False and est.fits.headroom_bytes < 0
    return -est.fits.headroom_bytes


@pytest.mark.parametrize("lang", ["en", "nl", "de"])
def test_margin_words_never_carry_a_minus(lang):
    assert margin(-int(646.95 * GiB)).render(lang) == SHORT[lang].format(fmt_bytes(646.95 * GiB, "GiB", lang))
    assert margin(int(58.68 * GiB)).render(lang) == LEFT[lang].format(fmt_bytes(58.68 * GiB, "GiB", lang))
    assert margin(None) is None


@pytest.mark.parametrize("lang", ["en", "nl", "de"])
def test_the_sizer_headline_says_short_by(lang):
    import aiworkbook.widgets as aw

    w = aw.ModelSizer(background=False, lang=lang)
    try:
        w.value = {"model": "llama-3-70b", "gpu": "L4", **KW}
        assert w.error == ""
        head = w.headline.value
        assert SHORT[lang].format(fmt_bytes(_short_bytes(), "GiB", lang)) in head
        assert not re.search(r"-\d[\d.,]* GiB", head), head
    finally:
        w.close()


def test_size_text_says_short_by_and_json_keeps_the_sign(capsys):
    argv = ["size", "llama-3-70b", "--gpu", "L4", "--mode", "infer", "--concurrency", "8", "--seq", "4096"]
    argv += ["--new-tokens", "512"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert f"short by {fmt_bytes(_short_bytes())}" in text
    assert "headroom -" not in text
    assert main([*argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["fits"]["headroom_bytes"] == -_short_bytes()


def test_the_report_headline_says_short_by():
    prof = lock(
        "llm-inference",
        detected=None,
        workloads=[{"name": "w", "model": "llama-3-70b", "gpu": "L4", "workload": Workload(**KW)}],
    )
    line = next(x for x in render_markdown(prof).splitlines() if x.startswith("**w"))
    assert f"short by {fmt_bytes(_short_bytes())}" in line and "-" + fmt_bytes(_short_bytes()) not in line


def test_a_gpu_that_no_count_fits_reads_needs_not_or():
    """70B on L4s fits on no count of L4 in one node: the headline says what it needs, never "; or …"."""
    import aiworkbook.widgets as aw

    w = aw.ModelSizer(background=False)
    try:
        w.value = {"model": "llama-3-70b", "gpu": "L4", **KW}
        head = w.headline.value
        assert "; or " not in head and "; needs " in head and "at the lowest cost" not in head
    finally:
        w.close()
    prof = lock(
        "llm-inference",
        detected=None,
        workloads=[{"name": "w", "model": "llama-3-70b", "gpu": "L4", "workload": Workload(**KW)}],
    )
    line = next(x for x in render_markdown(prof).splitlines() if x.startswith("**w"))
    assert "short by" in line and ", or " not in line and "needs" in line, line
