"""Write the English catalogue entries of `--help` from the code: every command's and parameter's help
under the given command paths (`size`, `prove kv`; `.` the root's own help and options; `commands`
every command's own help), as `help.<path>[.<param>]` ids appended in one block at the end of
aiworkbook/locale/en/LC_MESSAGES/messages.po. An id already there is left as it is, so rerunning adds
nothing; tests/test_help_lang.py fails when an entry no longer equals the code's help.

    .venv/bin/python tools/help_to_po.py . commands app check
"""

from __future__ import annotations

import sys
from pathlib import Path

from babel.messages.pofile import escape

EN = Path(__file__).resolve().parent.parent / "aiworkbook/locale/en/LC_MESSAGES/messages.po"


def entries(paths: list[str]) -> list[tuple[str, str]]:
    """(id, English) for the help under each path: `.` the root's help and options, `commands` every
    command's own help (the lists of commands), else a command path and everything under it."""
    import typer.main

    from aiworkbook.cli import app
    from aiworkbook.cli.help_lang import help_id, helps

    root = typer.main.get_command(app)
    found = list(helps(root))
    out: list[tuple[str, str]] = []
    for p in paths:
        if p == ".":
            out += [(i, e) for i, obj, e in found if obj is root or obj in root.params]
        elif p == "commands":
            out += [(i, e) for i, obj, e in found if hasattr(obj, "params")]
        else:
            prefix = help_id(p.split())
            out += [(i, e) for i, _, e in found if i == prefix or i.startswith(prefix + ".")]
    return list(dict(out).items())


def main(argv: list[str]) -> int:
    from aiworkbook.catalogue import catalogue

    have = catalogue("en")
    new = [(i, e) for i, e in entries(argv) if i not in have]
    with EN.open("a", encoding="utf-8") as f:
        for i, e in new:
            f.write(f"\nmsgid {escape(i)}\nmsgstr {escape(e)}\n")
    print(f"{len(new)} entries added to {EN}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
