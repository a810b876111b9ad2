"""The sizing dashboard in headless Chromium under Voilà: the Fine-tuning section appears for a
training mode, a switch clicked in the page reaches the library, and the host memory line shows the
library's figure."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from chromium import CHROMIUM, CHROMIUM_ARGS

pytestmark = pytest.mark.browser
TIMEOUT_MS = 180_000


def drive() -> dict[str, Any]:
    """Serve the sizing dashboard, pick LoRA, switch activation offload on; what the page shows."""
    from aiworkbook.widgets.i18n import label
    from playwright.sync_api import sync_playwright

    from aiworkbook.cli.app_cmds import launch, serving

    spec = launch("sizing")
    with serving(spec), sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 1800})
            page.goto(spec.url, wait_until="commit", timeout=TIMEOUT_MS)
            page.wait_for_selector(".aiwb-model-sizer.aiwb-ready", timeout=TIMEOUT_MS)
            sizer = page.locator(".aiwb-model-sizer")
            seen: dict[str, Any] = {"infer_visible": sizer.locator(".aiwb-finetune").is_visible()}
            sizer.get_by_label(label("mode"), exact=True).select_option("lora")
            page.wait_for_selector(".aiwb-finetune", state="visible", timeout=TIMEOUT_MS)
            seen["targets"] = sizer.get_by_label(label("lora_targets"), exact=True).is_visible()
            sizer.locator(".aiwb-finetune label", has_text=label("activation_offload")).click()
            page.wait_for_selector(".aiwb-model-sizer .aiwb-host", state="visible", timeout=TIMEOUT_MS)
            seen["host"] = sizer.locator(".aiwb-host").inner_text()
            seen["error"] = sizer.locator(".aiwb-error").first.inner_text()
            page.goto("about:blank")  # Voilà shuts the kernel down
            return seen
        finally:
            browser.close()


def test_fine_tuning_section_in_the_sizing_dashboard():
    if shutil.which(CHROMIUM) is None:
        pytest.skip(
            "needs Debian chromium at /usr/bin/chromium (apt-get install -y chromium; .ci/run installs it)"
        )
    pytest.importorskip("playwright.sync_api", reason="needs playwright (the test extra)")
    pytest.importorskip("voila", reason="needs voila")
    from aiworkbook.sizing import Workload, estimate
    from aiworkbook.specs import load_model
    from aiworkbook.units import fmt_bytes

    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API wants a thread without an asyncio loop
        seen = pool.submit(drive).result(timeout=600)
    w = Workload(mode="lora", seq_len=4096, new_tokens=512, concurrency=8, activation_offload=True)
    host = estimate(load_model("llama-3-8b"), w, gpu="H100-SXM").memory.host_bytes
    assert seen["infer_visible"] is False and seen["targets"] is True
    assert host > 0 and fmt_bytes(host, "GiB") in seen["host"], seen["host"]
    assert seen["error"].strip() == ""
