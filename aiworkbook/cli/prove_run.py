"""What every `prove` command shares: the output checks before the run and the result printed after it
(prove_cmds, prove_storage_cmds and serve_cmds all use these; the run itself is drawn by
aiworkbook.proofs.progress.run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer


def check_outputs(inputs: dict[str, Any] | None = None, **paths: Path | None) -> None:
    """Refuse an output that is an input or another output, or is unwritable, before the proof runs, so
    no measurement (and no input) is lost (cli/paths.py)."""
    from aiworkbook.cli.paths import check_paths

    check_paths(inputs, **paths)


def emit(result, json_path: Path | None, lang: str = "en") -> None:
    """The headline, the notes (in `lang`: each note that is a message said in it) and the components;
    the JSON keeps English."""
    from aiworkbook.message import Msg, words

    typer.echo(result.headline(lang))
    for note in result.notes:
        typer.echo(f"  - {words(note, lang)}")
    rows = result.details.get("components")
    if rows:
        from aiworkbook.units import fmt_bytes

        typer.echo(f"  {'component':<34}{'measured':>14}{'predicted':>14}{'ratio':>8}")
        for r in rows:
            ratio = f"{r['ratio']:.3f}" if r["ratio"] is not None else "n/a"
            typer.echo(
                f"  {r['component']:<34}{fmt_bytes(r['measured']):>14}{fmt_bytes(r['predicted']):>14}{ratio:>8}"
            )
    if json_path is not None:
        result.save(json_path)
        typer.echo(words(Msg("cli.wrote", path=str(json_path)), lang))
