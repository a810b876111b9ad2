"""The `aiworkbook` command. Each concept registers its commands from its own module.

Bad input (SpecError / ValueError) prints one line on stderr and exits 2, without a traceback.
"""

from __future__ import annotations

import sys

import typer

from aiworkbook.cli import monitor_cmds, prove_cmds, size_cmds, specs_cmds

app = typer.Typer(
    name="aiworkbook",
    help="Size AI infrastructure and prove the sizing on this node.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from aiworkbook import __version__

        typer.echo(f"aiworkbook {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Size AI infrastructure and prove the sizing on this node."""


for _mod in (specs_cmds, size_cmds, monitor_cmds, prove_cmds):
    _mod.register(app)


def main(argv: list[str] | None = None) -> int:
    """Entry point: runs the app, turning bad input into exit code 2 with a one-line message."""
    try:
        app(args=argv, standalone_mode=False)
    except SystemExit as exc:  # typer.Exit inside standalone_mode=False surfaces here
        return int(exc.code or 0)
    except ValueError as exc:
        typer.echo(f"error: {exc}", err=True)
        return 2
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        return 130
    except Exception as exc:  # click usage errors carry their own exit code
        import click

        if isinstance(exc, click.exceptions.ClickException):
            exc.show()
            return exc.exit_code
        if isinstance(exc, click.exceptions.Exit):
            return exc.exit_code
        if isinstance(exc, click.exceptions.Abort):
            typer.echo("aborted", err=True)
            return 1
        raise
    return 0


def entry() -> None:
    sys.exit(main())
