"""Issue 33, start-up: work that can wait (altair's imports) starts when the kernel is idle, after the
page's cells, not while they still build widgets; a cell that waits for it starts it at once.

`track_idle` runs against IPython's own EventManager and a real asyncio loop; the last test runs a
real kernel (jupyter_client) with the wait for idleness made longer than the cell's timeout, so a
`wait()` that did not start the work itself would fail, not merely be slow."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest
from aiworkbook.widgets.idle import IDLE_AFTER_S, track_idle
from IPython.core.events import EventManager, available_events


class _Info:  # what IPython passes pre_run_cell / post_run_cell (only its presence matters here)
    pass


def _events() -> EventManager:
    return EventManager(shell=None, available_events=available_events)


def test_idle_after_a_quiet_spell_not_during_a_cell_and_again_after_the_last_one():
    async def page() -> list[tuple[str, bool]]:
        events = _events()
        idle = track_idle(events, asyncio.get_running_loop())
        seen = [("armed", idle.is_set())]
        await asyncio.sleep(IDLE_AFTER_S * 3)
        seen.append(("quiet", idle.is_set()))
        events.trigger("pre_run_cell", _Info())
        seen.append(("cell starts", idle.is_set()))
        await asyncio.sleep(IDLE_AFTER_S * 3)  # a long cell: still busy
        seen.append(("cell runs", idle.is_set()))
        events.trigger("post_run_cell", _Info())
        seen.append(("cell ended", idle.is_set()))  # the next cell may come at once: not idle yet
        await asyncio.sleep(IDLE_AFTER_S / 5)
        events.trigger("pre_run_cell", _Info())  # ... and it did
        await asyncio.sleep(IDLE_AFTER_S * 3)
        seen.append(("next cell runs", idle.is_set()))
        events.trigger("post_run_cell", _Info())
        await asyncio.sleep(IDLE_AFTER_S * 3)
        seen.append(("after the last cell", idle.is_set()))
        return seen

    assert asyncio.run(page()) == [
        ("armed", False),
        ("quiet", True),
        ("cell starts", False),
        ("cell runs", False),
        ("cell ended", False),
        ("next cell runs", False),
        ("after the last cell", True),
    ]


def test_without_ipython_nothing_waits():
    code = "from aiworkbook.widgets.idle import kernel_idle\nprint(kernel_idle().is_set())\n"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "True"


@pytest.mark.timeout(240)
def test_in_a_kernel_the_sizer_chart_waits_for_idle_and_a_waiting_cell_starts_it():
    from jupyter_client.manager import KernelManager

    km = KernelManager(kernel_name="python3")
    km.start_kernel(env={**os.environ}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kc = km.client()
    try:
        kc.start_channels()
        kc.wait_for_ready(timeout=120)

        def run(code: str) -> str:
            out = []

            def keep(msg: dict) -> None:
                if msg["msg_type"] == "stream":
                    out.append(msg["content"]["text"])
                if msg["msg_type"] == "error":
                    out.append("ERROR " + msg["content"]["evalue"])

            reply = kc.execute_interactive(code, timeout=180, output_hook=keep)
            assert reply["content"]["status"] == "ok", "".join(out)
            return "".join(out).strip()

        # the page's cells back to back in one cell: the kernel is never idle while they run
        said = run(
            "import sys, aiworkbook.widgets.base as b, aiworkbook.widgets.idle as idle\n"
            "b.IDLE_WAIT_MAX_S = 600  # only idleness or a waiting cell can start the import\n"
            "from aiworkbook.widgets import ModelSizer\n"
            "s = ModelSizer()\n"
            "import time\n"
            "t = time.monotonic()\n"
            "while s.chart._make is None and time.monotonic() - t < 60:\n"
            "    s._bg.delivery.drain(); time.sleep(0.01)  # the first result, as the loop would deliver it\n"
            "time.sleep(3 * idle.IDLE_AFTER_S)  # a cell still running: busy, however long\n"
            "print('waiting', s.chart._make is not None, 'altair' in sys.modules)\n"
            "print('drawn', s.chart.wait(120), s.chart.spec is not None)\n"
        )
        assert said.splitlines() == ["waiting True False", "drawn True True"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
