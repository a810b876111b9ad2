"""A package whose public names load their modules on first use (PEP 562): `import aiworkbook.patterns`
or `import aiworkbook.profile` costs nothing until a name is used, so a dashboard kernel that needs one
of them does not load the others (start-up, issue 33; benchmarks/bench_kernel_startup.py).

Where a name is also the name of a submodule (aiworkbook.profile's `check` and `lock` functions, in
check.py and lock.py), the function stays the package's attribute: the import system binds a submodule
to its package's attribute when the submodule loads, and that binding is left out here, as the eager
`from .check import check` of the package's __init__ used to overwrite it."""

from __future__ import annotations

import sys
import types
from importlib import import_module
from typing import Any


class _Package(types.ModuleType):
    """The package's module: a public name is looked up in its module on first use, then kept."""

    _aiwb_exports: dict[str, str]

    def __getattr__(self, name: str) -> Any:
        where = self.__dict__.get("_aiwb_exports", {})
        if name not in where:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        value = getattr(import_module(where[name]), name)
        types.ModuleType.__setattr__(self, name, value)
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        exported = self.__dict__.get("_aiwb_exports", {})
        if (
            name in exported
            and isinstance(value, types.ModuleType)
            and value.__name__ == f"{self.__name__}.{name}"
        ):
            return  # a submodule of the same name as an exported function: the function is the attribute
        types.ModuleType.__setattr__(self, name, value)


def lazy_exports(package: str, exports: dict[str, str]) -> None:
    """Make `package` (its __init__ calls this) load each name of `exports` (name -> the module that
    defines it) on first use."""
    module = sys.modules[package]
    module.__class__ = _Package
    types.ModuleType.__setattr__(module, "_aiwb_exports", dict(exports))
