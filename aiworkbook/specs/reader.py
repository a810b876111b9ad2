"""Reading a config.json into a ModelSpec: the one entry from a file, a dict or pasted text, each
under one size cap (MAX_CONFIG_BYTES) and parsed as read_json parses a file, with the same errors.

It sits above model.py and the family parsers (aiworkbook/specs/families), which build ModelSpecs and
import neither this module nor each other's readers: the dispatch lives here, so no import runs in a
circle."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.specs import families
from aiworkbook.specs.config_fields import with_config_fields
from aiworkbook.specs.model import ModelSpec


def spec_from_config(
    cfg: dict[str, Any], *, name: str = "", source: str = "<dict>", family: str | None = None
) -> ModelSpec:
    """Build a ModelSpec from a parsed Hugging Face config.json (`family`: assert an unknown type's shape).

    Every family is read by its parser in the registry (aiworkbook/specs/families); the config's
    dropout, masked-LM head and quantisation apply on top (aiworkbook/specs/config_fields.py)."""
    return with_config_fields(_read(cfg, name=name, source=source, family=family), cfg, source)


def _read(cfg: dict[str, Any], *, name: str, source: str, family: str | None) -> ModelSpec:
    if not isinstance(cfg, dict):
        raise SpecError("config", type(cfg).__name__, "a JSON object", source=source)
    mt = cfg.get("model_type")
    every = families.names()
    if family is not None and family != mt:
        if family not in every:
            raise SpecError("family", family, ", ".join(every), source=source)
        spec = spec_from_config({**cfg, "model_type": family}, name=name, source=source)
        return replace(spec, asserted_family=family)
    if mt not in every:
        raise SpecError(
            "model_type", mt, ", ".join(every) + " (or assert one with --family NAME)", source=source
        )
    return families.parse(cfg, name=name, source=source)


#: the largest config.json read, from a file, an upload or a paste (a real one is a few kB)
MAX_CONFIG_BYTES = 1 << 20


def check_config_size(size: int, source: str) -> None:
    """Refuse a config.json of `size` bytes over MAX_CONFIG_BYTES, naming it and the limit."""
    if size > MAX_CONFIG_BYTES:
        raise SpecError(
            "config",
            Msg("file.sized", path=source, size=size),
            Msg("allowed.config_at_most", max=MAX_CONFIG_BYTES),
            source=source,
        )


def load_config_file(path: str | Path) -> dict[str, Any]:
    """Read a config.json (or a folder holding one) with errors that name the file."""
    from aiworkbook.persist import read_json

    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    if p.is_file():
        check_config_size(p.stat().st_size, str(p))
    return read_json(p, what=Msg("file.model"))


def spec_from_text(text: str, name: str = "pasted") -> ModelSpec:
    """A ModelSpec from the text of a config.json (pasted or uploaded), or the SpecError a file with
    that text gives (size cap, JSON, the config's fields), the source said as `<name>`."""
    from aiworkbook.persist import loads_object

    source = f"<{name}>"
    if not isinstance(text, str) or not text.strip():
        raise SpecError("config", "", Msg("allowed.config_text"), source=source)
    check_config_size(len(text.encode()), source)
    return spec_from_config(loads_object(text, source), name=name, source=source)
