"""The `aiworkbook` command. Each concept registers its commands from its own module.

Bad input (SpecError / ValueError) prints one line on stderr and exits 2, without a traceback.
"""

from __future__ import annotations

import sys

import typer

from aiworkbook.cli import app_cmds, monitor_cmds, profile_cmds, prove_cmds, size_cmds, specs_cmds

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


for _mod in (specs_cmds, size_cmds, monitor_cmds, prove_cmds, app_cmds, profile_cmds):
    _mod.register(app)


def _click_modules() -> list:
    """The exception modules of click and of typer's vendored copy (typer >= 0.20 ships its own)."""
    mods = []
    for name in ("typer._click.exceptions", "click.exceptions"):
        try:
            mods.append(__import__(name, fromlist=["ClickException"]))
        except ImportError:
            pass
    return mods


def main(argv: list[str] | None = None) -> int:
    """Entry point: bad input (a usage error, a SpecError/ValueError, an unwritable path) prints one
    line and returns 2, never a traceback."""
    try:
        app(args=argv, standalone_mode=False)
    except SystemExit as exc:  # typer.Exit inside standalone_mode=False surfaces here
        return int(exc.code or 0)
    except ValueError as exc:
        typer.echo(f"error: {exc}", err=True)
        return 2
    except OSError as exc:  # a path that cannot be read or written, a port in use
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        typer.echo(f"error: {where}{exc.strerror or exc}", err=True)
        return 2
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        return 130
    except Exception as exc:
        for mod in _click_modules():
            if isinstance(exc, mod.ClickException):  # usage errors: exit_code 2
                exc.show()
                return exc.exit_code
            if isinstance(exc, mod.Exit):
                return exc.exit_code
            if isinstance(exc, mod.Abort):
                typer.echo("aborted", err=True)
                return 1
        raise
    return 0


def entry() -> None:
    sys.exit(main())
