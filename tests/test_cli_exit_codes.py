"""Exit 2 is for bad input only (SpecError, usage errors); a plain ValueError from inside the library is
a bug: exit 1 with one `internal error` line and the hint, never read as the user's mistake."""

from __future__ import annotations

import pytest

from aiworkbook import cli
from aiworkbook.cli import main
from aiworkbook.errors import SpecError


@pytest.fixture
def boom(monkeypatch):
    """A command `boom` that raises what the test puts in `raised[0]`."""
    raised: list[BaseException] = []

    def boom() -> None:
        raise raised[0]

    monkeypatch.setattr(cli.app, "registered_commands", list(cli.app.registered_commands))
    cli.app.command("boom")(boom)
    return raised


def test_a_spec_error_is_the_users_exit_2(boom, capsys):
    boom.append(SpecError("batch", 0, ">= 1"))
    assert main(["boom"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: field 'batch' = 0") and "internal" not in err


def test_a_plain_value_error_is_an_internal_error_exit_1(boom, capsys):
    boom.append(ValueError("math domain error"))
    assert main(["boom"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("internal error: ValueError: math domain error")
    assert "AIWORKBOOK_DEBUG=1" in err and "Traceback" not in err and len(err.splitlines()) == 1


def test_user_typed_sizes_that_are_not_numbers_are_a_spec_error(capsys):
    assert main(["prove", "allreduce", "--sizes", "abc", "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "field 'sizes'" in err and "internal" not in err
