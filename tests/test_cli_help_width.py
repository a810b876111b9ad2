"""`--help` of every command reads whole in an 80-column terminal: no line wider, no option name cut
(rich's option table showed "--tensor-parallel-si…" and "--gpu-memory-utiliza…"; issue 24 item 9)."""

from __future__ import annotations

from typing import Any

import pytest
import typer.main

from aiworkbook import cli


def _commands(cmd: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    found = [(path, cmd)]
    for name, sub in getattr(cmd, "commands", {}).items():
        found += _commands(sub, (*path, name))
    return found


COMMANDS = _commands(typer.main.get_command(cli.app))


def test_every_command_is_covered():
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"", "size", "fit", "serve", "prove", "prove vram", "monitor", "app", "lock"} <= names


@pytest.mark.parametrize(
    ("path", "cmd"), COMMANDS, ids=[" ".join(path) or "aiworkbook" for path, _ in COMMANDS]
)
def test_help_fits_80_columns_with_every_option_name_whole(path, cmd, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    assert cli.main([*path, "--help"]) == 0
    out = capsys.readouterr().out
    wide = [line for line in out.splitlines() if len(line) > 80]
    assert not wide, wide
    assert "…" not in out
    names = [o for p in cmd.params for o in (*p.opts, *p.secondary_opts) if o.startswith("-")]
    missing = [n for n in names if n not in out]
    assert not missing, f"cut or missing in {' '.join(path)} --help: {missing}"
    for sub in getattr(cmd, "commands", {}).values():  # a command list: each summary whole
        if sub.hidden:  # not listed (the profile check, `check`'s default subcommand)
            continue
        summary = (sub.short_help or sub.help).strip().split("\n\n")[0]
        assert " ".join(summary.split()) in " ".join(out.split())
