"""A usage error (an option that does not exist, a required argument or option left out) said in
`--lang`'s language: read from what click's exception carries (cli/usage_words.py), never from its
English text; English stays click's own output; a group called without its command shows its help."""

from __future__ import annotations

import pytest
from english_left import english_left

from aiworkbook.cli import main

CASES = (
    (["size", "tiny-llama", "--foo"], "--foo"),  # no such option, no near name
    (["size", "tiny-llama", "--batchsize", "3"], "--batchsize"),  # no such option, near names offered
    (["size"], "'model'"),  # a required argument left out
)


@pytest.mark.parametrize(("argv", "named"), CASES)
def test_english_is_clicks_own_output(argv, named, capsys):
    assert main(["--lang", "en", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Usage: aiworkbook size") and "Try 'aiworkbook size --help' for help." in err
    assert named in err and english_left(err, "nl")  # the detector sees the English (so it can fail)


@pytest.mark.parametrize("lang", ["nl", "de"])
@pytest.mark.parametrize(("argv", "named"), CASES)
def test_said_in_the_language(lang, argv, named, capsys):
    assert main(["--lang", lang, *argv]) == 2
    err = capsys.readouterr().err
    assert named in err and "'aiworkbook size --help'" in err
    assert err.startswith({"nl": "fout: ", "de": "Fehler: "}[lang])
    assert english_left(err, lang) == []


def test_near_option_names_are_offered_in_the_language(capsys):
    assert main(["--lang", "de", "size", "tiny-llama", "--batchsize", "3"]) == 2
    err = capsys.readouterr().err
    assert "mögliche Optionen: " in err and "--batch" in err


def test_a_group_without_its_command_shows_its_help_in_the_language(capsys):
    assert main(["--lang", "de", "prove"]) == 2
    err = capsys.readouterr().err
    assert "Einen Nachweis ausführen" in err and "Fehler" not in err
