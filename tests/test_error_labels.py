"""Errors name the field as the person sees it (issue 33): a dashboard says "Sequence", "Tensor
parallel", "Concurrency" in its language, never seq_len, tp or concurrency; the command line names
the option that was typed (--seq, --tp), with the range, on one line and exit 2, `--seq abc` too; an
error never offers empty as allowed where empty is then refused."""

from __future__ import annotations

import pytest
from aiworkbook.widgets.i18n import label

from aiworkbook.cli import main
from aiworkbook.sizing.workload import parse_field


@pytest.mark.parametrize("lang", ["en", "nl", "de"])
def test_sizer_errors_name_the_label_on_screen(lang):
    from aiworkbook.widgets import ModelSizer

    s = ModelSizer(background=False, lang=lang)
    try:
        for field, typed in (("concurrency", "-5"), ("seq_len", "abc"), ("tp", "0")):
            s.controls[field].value = typed
            assert s.error.startswith(f"{label(field, lang)} = {typed!r} "), (field, s.error)
            assert f"'{field}'" not in s.error and f"{field} =" not in s.error
            s.controls[field].value = {"concurrency": "8", "seq_len": "4096", "tp": "1"}[field]
            assert s.error == ""
    finally:
        s.close()


@pytest.mark.parametrize("lang", ["en", "de"])
def test_kv_planner_context_never_offers_empty_and_refuses_it_named(lang):
    from aiworkbook.widgets import KVPlanner

    k = KVPlanner(background=False, lang=lang)
    try:
        empty = {"en": "empty", "de": "leer"}[lang]
        for typed in ("abc", ""):
            k.controls["context"].value = typed
            assert k.error.startswith(label("context", lang)), k.error
            assert empty not in k.error.lower(), k.error  # the range does not offer what it refuses
        k.controls["context"].value = "8192"
        assert k.error == ""
        k.controls["tp"].value = "3"  # the model's own rule (32 heads), named as on screen
        assert k.error.startswith(label("tp", lang) + " = "), k.error
    finally:
        k.close()


def test_parse_field_required_refuses_empty_without_offering_it():
    assert parse_field("context", "") is None  # optional: empty is the default
    with pytest.raises(Exception, match="allowed: an integer from 1") as e:
        parse_field("context", "", required=True)
    assert "empty" not in str(e.value)


@pytest.mark.parametrize(
    "argv, flag, allowed",
    [
        (["--seq", "abc"], "--seq", "an integer from 1 to 16,777,216"),
        (["--seq", "0"], "--seq", "an integer from 1 to 16,777,216"),
        (["--tp", "x"], "--tp", "an integer from 1 to 1,024"),
        (["--tp", "3"], "--tp", "a divisor of num_heads (32)"),
        (["--gpu-util", "2"], "--gpu-util", "a number from"),
    ],
)
def test_size_names_the_option_and_its_range_on_one_line(argv, flag, allowed, capsys):
    assert main(["size", "llama-3-8b", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: field '{flag}' = ") and allowed in err, err
    assert "Usage" not in err and len(err.strip().splitlines()) == 1, err


def test_the_help_default_is_accepted_as_typed(capsys):
    """--concurrency's help says [default: 0] (the batch): typing 0 is what not typing it does."""
    assert main(["size", "llama-3-8b", "--mode", "infer", "--concurrency", "0", "--json"]) == 0
    assert '"concurrency": 1' in capsys.readouterr().out.replace("\n", "").replace("  ", " ")
