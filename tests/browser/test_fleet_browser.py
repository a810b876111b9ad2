"""The monitor dashboard in Chromium: after "Show the recorded trace" then "Resume", the live host page
is back (its two charts and the trace button; issue 25), and with AIWORKBOOK_PROMETHEUS_URL set it is the
fleet view of a real Prometheus scraping two replaying `monitor --serve` endpoints."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace

import pytest
from conftest import close_page, open_dashboard, shot
from prometheus_fleet import Fleet, prometheus_binary

pytestmark = pytest.mark.browser

ANSWER_TIMEOUT_MS = 60_000


def _label(key: str) -> str:
    from aiworkbook.widgets.i18n import label

    return label(key, "en")


def _charts(page, css: str):
    """The chart elements vega-embed drew inside the composite `css` (canvas or SVG renderer)."""
    return page.locator(f"{css} .vega-embed")


@pytest.mark.timeout(300)
def test_resume_after_the_recorded_trace_brings_the_live_host_page_back(browser, servers):
    spec, _ = servers.get("monitor")
    page = open_dashboard(browser, spec.url)
    try:
        monitor = page.locator(".aiwb-gpu-monitor")
        trace_button = monitor.locator("button", has_text=_label("recorded"))
        if trace_button.count() == 0:
            pytest.skip("this machine has an NVIDIA GPU: the monitor offers no recorded trace")
        charts = _charts(page, ".aiwb-gpu-monitor")
        charts.nth(1).wait_for(timeout=ANSWER_TIMEOUT_MS)
        assert charts.count() == 2  # host CPU and memory
        trace_button.click()
        charts.nth(3).wait_for(timeout=ANSWER_TIMEOUT_MS)  # the trace's four GPU charts
        assert trace_button.count() == 0
        shot(page, "monitor-recorded")
        monitor.locator("button", has_text=_label("resume")).click()
        trace_button.wait_for(timeout=ANSWER_TIMEOUT_MS)  # the button is back without a reload
        page.wait_for_function(
            "n => document.querySelectorAll('.aiwb-gpu-monitor .vega-embed').length === n",
            arg=2,
            timeout=ANSWER_TIMEOUT_MS,
        )
        assert monitor.locator("button", has_text=_label("pause")).count() == 1
        assert "Traceback" not in page.content()
        shot(page, "monitor-resumed")
    finally:
        close_page(page)


@pytest.fixture(scope="module")
def fleet_dashboard(tmp_path_factory) -> Iterator[tuple[str, Fleet]]:
    """The monitor dashboard in fleet mode, pointed at a real Prometheus; everything stopped after."""
    from aiworkbook.cli.app_cmds import launch, serving

    binary = prometheus_binary()
    if binary is None:
        pytest.skip("Debian's prometheus is not at /usr/bin/prometheus and apt-get could not install it")
    f = Fleet(tmp=tmp_path_factory.mktemp("fleet-browser"), binary=binary)
    with contextlib.ExitStack() as stack:
        stack.callback(f.close)
        for node in ("a", "b"):
            f.start_exporter(node)
        f.start_prometheus()
        spec = launch("monitor", max_viewers=2)
        spec = replace(spec, env={**spec.env, "AIWORKBOOK_PROMETHEUS_URL": f.url})
        stack.enter_context(serving(spec))
        yield spec.url, f


@pytest.mark.timeout(300)
def test_the_fleet_mode_shows_both_nodes(browser, fleet_dashboard):
    url, f = fleet_dashboard
    page = open_dashboard(browser, url)
    try:
        headline = page.locator(".aiwb-fleet-monitor .aiwb-value").first
        want = f"2 node(s), 2 GPU(s) through Prometheus at {f.url}"
        deadline_ms = 90_000  # first scrapes (1 s) and the widget's refresh (15 s) on 2 busy cores
        page.locator(".aiwb-fleet-monitor button", has_text=_label("fleet_refresh")).click()
        page.wait_for_function(
            "([el, s]) => el.textContent.includes(s)",
            arg=[headline.element_handle(), want],
            timeout=deadline_ms,
        )
        assert _charts(page, ".aiwb-fleet-monitor").count() == 4
        assert page.locator(".aiwb-gpu-monitor").count() == 0
        assert "Traceback" not in page.content()
        shot(page, "monitor-fleet")
    finally:
        close_page(page)
