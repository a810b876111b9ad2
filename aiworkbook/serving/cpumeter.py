"""The client's CPU time per request, measured per request: every request runs as its own coroutine on
the one event loop, so the CPU a request costs is the thread CPU time spent inside its own steps (from
one suspension to the next: building the body, parsing its SSE lines and JSON, recording times).
Dividing a run's process CPU by its requests would fold start-up, the tokenizer and idle polling into
every request; this does not. What it leaves out, and says so: the event loop's own work shared by all
requests (selecting, aiohttp's socket reads before a line reaches the request's code).
"""

from __future__ import annotations

import time
import types
from collections.abc import Callable, Coroutine, Generator
from typing import Any, TypeVar

T = TypeVar("T")


@types.coroutine
def metered(coro: Coroutine[Any, Any, T], add: Callable[[float], None]) -> Generator[Any, Any, T]:
    """Await `coro`, calling `add(seconds)` with the thread CPU time of each of its steps (also when it
    raises or is cancelled). Like `yield from coro`, with a clock around every resumption."""
    sent: Any = None
    thrown: BaseException | None = None
    while True:
        t0 = time.thread_time()
        try:
            step = coro.send(sent) if thrown is None else coro.throw(thrown)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        finally:
            add(time.thread_time() - t0)
        try:
            sent, thrown = (yield step), None
        except BaseException as e:  # noqa: BLE001 (cancellation and the rest go into the coroutine)
            sent, thrown = None, e
