"""One spelling for a command's option: the flag, its help, then its default (None: unset unless given)."""

from __future__ import annotations

from typing import Any

import typer


def option(flag: str, help: str, default: Any = None) -> Any:
    """`typer.Option(default, flag, help=help)`, written flag first so a declaration reads on one line."""
    return typer.Option(default, flag, help=help)
