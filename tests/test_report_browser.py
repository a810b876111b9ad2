"""The HTML report in headless Chromium with every network request refused: it renders, its charts
are drawn (SVG with a size), and it asks for nothing beyond the file itself."""

from __future__ import annotations

import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from chromium import CHROMIUM, CHROMIUM_ARGS

pytestmark = pytest.mark.browser


def inspect(path: Path) -> dict[str, Any]:
    """Open `path` offline with JavaScript off, refusing every non-file request; what the page shows."""
    from playwright.sync_api import sync_playwright

    requested: list[str] = []

    def refuse(route: Any) -> None:
        requested.append(route.request.url)
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            route.abort()

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(offline=True, java_script_enabled=False)
            context.route("**/*", refuse)
            page = context.new_page()
            page.goto(path.as_uri())
            page.wait_for_selector("body.aiwb-ready")
            figures = page.locator("figure.aiwb-chart")
            charts = []
            for i in range(figures.count()):
                box = figures.nth(i).locator("svg").first.bounding_box()
                charts.append((figures.nth(i).get_attribute("data-chart"), box))
            memory_marks = page.locator(
                "figure[data-chart=memory] svg path, figure[data-chart=memory] svg rect"
            )
            return {
                "requested": requested,
                "charts": charts,
                "memory_marks": memory_marks.count(),
                "h2": page.locator("h2").count(),
                "pdf": page.pdf(format="A4"),
            }
        finally:
            browser.close()


def test_report_opens_offline_and_shows_its_charts(tmp_path):
    if shutil.which(CHROMIUM) is None:
        pytest.skip(
            "needs Debian chromium at /usr/bin/chromium (apt-get install -y chromium; .ci/run installs it)"
        )
    pytest.importorskip("playwright.sync_api", reason="needs playwright (the test extra)")
    from test_report import profile

    from aiworkbook.profile.report import render_html

    path = tmp_path / "report.html"
    path.write_text(render_html(profile()), encoding="utf-8")
    # Playwright's sync API refuses a thread with a running asyncio loop (another session-wide browser
    # fixture may hold one): a worker thread of its own.
    with ThreadPoolExecutor(1) as pool:
        seen = pool.submit(inspect, path).result(timeout=300)
    assert [u for u in seen["requested"] if not u.startswith("file://")] == []
    assert [name for name, _ in seen["charts"]] == ["memory", "memory", "proofs", "latency", "roofline"]
    for name, box in seen["charts"]:
        assert box is not None and box["width"] > 100 and box["height"] > 100, name
    assert seen["memory_marks"] > 5  # the charts carry marks, not just an empty frame
    assert seen["h2"] >= 8
    pdf = seen["pdf"]  # prints: a PDF of A4 pages
    assert pdf[:4] == b"%PDF" and len(re.findall(rb"/Type\s*/Page\b", pdf)) >= 2
