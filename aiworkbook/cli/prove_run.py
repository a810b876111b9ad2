"""What every `prove` command shares: a registry run drawn on a tqdm bar, the output checks before it and
the result printed after it (prove_cmds, prove_storage_cmds and serve_cmds all use these)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer


def run_with_bar(name: str, **inputs: Any):
    """registry.run(name, **inputs) with a tqdm bar fed by the proof's progress(done, total, message)."""
    from tqdm.auto import tqdm

    from aiworkbook.proofs import registry

    bar = tqdm(total=0, desc=name, leave=False)

    def progress(done: int, total: int, message: str) -> None:
        if bar.total != total:
            bar.total = total
        bar.set_postfix_str(message, refresh=False)
        bar.update(done - bar.n)  # redrawn at most every mininterval: per-request messages do not flood a log

    try:
        return registry.run(name, progress=progress, **inputs)
    finally:
        bar.close()


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
