"""benchmarks/bench_dashboard_startup.py's wait (the loads themselves run in `make bench`, not here):
a page is ready once every widget that marks itself ready has, not at the first marker."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from chromium import CHROMIUM, CHROMIUM_ARGS

from aiworkbook.cli.app_cmds import dashboard_path

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    sys.path.insert(0, str(ROOT / "benchmarks"))  # its own `from bench_dashboards import ...`
    spec = importlib.util.spec_from_file_location(
        "bench_startup", ROOT / "benchmarks" / "bench_dashboard_startup.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _notebook(tmp_path: Path, *cells: str) -> Path:
    import nbformat as nbf

    nb = nbf.v4.new_notebook()
    nb.cells = [nbf.v4.new_markdown_cell("ModelSizer() in prose is no widget")]
    nb.cells += [nbf.v4.new_code_cell(c) for c in cells]
    path = tmp_path / "page.ipynb"
    nbf.write(nb, path)
    return path


def test_the_sizing_page_waits_for_its_three_widgets():
    # widgets/dashboards/sizing.ipynb builds ModelSizer, KVPlanner and PreflightPanel
    assert _bench().expected_ready(dashboard_path("sizing")) == 3


def test_expected_ready_counts_composites_and_explicit_markers_in_code_only(tmp_path):
    b = _bench()
    page = _notebook(
        tmp_path,
        "from aiworkbook.widgets import KVPlanner, ModelSizer\ns = ModelSizer()  # KVPlanner() later\ns",
        "k = KVPlanner(lang='nl')\nk.follow(s)\n'GPUMonitor()'",
        "import ipywidgets as W\nh = W.HTML('x')\nh.add_class('aiwb-ready')\nh.add_class('aiwb-readyish')\nh",
    )
    assert b.expected_ready(page) == 3
    assert b.expected_ready(_notebook(tmp_path, "print(1)")) == 1  # a page always shows one


def _count_js(html: str, n: int) -> bool:
    from playwright.sync_api import sync_playwright

    b = _bench()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.set_content(html)
            return bool(page.evaluate(b.ALL_READY_JS, n))
        finally:
            browser.close()


@pytest.mark.browser
def test_all_ready_needs_every_top_level_marker_not_the_first():
    if shutil.which(CHROMIUM) is None:
        pytest.skip("needs Debian chromium at /usr/bin/chromium (apt-get install -y chromium)")
    pytest.importorskip("playwright.sync_api", reason="needs playwright (the test extra)")
    sizer = '<div class="aiwb-widget aiwb-ready"><div class="aiwb-ready">nested</div></div>'
    planner = '<div class="aiwb-widget aiwb-kv-planner">still building</div>'
    done = '<div class="aiwb-widget aiwb-kv-planner aiwb-ready"></div><div class="aiwb-ready"></div>'
    # Playwright's sync API refuses a thread with a running asyncio loop: a worker thread of its own.
    with ThreadPoolExecutor(1) as pool:
        early = pool.submit(_count_js, sizer + planner, 2).result(timeout=120)
        late = pool.submit(_count_js, sizer + done, 3).result(timeout=120)
    assert (early, late) == (False, True)


def test_every_dashboard_gets_its_ratio_of_medians_with_the_load_beside_it():
    """Issue 33: every dashboard (not only sizing) against the bare page, the ratio of the medians, and
    the machine's load recorded with it."""
    from aiworkbook.cli.app_cmds import DASHBOARDS

    m = {
        "bare": [2.0, 4.0, 3.0],
        "sizing": [3.0, 5.0, 4.0],
        "monitor": [2.5, 6.0, 3.3],
        "report": [3.0, 3.0, 3.0],
        "sizing_first": [1.0, 1.0, 1.0],
        "sizing_numbers": [4.0, 6.0, 5.0],
        "load": [1.0, 6.5, 2.0],
        "cores": 2,
        "pages": DASHBOARDS,
        "viewers": 0,
        "widgets": dict.fromkeys(DASHBOARDS, 1),
    }
    rows = {r["name"].split(":")[0]: r for r in _bench().rows_from(m) if "ratio of medians" in r["name"]}
    assert set(rows) == set(DASHBOARDS)
    assert rows["sizing"]["ratio"] == pytest.approx(4.0 / 3.0) and rows["monitor"]["ratio"] == pytest.approx(
        1.1
    )
    assert all(
        "load average (1 min) 1.0-6.5, median 2.0 on 2 logical CPUs" in r["note"] for r in rows.values()
    )
    assert all("target ≤ 1.5x" in r["note"] for r in rows.values())


def test_each_dashboard_waits_for_the_widgets_it_shows():
    """The monitor builds FleetMonitor or GPUMonitor (a conditional expression): one widget, not two, or
    the bench waits for a marker that never comes."""
    bench = _bench()
    assert {d: bench.expected_ready(dashboard_path(d)) for d in ("sizing", "monitor", "report")} == {
        "sizing": 3,
        "monitor": 1,
        "report": 3,
    }
