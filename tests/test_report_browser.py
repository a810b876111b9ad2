"""The HTML report in headless Chromium with every network request refused: it renders, its charts
are drawn (SVG with a size), and it asks for nothing beyond the file itself."""

from __future__ import annotations

import re
import shutil

import pytest

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser():
    if shutil.which(CHROMIUM) is None:
        pytest.skip(
            "needs Debian chromium at /usr/bin/chromium (apt-get install -y chromium; .ci/run installs it)"
        )
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (the test extra)")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def test_report_opens_offline_and_shows_its_charts(browser, tmp_path):
    from test_report import profile

    from aiworkbook.profile.report import render_html

    path = tmp_path / "report.html"
    path.write_text(render_html(profile()), encoding="utf-8")
    context = browser.new_context(offline=True, java_script_enabled=False)
    requested: list[str] = []

    def refuse(route):
        requested.append(route.request.url)
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            route.abort()

    context.route("**/*", refuse)
    page = context.new_page()
    page.goto(path.as_uri())
    page.wait_for_selector("body.aiwb-ready")
    assert [u for u in requested if not u.startswith("file://")] == []
    figures = page.locator("figure.aiwb-chart")
    assert figures.count() == 5
    for i in range(figures.count()):
        box = figures.nth(i).locator("svg").first.bounding_box()
        assert box is not None and box["width"] > 100 and box["height"] > 100, figures.nth(i).get_attribute(
            "data-chart"
        )
    # the charts carry marks, not just an empty frame
    assert page.locator("figure[data-chart=memory] svg path, figure[data-chart=memory] svg rect").count() > 5
    assert page.locator("h2").count() >= 8
    pdf = page.pdf(format="A4")  # prints: a PDF of A4 pages
    assert pdf[:4] == b"%PDF" and len(re.findall(rb"/Type\s*/Page\b", pdf)) >= 2
    context.close()
