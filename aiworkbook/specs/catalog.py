"""Model presets shipped under data/models/<name>/config.json, and the one loader for MODEL args."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from aiworkbook.errors import SpecError
from aiworkbook.paths import data_dir
from aiworkbook.specs.model import ModelSpec, load_config_file, spec_from_config


def list_presets() -> list[str]:
    """Preset names (the shipped catalogue does not change while the process runs)."""
    return list(_presets())


@cache
def _presets() -> tuple[str, ...]:
    root = data_dir() / "models"
    return tuple(sorted(p.parent.name for p in root.glob("*/config.json")))


@cache
def _preset(name: str) -> ModelSpec:
    path = data_dir() / "models" / name / "config.json"
    return spec_from_config(load_config_file(path), name=name, source=str(path))


def load_model(name_or_path: str | Path, family: str | None = None) -> ModelSpec:
    """A preset name (`llama-3-8b`), a config.json path, or a folder holding one (`family`: see
    spec_from_config)."""
    s = str(name_or_path)
    if s in list_presets():
        if family is not None:
            path = data_dir() / "models" / s / "config.json"
            return spec_from_config(load_config_file(path), name=s, source=str(path), family=family)
        return _preset(s)
    p = Path(s).expanduser()
    if p.exists():
        cfg_path = p / "config.json" if p.is_dir() else p
        return spec_from_config(
            load_config_file(cfg_path),
            name=p.name if p.is_dir() else p.parent.name or p.stem,
            source=str(cfg_path),
            family=family,
        )
    raise SpecError(
        "model", s, "a preset (" + ", ".join(list_presets()) + ") or a path to a config.json or its folder"
    )
