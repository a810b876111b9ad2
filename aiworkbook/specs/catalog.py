"""Model presets shipped under data/models/<name>/config.json, and the one loader for MODEL args."""

from __future__ import annotations

import hashlib
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.paths import data_dir
from aiworkbook.specs import families
from aiworkbook.specs.model import ModelSpec
from aiworkbook.specs.reader import load_config_file, spec_from_config


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
    try:
        exists = p.exists()
    except OSError:  # a name too long to be a path: not one
        exists = False
    if exists:
        cfg_path = p / "config.json" if p.is_dir() else p
        return spec_from_config(
            load_config_file(cfg_path),
            name=p.name if p.is_dir() else p.parent.name or p.stem,
            source=str(cfg_path),
            family=family,
        )
    raise SpecError("model", s, Msg("allowed.model", presets=", ".join(list_presets())))


#: A Hugging Face repository id: `owner/name` (letters, digits, `-`, `_`, `.`).
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


def hf_repo(preset: str) -> str | None:
    """The Hugging Face repository a preset's config.json came from (its `_name_or_path`, or the owner/name
    of its `_source` URL), for `vllm serve`; None for a preset that is no released model (tiny-llama)."""
    if preset not in list_presets():
        return None
    cfg = load_config_file(data_dir() / "models" / preset / "config.json")
    name = cfg.get("_name_or_path")
    if isinstance(name, str) and _REPO.fullmatch(name):
        return name
    src = cfg.get("_source")
    if isinstance(src, str) and src.startswith("https://huggingface.co/"):
        owner_name = "/".join(src.removeprefix("https://huggingface.co/").split("/")[:2])
        if _REPO.fullmatch(owner_name):
            return owner_name
    return None


def config_sha256(cfg: dict[str, Any]) -> str:
    """The sha256 of a config's canonical JSON (sorted keys, no spaces, UTF-8): the same whichever way the
    file holding it was indented, so a profile can carry the config and prove it unchanged."""
    try:
        text = json.dumps(cfg, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:
        raise SpecError("config", "NaN or Infinity", "a config.json of finite numbers") from None
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def embedded_config(name_or_path: str | Path) -> dict[str, Any] | None:
    """A local model's config.json as a locked profile embeds it (`path`: the absolute folder it was read
    from, `sha256`, `content`), so the profile works after the folder moves; None for a preset."""
    s = str(name_or_path)
    if s in list_presets():
        return None
    p = Path(s).expanduser()
    load_model(s)  # a readable config that reads as a model here, or the error that lists the presets
    cfg_path = p / "config.json" if p.is_dir() else p
    content = load_config_file(cfg_path)
    return {"path": str(cfg_path.resolve().parent), "sha256": config_sha256(content), "content": content}


def family_examples() -> dict[str, str]:
    """Every family aiworkbook reads, with a preset (or the tiny shape the tests use) to try it on."""
    presets = list_presets()
    out: dict[str, str] = {}
    for fam in families.FAMILIES:
        out[fam] = next((p for p in presets if _preset_type(p) == fam), "-")
    for fam in families.known():
        out[fam] = families.EXAMPLES.get(fam, "-")
    return out


def _preset_type(name: str) -> str:
    spec = load_model(name)
    return getattr(spec, "family", "") or spec.model_type
