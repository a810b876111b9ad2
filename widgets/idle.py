"""When the kernel is idle: the page's cells have all run. Work that can wait (altair's imports, about
0.4 s of the one GIL) starts then instead of slowing the cells that build the rest of the page (two
cores, one GIL: a thread importing altair made the KV planner and the pre-flight panel after the sizer
take twice as long; issue 33's start-up)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

#: the kernel counts as idle once no cell has run for this long (Voilà sends the next cell within a few
#: milliseconds of the last one's reply; a person at a notebook takes longer)
IDLE_AFTER_S = 0.05
#: work waiting for an idle kernel starts after this long anyway (a notebook run from top to bottom
#: by nbval is never idle until its last cell)
IDLE_WAIT_MAX_S = 5.0

_idle: threading.Event | None = None
_lock = threading.Lock()


def track_idle(events: Any, loop: asyncio.AbstractEventLoop) -> threading.Event:
    """An event set while no cell has run for IDLE_AFTER_S on `loop`, from IPython's `events`
    (`pre_run_cell` clears it, `post_run_cell` sets it IDLE_AFTER_S later unless a cell starts first).
    Armed at once: called between cells, the kernel is idle after IDLE_AFTER_S; called during a cell,
    the timer cannot fire before the cell ends (the loop runs no callback while a cell's code runs),
    and the cell's `post_run_cell` re-arms it from there."""
    idle = threading.Event()
    timer = [loop.call_later(IDLE_AFTER_S, idle.set)]

    def started(*_: Any) -> None:
        idle.clear()
        timer[0].cancel()

    def ended(*_: Any) -> None:
        timer[0].cancel()
        timer[0] = loop.call_later(IDLE_AFTER_S, idle.set)

    events.register("pre_run_cell", started)
    events.register("post_run_cell", ended)
    return idle


def kernel_idle() -> threading.Event:
    """This kernel's idle event (one per kernel, made on the first call, on the kernel's thread); set
    for good outside IPython or without a running loop (scripts, tests: nothing to wait for)."""
    global _idle
    with _lock:
        if _idle is None:
            from IPython import get_ipython

            try:
                loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
            shell = get_ipython()
            if shell is None or loop is None:
                _idle = threading.Event()
                _idle.set()
            else:
                _idle = track_idle(shell.events, loop)
        return _idle


def hurry() -> None:
    """A cell waits for work that waits for an idle kernel (`widget.wait()`): start it now; the next
    cell makes the kernel busy again."""
    with _lock:
        if _idle is not None:
            _idle.set()
