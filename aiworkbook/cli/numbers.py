"""Every number typed on the command line is bounded before any command sees it.

A command may allocate or loop in proportion to a number (a list per rank, a row per request), so a
number is refused here, with exit 2 naming the option and the allowed range, when it is not finite
(NaN, inf) or lies outside the 64-bit range every library below us computes in. What a quantity
allows beyond that (ranks 1..65,536, a port 0..65,535) is its own check, done before it is used;
tests/test_cli_numbers_fuzz.py feeds every numeric option 0, -1, 2^31, 2^63, 10^20, NaN, inf and
text and holds each to exit 0/1/2 within seconds and bounded memory.
"""

from __future__ import annotations

import math
from typing import Any

INT_RANGE = (-(2**63), 2**63 - 1)


def _annotation(param: Any) -> Any:
    desc = getattr(param, "type_descriptor", None)
    return getattr(desc, "annotation", None)


def numeric(param: Any) -> str | None:
    """ "int" or "float" for an option typed as a number, else None (annotations may be strings)."""
    ann = _annotation(param)
    for kind in (int, float):
        if ann in (kind, kind.__name__):
            return kind.__name__
    return None


def check(name: str, kind: str, value: Any) -> None:
    """Refuse a non-finite float or an integer outside the 64-bit range: a SpecError naming the option's
    field, which the command line prints as one line with exit 2."""
    from aiworkbook.errors import SpecError

    if value is None or isinstance(value, bool):
        return
    if kind == "float" and not math.isfinite(value):
        raise SpecError(name, value, "a finite number")
    if kind == "int" and not INT_RANGE[0] <= value <= INT_RANGE[1]:
        raise SpecError(name, value, f"an integer {INT_RANGE[0]}..{INT_RANGE[1]}")


def bound_all(cmd: Any) -> None:
    """Put check() in front of every numeric option's own callback, in `cmd` and its subcommands."""
    for param in getattr(cmd, "params", ()):
        kind = numeric(param)
        if kind is None or getattr(param, "_bounded", False):
            continue
        own = param.callback

        def guarded(ctx: Any, p: Any, value: Any, _own: Any = own, _kind: str = kind) -> Any:
            for v in value if isinstance(value, (list, tuple)) else (value,):
                check(p.name, _kind, v)
            return _own(ctx, p, value) if _own is not None else value

        param.callback = guarded
        param._bounded = True
    for sub in getattr(cmd, "commands", {}).values():
        bound_all(sub)
