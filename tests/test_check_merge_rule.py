"""`aiworkbook check` is a group (aiworkbook/cli/check_group.py): `merge` right after `check` is the
merge subcommand; any other first argument, an option included, is the PROFILE of the profile check.
The rule depends on the command line only, never on which files the folder holds: a profile file
literally named `merge` is checked as `check ./merge`, `check -- merge` or `check --strict merge`."""

from __future__ import annotations

import shutil

import pytest
from profile_fakes import write_locked

from aiworkbook.cli import main

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A folder holding a locked profile named `merge` and the results that pass it."""
    d = tmp_path_factory.mktemp("merge_rule")
    p = write_locked(d)
    shutil.copy(p, d / "merge")
    return d


def _results(d):
    return ["--results", str(d / "kv.json"), "--results", str(d / "roof.json")]


def test_merge_after_check_is_the_subcommand_even_beside_a_file_named_merge(folder, monkeypatch, capsys):
    monkeypatch.chdir(folder)
    assert main(["check", "merge", *_results(folder)]) == 2  # merge's own options: no --results
    assert "No such option: --results" in capsys.readouterr().err
    assert main(["check", "merge"]) == 2
    assert "'out'" in capsys.readouterr().err  # merge asks for --out; it did not check the profile


@pytest.mark.parametrize("words", [["./merge"], ["--strict", "merge"]], ids=["./merge", "option first"])
def test_a_profile_named_merge_is_checked_written_so(folder, monkeypatch, capsys, words):
    monkeypatch.chdir(folder)
    code = main(["check", *words, *_results(folder)])
    out = capsys.readouterr()
    assert code == 0, out
    assert "pass" in out.out


def test_double_dash_makes_merge_the_profile(tmp_path, monkeypatch, capsys):
    """After `--` every word is a PROFILE (and the options must come before it)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "merge").write_text("{}")
    assert main(["check", "--", "merge"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: merge: field 'kind'"), err  # the file was read as the profile


def test_any_other_first_word_is_a_profile(tmp_path, capsys):
    assert main(["check", str(tmp_path / "profile-check")]) == 2  # not the hidden name of the default
    assert "an existing locked profile JSON" in capsys.readouterr().err


def test_help_lists_merge_and_usage_names_check(capsys):
    assert main(["check", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Usage: aiworkbook check [OPTIONS]") and "--passive" in out
    assert "Commands:" in out and "merge" in out.split("Commands:")[1]
    assert "profile-check" not in out
    assert main(["check", "merge", "--help"]) == 0
    assert capsys.readouterr().out.startswith("Usage: aiworkbook check merge [OPTIONS]")
    assert main(["check"]) == 2
    err = capsys.readouterr().err
    assert (
        "Usage: aiworkbook check [OPTIONS]" in err
        and "Missing argument" in err
        and "profile-check" not in err
    )
