"""One call after another under the first one's typed signature: `then(first, second)` is
second(first(...)) with first's parameters as mypy and `inspect.signature` show them, so a public
entry point that prepares and then runs never hides its fields behind `**kwargs`."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")
R = TypeVar("R")


def then(first: Callable[P, T], second: Callable[[T], R], name: str, doc: str) -> Callable[P, R]:
    """second(first(*args, **kwargs)), named `name`, documented `doc`, with first's parameters and
    second's return type."""

    @functools.wraps(first)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        return second(first(*args, **kwargs))

    returns = inspect.signature(second).return_annotation
    call.__signature__ = inspect.signature(first).replace(return_annotation=returns)  # type: ignore[attr-defined]
    call.__name__ = call.__qualname__ = name
    call.__doc__ = doc
    return call
