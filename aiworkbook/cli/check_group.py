"""`aiworkbook check`: a command group whose first word decides. `check merge ...` is the `merge`
subcommand (the nodes' JUnit files as one); any other first argument, an option included, is the
profile check (`check PROFILE`, `check --strict PROFILE`). So a profile file literally named `merge`
is checked as `check ./merge`, `check -- merge` or with any option before it: a command line means
the same thing whatever files the folder holds (the Slurm job's merge step runs in the submit folder).

Click has no positional argument beside subcommands on one group; the profile check is the group's
hidden default subcommand, shown under the group's own name in usage and errors."""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

#: typer carries its own copy of click (typer._click): subclass its Context, not the click package's
_Context: Any = TyperCommand.context_class

#: the hidden name of the profile check inside the group (never typed: any first word but `merge` is a PROFILE)
DEFAULT = "profile-check"


class _GroupNamedContext(_Context):
    """The default command's context: usage and errors name it `aiworkbook check`, not its hidden name."""

    @property
    def command_path(self) -> str:
        return self.parent.command_path if self.parent is not None else super().command_path


class DefaultCommand(TyperCommand):
    context_class = _GroupNamedContext

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """`check --help`: this command's help, then the group's other subcommands (`merge`)."""
        super().format_help(ctx, formatter)
        group = ctx.parent.command if ctx.parent is not None else None
        if isinstance(group, TyperGroup):
            group.format_commands(ctx.parent, formatter)


class CheckGroup(TyperGroup):
    """A group with a default: the first argument names a subcommand only when it is one (other than the
    default's own name); otherwise it goes, with all that follows, to the default command."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if not args or args[0] not in self.commands or args[0] == DEFAULT:
            args = [DEFAULT, *args]
        return super().parse_args(ctx, args)


def check_app(check_cmd: Any, merge_cmd: Any) -> typer.Typer:
    """The `check` group: the profile check as its default, `merge` beside it."""
    app = typer.Typer(cls=CheckGroup, add_completion=False, help=check_cmd.__doc__, rich_markup_mode=None)
    app.command(DEFAULT, cls=DefaultCommand, hidden=True)(check_cmd)
    app.command("merge")(merge_cmd)
    return app
