"""The sizing dashboard's first cells load only what its first render needs (issue 25, start-up:
benchmarks/bench_dashboard_startup.py measures the time): no pandas, torch or CLI (typer) in the
kernel once the header and the sizer are built, nor the patterns' catalogue and the proofs' registry
(the "measured where" line and the chart's words need sentences of the catalogue only; issue 33)."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_the_sizing_pages_first_cells_load_no_pandas_torch_or_cli():
    code = (
        "import sys\n"
        "from aiworkbook.widgets import ModelSizer\n"
        "from aiworkbook.widgets.i18n import page_header, page_lang\n"
        "lang = page_lang()\n"
        "page_header('sizing', lang)\n"
        "s = ModelSizer(lang=lang)\n"
        "assert s.wait(120) and not s.error, s.error\n"
        "assert 'altair' in sys.modules  # the chart is drawn: the check below is not vacuous\n"
        "unwanted = ('pandas', 'torch', 'typer', 'aiworkbook.cli', 'aiworkbook.patterns.catalog',\n"
        "            'aiworkbook.patterns.questionnaire', 'aiworkbook.proofs.registry')\n"
        "assert 'aiworkbook.patterns.i18n' in sys.modules  # the words were read: not vacuous either\n"
        "print(sorted(m for m in unwanted if m in sys.modules))\n"
    )
    assert _last_line(code) == "[]"


def test_the_version_is_read_on_first_use():
    import aiworkbook

    assert isinstance(aiworkbook.__version__, str) and aiworkbook.__version__
    from aiworkbook import __version__

    assert __version__ == aiworkbook.__version__


@pytest.mark.timeout(240)
def test_the_sizing_pages_cells_never_import_altair_themselves():
    """Issue 33, start-up: the sizing page's three widgets mark themselves ready without importing
    altair on the kernel's thread (about a second of a kernel's start): a background thread imports it
    while the later cells run, and the chart comes with the first result on the kernel's event loop (the
    cells run in a coroutine, as ipykernel runs them). An import hook records which thread imports it."""
    code = (
        "import asyncio, sys, threading, time\n"
        "who = []\n"
        "class Spy:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'altair':\n"
        "            who.append(threading.current_thread().name)\n"
        "        return None\n"
        "sys.meta_path.insert(0, Spy())\n"
        "async def page():\n"
        "    from aiworkbook.widgets import KVPlanner, ModelSizer, PreflightPanel\n"
        "    from aiworkbook.widgets.i18n import page_header\n"
        "    page_header('sizing', 'en')\n"
        "    s = ModelSizer(lang='en'); k = KVPlanner(lang='en'); k.follow(s); p = PreflightPanel(lang='en')\n"
        "    assert all('aiwb-ready' in w._dom_classes for w in (s, k, p))\n"
        "    deadline = time.monotonic() + 120\n"
        "    while not (s.chart.spec and k.chart.spec) and time.monotonic() < deadline:\n"
        "        await asyncio.sleep(0.05)\n"
        "    assert s.error == '' and s.chart.spec is not None, s.error\n"
        "    print('drawn:', k.chart.spec is not None, 'altair imported by:', who)\n"
        "asyncio.run(page())\n"
    )
    assert _last_line(code) == "drawn: True altair imported by: ['aiwb-charts']"


def _last_line(code: str) -> str:
    """The last line `code` prints in a fresh interpreter (a kernel's start), which must succeed."""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.strip().splitlines()[-1]


def test_the_report_pages_cells_import_no_altair():
    """Issue 33, start-up: the proof runner and the profile locker say verdicts and colours without
    altair (aiworkbook.charts.labels, .colours), and the runner's chart waits for its first result, so
    the report page's cells leave altair to the sizer's first chart (loaded off the kernel's thread)."""
    code = (
        "import sys\n"
        "from aiworkbook.widgets import ProfileLocker, ProofRunner\n"
        "runner = ProofRunner(lang='de'); locker = ProfileLocker(lang='de'); locker.collect(runner)\n"
        "print('altair' in sys.modules, 'aiworkbook.charts.labels' in sys.modules)\n"
    )
    assert _last_line(code) == "False True"
