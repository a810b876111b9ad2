"""A command-line usage error (click's, inside typer) said in `--lang`'s language.

What went wrong is read from the exception's attributes (an option that does not exist carries
`option_name` and `possibilities`; a missing argument or option carries `param_type` and its
parameter), never from click's English text; anything else is click's own words, quoted. English
keeps click's output byte for byte (`exc.show()` in cli/__init__.py).
"""

from __future__ import annotations

from typing import Any

from aiworkbook.message import Msg, quoted


def usage_lines(exc: Any) -> list[Msg | str]:
    """The refusal line and, where the command is known, where its help is; a group called without
    its command answers with its help (already in the language, cli/help_lang.py), as click does."""
    ctx = getattr(exc, "ctx", None)
    if ctx is not None and exc.format_message() == ctx.get_help():
        return [ctx.get_help()]
    lines: list[Msg | str] = [Msg("cli.error", text=_what(exc, ctx))]
    if ctx is not None:
        lines.append(Msg("cli.usage.help", command=f"{ctx.command_path} --help"))
    return lines


def _what(exc: Any, ctx: Any) -> Msg:
    option = getattr(exc, "option_name", None)
    if option is not None and hasattr(exc, "possibilities"):  # an option that does not exist
        possible = sorted(exc.possibilities or ())
        if possible:
            return Msg("cli.usage.no_such_option_maybe", option=option, options=", ".join(possible))
        return Msg("cli.usage.no_such_option", option=option)
    param = getattr(exc, "param", None)
    if hasattr(exc, "param_type") and param is not None:  # a required argument or option left out
        opts = [o for o in getattr(param, "opts", ()) if o.startswith("-")]
        if opts:
            return Msg("cli.usage.missing_option", name=" / ".join(f"'{o}'" for o in opts))
        return Msg("cli.usage.missing_argument", name=f"'{param.name}'")
    return quoted(exc.format_message())
