"""Placeholder: commands of this module are registered by its owning issue."""

import typer


def register(app: typer.Typer) -> None:
    """Add this module's commands to the app."""
