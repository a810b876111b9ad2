"""Browser fixtures: Debian's Chromium driven by Playwright, one Voilà server per dashboard for the module (a session-wide Playwright would leave its event loop running on the main thread for every later test).

Playwright's own browser download does not work here: CI installs `chromium` (apt) first (.ci/run).
Screenshots go to tests/browser/artifacts/ (gitignored), kept as test artifacts.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from chromium import CHROMIUM, CHROMIUM_ARGS

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
RENDER_TIMEOUT_MS = 120_000  # a cold kernel on 2 shared cores: 8-15 s alone, much more under load


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        pytest.fail(
            f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium; .ci/run does)"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


class Servers:
    """Voilà servers started on first use, one per dashboard, stopped at the end of the session."""

    def __init__(self) -> None:
        self._stack = contextlib.ExitStack()
        self.running: dict[str, tuple[Any, Any]] = {}

    def get(self, name: str) -> tuple[Any, Any]:
        """(launch spec, Voilà process) of dashboard `name`."""
        if name not in self.running:
            from aiworkbook.cli.app_cmds import launch, serving

            spec = launch(name, max_viewers=12)  # ten viewers at once, and earlier pages' kernels ending
            if os.environ.get("AIWORKBOOK_TEST_TRACEBACKS") == "1":  # debugging a failing page
                spec = replace(
                    spec, argv=[a.replace("show_tracebacks=False", "show_tracebacks=True") for a in spec.argv]
                )
            proc = self._stack.enter_context(serving(spec))
            self.running[name] = (spec, proc)
        return self.running[name]

    def close(self) -> None:
        self._stack.close()


@pytest.fixture(scope="module")
def servers() -> Iterator[Servers]:
    s = Servers()
    yield s
    s.close()


def open_dashboard(browser: Any, url: str, *, wait: bool = True) -> Any:
    """A new page on `url`; with wait, returned once Voilà's spinner is gone and a widget is ready."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(url, wait_until="commit", timeout=RENDER_TIMEOUT_MS)
    if wait:
        wait_ready(page)
    return page


def close_page(page: Any) -> None:
    """Leave the page as a viewer does (navigating away fires Voilà's unload beacon, which shuts its
    kernel down), then close it. Playwright's bare close() fires no unload events."""
    try:
        page.goto("about:blank", timeout=30_000)
    finally:
        page.close()


def wait_ready(page: Any) -> None:
    page.wait_for_selector("#loading", state="hidden", timeout=RENDER_TIMEOUT_MS)
    page.wait_for_selector(".aiwb-ready", timeout=RENDER_TIMEOUT_MS)


def shot(page: Any, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    safe = re.sub(r"[^\w.-]", "_", name)
    path = ARTIFACTS / f"{safe}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
