"""Defer rfc3987_syntax, which jsonschema imports at import time for its `iri` format checks and which
builds a Lark grammar as it loads: about 1.3 s of the ~1.9 s `import altair` costs (altair imports
jsonschema), in every dashboard kernel and CLI chart, for checks that chart validation never runs
(python-jsonschema/jsonschema#1428). Importing this module puts a stand-in module in its place
(`install()`) whose `is_valid_syntax` imports the real module on first call, as does any other
attribute; aiworkbook.charts and aiworkbook.widgets import it before anything imports altair."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import Any

NAME = "rfc3987_syntax"


def _real() -> types.ModuleType:
    mod = sys.modules.get(NAME)
    if mod is not None and getattr(mod, "_aiworkbook_stand_in", False):
        del sys.modules[NAME]
    return importlib.import_module(NAME)


def _is_valid_syntax(*args: Any, **kwargs: Any) -> bool:
    return _real().is_valid_syntax(*args, **kwargs)


def _getattr(name: str) -> Any:
    if name.startswith("__"):  # `from m import x` asks for __path__: not a reason to load the grammar
        raise AttributeError(name)
    return getattr(_real(), name)


def install() -> bool:
    """Put the stand-in in place when rfc3987_syntax is installed and nobody has imported it yet (and
    so before jsonschema is imported); True when it was put in place."""
    if NAME in sys.modules or "jsonschema" in sys.modules or importlib.util.find_spec(NAME) is None:
        return False
    stand_in = types.ModuleType(NAME, "aiworkbook's stand-in: the real module loads on first use")
    stand_in._aiworkbook_stand_in = True  # type: ignore[attr-defined]
    stand_in.is_valid_syntax = _is_valid_syntax  # type: ignore[attr-defined]
    stand_in.__getattr__ = _getattr  # type: ignore[method-assign]
    sys.modules[NAME] = stand_in
    return True


install()
