"""The marked "not available" value: what a metric becomes when its NVML or psutil call fails.

A failing metric is data, not an exception (nvitop's NA): it carries the reason so a dashboard can
say "n/a (not supported on MIG)" instead of a blank, and it serialises as {"na": "<reason>"}.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, TypeGuard

#: A format spec's fill, alignment and width (kept for "n/a"); sign, grouping, precision and type dropped.
_SPEC = re.compile(
    r"^(?:(?P<fill>.)?(?P<align>[<>^=]))?[+\- ]?(?:z)?#?0?(?P<width>\d+)?[,_]?(?:\.\d+)?[a-zA-Z%]?$"
)


@dataclass(frozen=True)
class NA:
    """A metric that could not be read, and why."""

    reason: str

    def __bool__(self) -> bool:  # lets `value or default` treat a missing metric as missing
        return False

    def __str__(self) -> str:
        return f"n/a ({self.reason})"

    def __format__(self, spec: str) -> str:
        """Any numeric format prints "n/a" (width and alignment kept): f"{v:.1f}" on a table row."""
        if not spec:
            return str(self)
        m = _SPEC.match(spec)
        if m is None:
            return "n/a"
        align = m["align"] if m["align"] in ("<", "^", ">") else ">"  # right, as the numbers it stands for
        return format("n/a", f"{m['fill'] or ''}{align}{m['width'] or ''}")

    def __float__(self) -> float:
        """NaN, so charts and numpy read a missing metric as a gap (float(v), np.asarray(..., float))."""
        return math.nan

    def to_json(self) -> dict[str, str]:
        return {"na": self.reason}


def is_na(value: Any) -> bool:
    """True for an NA, and for its JSON form {"na": reason} read back from a file."""
    return isinstance(value, NA) or (isinstance(value, dict) and set(value) == {"na"})


def na_reason(value: Any) -> str | None:
    """The reason of an NA (either form), else None."""
    if isinstance(value, NA):
        return value.reason
    if is_na(value):
        return str(value["na"])
    return None


def to_json(value: Any) -> Any:
    """Replace every NA inside dicts and lists by {"na": reason}, so json.dumps works; a NaN or
    infinite reading becomes an NA too, since JSON has no such numbers."""
    if isinstance(value, NA):
        return value.to_json()
    if isinstance(value, float) and not math.isfinite(value):
        return {"na": f"not a finite reading ({value!r})"}
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    return value


def from_json(value: Any) -> Any:
    """The inverse of to_json: {"na": reason} becomes NA(reason) again (and so does a NaN or Infinity
    that Python's json reads from a file written by another tool)."""
    if is_na(value):
        return NA(str(value["na"]))
    if isinstance(value, float) and not math.isfinite(value):
        return NA(f"not a finite reading ({value!r})")
    if isinstance(value, dict):
        return {k: from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_json(v) for v in value]
    return value


def is_number(value: Any) -> TypeGuard[int | float]:
    """A real reading (int or float, not bool, not NA)."""
    return isinstance(value, int | float) and not isinstance(value, bool)
