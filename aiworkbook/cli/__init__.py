"""The `aiworkbook` command. Each concept registers its commands from its own module.

Bad input (a SpecError, a usage error, an unreadable path) prints one line on stderr and exits 2,
without a traceback; any other exception is a bug in aiworkbook: one `internal error` line, exit 1.
"""

from __future__ import annotations

import sys
from typing import Any

import typer
import typer.main

from aiworkbook.cli import (
    app_cmds,
    k8s_cmds,
    monitor_cmds,
    preflight_cmds,
    profile_cmds,
    prove_cmds,
    replica_cmds,
    serve_cmds,
    size_cmds,
    slurm_cmds,
    specs_cmds,
)
from aiworkbook.errors import SpecError

app = typer.Typer(
    name="aiworkbook",
    help="Size AI infrastructure and prove the sizing on this node.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # click's own help layout: rich's option table cuts long option names to fit 80 columns
    # ("--tensor-parallel-si…"); click's puts a long name on its own line with the help below it
    rich_markup_mode=None,
)


def _lang_now(ctx: typer.Context, value: str | None) -> str | None:
    """--lang, eager: the language is set, and the help said in it, before any --help is shown."""
    from aiworkbook.cli.help_lang import speak
    from aiworkbook.cli.lang import cli_lang, set_lang

    set_lang(value)
    speak(ctx.find_root().command, cli_lang())
    return value


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
    lang: str = typer.Option(
        None,
        "--lang",
        callback=_lang_now,
        is_eager=True,
        help="Language of what the command says: en, nl or de (before the command; default: en).",
    ),
) -> None:
    """Size AI infrastructure and prove the sizing on this node."""
    from aiworkbook.cli.lang import set_lang

    set_lang(lang)


for _mod in (
    specs_cmds,
    size_cmds,
    monitor_cmds,
    prove_cmds,
    serve_cmds,
    app_cmds,
    profile_cmds,
    replica_cmds,
):
    _mod.register(app)
preflight_cmds.register(app)
k8s_cmds.register(app)
slurm_cmds.register(app)


def _exit_code(exc: BaseException) -> int | None:
    """The code of a typer/click `Exit` (typer >= 0.20 vendors click and its own Exit class), else None."""
    code = getattr(exc, "exit_code", None)
    if type(exc).__name__ == "Exit" and isinstance(code, int):
        return code
    return None


def _interrupted(exc: KeyboardInterrupt, mark: int) -> int:
    """Ctrl-C (130) or SIGTERM (143): one line saying what stopped and which files the command had
    written before it (a command that keeps partial results, like monitor, says so itself and exits
    through typer.Exit)."""
    import signal as _signal

    from aiworkbook import signals
    from aiworkbook.cli.lang import said
    from aiworkbook.message import Msg
    from aiworkbook.persist import written_since

    signum = signals.received() or _signal.SIGINT
    what = Msg("cli.ctrl_c") if signum == _signal.SIGINT else _signal.Signals(signum).name
    detail = str(exc).strip()
    kept = [p for p in written_since(mark) if p.exists()]  # a proof removes its own folder
    saved = Msg("cli.kept", files=", ".join(map(str, kept))) if kept else Msg("cli.nothing_saved")
    line = Msg("cli.stopped", what=what, detail=f" ({detail})" if detail else "", saved=saved)
    typer.echo(said(line), err=True)
    return 128 + int(signum)


def _plain_flags(cmd: Any) -> None:
    """Flags (`--json`, `--quick`) take no value: show none in help, where typer would print `<bool>`
    and so invite `--json=1`, which the parser refuses."""
    params = list(getattr(cmd, "params", ()))
    try:  # --help itself is made on first use; make it now so it gets the same treatment
        params.append(cmd.get_help_option(cmd.context_class(cmd)))
    except Exception:  # noqa: BLE001 (cosmetic only; help still works without it)
        pass
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    for sub in getattr(cmd, "commands", {}).values():
        _plain_flags(sub)


def _whole_summaries(cmd: Any) -> None:
    """A command list shows each command's first paragraph whole, wrapped, where click would cut it at
    the line's end with '...' (its short help, unless one is given, is what fits on one line)."""
    from aiworkbook.cli.help_lang import summary

    for sub in getattr(cmd, "commands", {}).values():
        if not sub.short_help and sub.help:
            sub.short_help = summary(sub.help)
        _whole_summaries(sub)


def command() -> Any:
    """The click command `aiworkbook` runs: typer's, with numbers bounded, flags shown without a value
    and whole summaries (what `main` dispatches to, and what a test's CliRunner invokes)."""
    from aiworkbook.cli.numbers import bound_all

    cmd = typer.main.get_command(app)
    bound_all(cmd)
    _plain_flags(cmd)
    _whole_summaries(cmd)
    return cmd


def _dispatch(argv: list[str] | None) -> int:
    """Run the command without typer's standalone handling, so exceptions (KeyboardInterrupt with its
    message included) reach main() as they are instead of as a returned code."""
    cmd = command()
    args = list(sys.argv[1:] if argv is None else argv)
    with cmd.make_context("aiworkbook", args) as ctx:
        cmd.invoke(ctx)
    return 0


def _spec_error_in(exc: BaseException) -> SpecError | None:
    """The SpecError an option's parser raised, which typer hands on as a usage error whose cause is
    pydantic's ValidationError (the SpecError in its `ctx`); None for any other usage error."""
    cause = exc.__cause__
    try:
        found = [e.get("ctx", {}).get("error") for e in cause.errors()] if cause is not None else []  # type: ignore[attr-defined]
    except (AttributeError, TypeError):
        return None
    return next((e for e in found if isinstance(e, SpecError)), None)


def main(argv: list[str] | None = None) -> int:
    """Entry point. Bad input (a usage error, a SpecError, an unwritable path, input nested too deeply)
    prints one line and returns 2; Ctrl-C returns 130 and SIGTERM 143 with one line; any other
    exception, a plain ValueError included (the library names bad input with SpecError), is a bug:
    one `internal error` line and 1 (AIWORKBOOK_DEBUG=1 shows the traceback). Never two tracebacks."""
    import errno
    import os

    from aiworkbook import diskfull, signals
    from aiworkbook.cli.lang import cli_lang, error_line, said, set_lang
    from aiworkbook.message import Msg, quoted
    from aiworkbook.persist import written_since

    set_lang(None)  # until the root callback reads --lang (main runs more than once in a process)
    mark = len(written_since())
    try:
        with signals.handled():
            try:
                rc = _dispatch(argv)
                signals.raise_pending()  # a signal still waiting for a safe point: stop, not exit 0
                return rc
            except KeyboardInterrupt as exc:
                if signals.received() is None:
                    import signal as _signal

                    term = isinstance(exc, signals.Terminated)
                    signals.note(_signal.SIGTERM if term else _signal.SIGINT)
                return _interrupted(exc, mark)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except SpecError as exc:  # bad input, named by the library, in the language of --lang
        typer.echo(error_line(exc), err=True)
        return 2
    except RecursionError:
        typer.echo(said(Msg("cli.error", text=Msg("cli.nested_too_deeply"))), err=True)
        return 2
    except OSError as exc:  # a path that cannot be read or written, a disk that is full, a port in use
        full = diskfull.found_in(exc)
        if full is not None:  # where, needed and free: exit 1, the input was fine
            typer.echo(said(Msg("cli.error", text=full.message)), err=True)
            return 1
        if exc.errno == errno.EPIPE:  # `aiworkbook models | head`: the reader left; say nothing
            try:
                sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (the interpreter flushes it at exit)
            except OSError:
                pass
            return 1
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        # the OS's own words (strerror) quoted as it says them; the library's own reason is a message
        why = exc.strerror or (exc.args[0] if len(exc.args) == 1 and isinstance(exc.args[0], Msg) else exc)
        why = why if isinstance(why, Msg) else quoted(why)
        typer.echo(said(Msg("cli.error", text=where + said(why))), err=True)
        return 2
    except BaseException as exc:
        code = _exit_code(exc)
        if code is not None:
            return code
        # Ctrl-C or SIGTERM raised inside a library that wraps it (DCP's CheckpointException holds each
        # rank's exception and traceback text): a stop, said in one line, never the wrapper's text
        stop = next((e for e in diskfull.chain(exc) if isinstance(e, KeyboardInterrupt)), None)
        if stop is not None:
            if signals.received() is None:
                import signal as _signal

                signals.note(_signal.SIGTERM if isinstance(stop, signals.Terminated) else _signal.SIGINT)
            return _interrupted(stop, mark)
        full = diskfull.found_in(exc)
        if full is not None:  # wrapped (DCP's CheckpointException is a BaseException): the same line
            typer.echo(said(Msg("cli.error", text=full.message)), err=True)
            return 1
        spec = _spec_error_in(exc)
        if spec is not None:  # an option's own parser (cli/size_cmds.py) named the option and its range
            typer.echo(error_line(spec), err=True)
            return 2
        if hasattr(exc, "show") and isinstance(getattr(exc, "exit_code", None), int):  # click usage errors
            if cli_lang() == "en":
                exc.show()  # type: ignore[attr-defined]
            else:  # said in --lang's language, from what the error carries (cli/usage_words.py)
                from aiworkbook.cli.usage_words import usage_lines

                for line in usage_lines(exc):
                    typer.echo(said(line), err=True)
            return exc.exit_code  # type: ignore[attr-defined]
        if type(exc).__name__ == "Abort":
            typer.echo(said(Msg("cli.aborted")), err=True)
            return 1
        if not isinstance(exc, Exception) or os.environ.get("AIWORKBOOK_DEBUG"):
            raise
        if isinstance(exc, MemoryError):
            typer.echo(said(Msg("cli.error", text=Msg("cli.out_of_memory"))), err=True)
            return 1
        msg = str(exc).splitlines()[0][:300] if str(exc) else ""
        what = quoted(f"{type(exc).__name__}{': ' + msg if msg else ''}")  # Python's words, as it said them
        typer.echo(said(Msg("cli.internal_error", what=what)), err=True)
        return 1


def entry() -> None:
    sys.exit(main())
