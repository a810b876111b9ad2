"""The sizing dashboard's first cells load only what its first render needs (issue 25, start-up:
benchmarks/bench_dashboard_startup.py measures the time): no pandas, torch or CLI (typer) in the
kernel once the header and the sizer are built."""

from __future__ import annotations

import subprocess
import sys


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
        "print(sorted(m for m in ('pandas', 'torch', 'typer', 'aiworkbook.cli') if m in sys.modules))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().splitlines()[-1] == "[]"


def test_the_version_is_read_on_first_use():
    import aiworkbook

    assert isinstance(aiworkbook.__version__, str) and aiworkbook.__version__
    from aiworkbook import __version__

    assert __version__ == aiworkbook.__version__
