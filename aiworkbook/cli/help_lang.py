"""`--help` in the language of `aiworkbook --lang`: every command's help and every parameter's help
is looked up in the catalogue under an id made from the command's path and the parameter's name
(`help.size`, `help.size.seq_len`, `help` and `help.lang` for the root); an id the catalogue lacks
keeps the English as written in the code. The root's `--lang` is eager, so its language is known
before any `--help` (its own, a sub-command's) is made; `tools/help_to_po.py` writes the English
entries from the code, and tests/test_help_lang.py holds them equal."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def help_id(path: list[str], param: str | None = None) -> str:
    """The catalogue id of a command's help (`param` None) or of one of its parameters' help."""
    parts = [*path, *([param] if param else [])]
    return f"help.{'.'.join(parts)}" if parts else "help"


def helps(cmd: Any, path: list[str] | None = None) -> Iterator[tuple[str, Any, str]]:
    """(id, the click object, its help as written) for the command and every command under it."""
    path = path or []
    if getattr(cmd, "help", None):
        yield help_id(path), cmd, _english(cmd)
    for param in cmd.params:
        if getattr(param, "help", None):
            yield help_id(path, param.name), param, _english(param)
    for name, sub in getattr(cmd, "commands", {}).items():
        yield from helps(sub, [*path, name])


def summary(text: str) -> str:
    """A command's line in its group's list: its first paragraph whole (click would cut it at the
    line's end with '...')."""
    return " ".join(text.strip().split("\n\n")[0].split())


def _english(obj: Any) -> str:
    """The help as the code wrote it, kept on the object the first time it is said in a language."""
    if not hasattr(obj, "aiwb_english"):
        obj.aiwb_english = obj.help
    return obj.aiwb_english


def speak(root: Any, lang: str) -> None:
    """Say every help under `root` in `lang` (each id `lang`'s catalogue lacks: the English as written);
    a command's summary in its group's list follows its help unless the code gave one of its own."""
    from aiworkbook.catalogue import catalogue

    table = catalogue(lang)
    for id_, obj, english in list(helps(root)):
        derived = getattr(obj, "short_help", None) in (None, summary(obj.help or ""))
        obj.help = table.get(id_) or english
        if hasattr(obj, "short_help") and derived:
            obj.short_help = summary(obj.help)
