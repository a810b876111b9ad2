"""YAML written by PyYAML's safe dumper: every string a scalar that reads back as itself (quoted where a
reader could take it for a number, a boolean, a key or a comment), a multi-line string as a literal
block where its lines allow one; block style, keys in the order given."""

from __future__ import annotations

from typing import Any

import yaml


class _Dumper(yaml.SafeDumper):
    """SafeDumper with multi-line strings as literal blocks (the profile inside a ConfigMap reads as
    itself); PyYAML falls back to a quoted scalar where a block cannot hold the text exactly."""


def _str(dumper: yaml.SafeDumper, s: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", s, style="|" if "\n" in s else None)


_Dumper.add_representer(str, _str)
_OPTIONS: dict[str, Any] = {
    "Dumper": _Dumper,
    "sort_keys": False,
    "default_flow_style": False,
    "width": 1 << 30,
}


def dump(doc: Any) -> str:
    """One document as YAML."""
    return yaml.dump(doc, **_OPTIONS)


def dump_all(docs: list[Any]) -> str:
    """Documents as multi-document YAML, each opened by `---` (`kubectl apply -f`)."""
    return yaml.dump_all(docs, explicit_start=True, **_OPTIONS)
