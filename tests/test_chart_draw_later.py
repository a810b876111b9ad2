"""Issue 33, start-up: a chart drawn with `ChartView.draw_later` on the kernel's loop before altair is
loaded leaves the loop free (the chart is not there yet), then appears once a background thread has
imported altair, the newest of two requests only; `wait()` blocks until it is drawn. A fresh
interpreter, so altair is really not loaded yet (as in a dashboard kernel)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.timeout(120)
def test_a_chart_asked_for_before_altair_loads_is_drawn_once_it_has_loaded():
    code = (
        "import asyncio, sys\n"
        "from aiworkbook.widgets.base import chart_view\n"
        "async def page():\n"
        "    view = chart_view(later=True)\n"
        "    made = []\n"
        "    def make(title):\n"
        "        def chart(charts):\n"
        "            import altair as alt\n"
        "            made.append(title)\n"
        "            return alt.Chart(alt.Data(values=[{'x': 1}])).mark_point().properties(title=title)\n"
        "        return chart\n"
        "    view.draw_later(make('first'))\n"
        "    view.draw_later(make('second'))\n"
        "    print('at once:', view.spec is None)  # the loop has not run: nothing drawn on it yet\n"
        "    assert view.wait(90)\n"
        "    print('drawn:', view.spec['title'], made)\n"
        "    view.draw_later(make('third'))  # altair loaded: drawn at once\n"
        "    print('then:', view.spec['title'])\n"
        "asyncio.run(page())\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=110)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.strip().splitlines()
    assert lines == ["at once: True", "drawn: second ['second']", "then: third"]
