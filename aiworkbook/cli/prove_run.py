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


def emit(result, json_path: Path | None, lang: str | None = None) -> None:
    """The headline, the notes (in `lang`, default aiworkbook --lang's: each note that is a message said
    in it) and the components; the JSON keeps English."""
    from aiworkbook.cli.lang import cli_lang
    from aiworkbook.message import Msg, words

    lang = lang or cli_lang()
    typer.echo(result.headline(lang))
    for note in result.notes:
        typer.echo(f"  - {words(note, lang)}")
    rows = result.details.get("components")
    if rows:
        from aiworkbook.charts.theme import component_label
        from aiworkbook.i18n_format import fixed
        from aiworkbook.units import fmt_bytes

        head = [
            Msg("cli.col.component"),
            Msg("cli.col.measured"),
            Msg("cli.col.predicted"),
            Msg("cli.col.ratio"),
        ]
        said = [words(h, lang) for h in head]
        typer.echo(f"  {said[0]:<34}{said[1]:>14}{said[2]:>14} {said[3]:>7}")  # a space where words are long
        for r in rows:
            ratio = (
                fixed(r["ratio"], 3, lang, group=False)
                if r["ratio"] is not None
                else words(Msg("value.na"), lang)
            )
            name = r["component"]  # a memory component's name, or a message naming a sum of them
            name = words(name, lang) if isinstance(name, Msg) or lang == "en" else component_label(name, lang)
            typer.echo(
                f"  {name:<34}{fmt_bytes(r['measured'], lang=lang):>14}{fmt_bytes(r['predicted'], lang=lang):>14} {ratio:>7}"
            )
    if json_path is not None:
        result.save(json_path)
        typer.echo(words(Msg("cli.wrote", path=str(json_path)), lang))
