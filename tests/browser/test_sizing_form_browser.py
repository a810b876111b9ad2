"""The sizing dashboard's controls in Chromium (issue 25 item 2): a number typed out of range shows the
library's error in `.aiwb-error` and the headline keeps the last valid estimate, marked stale; only the
controls that apply to the mode are shown; QLoRA's weights read NF4."""

from __future__ import annotations

import re

import pytest
from conftest import close_page, open_dashboard, shot

pytestmark = pytest.mark.browser

ANSWER_TIMEOUT_MS = 60_000


def _label(key: str) -> str:
    from aiworkbook.widgets.i18n import label

    return label(key, "en")


def _box(page, key: str):
    """The control box labelled with `key`'s label inside the sizer."""
    return page.locator(".aiwb-model-sizer .widget-inline-hbox").filter(
        has=page.locator("label", has_text=re.compile(rf"^{re.escape(_label(key))}$"))
    )


def _type(page, key: str, text: str) -> None:
    field = _box(page, key).locator("input").first
    field.fill(text)
    field.press("Enter")


def test_sizing_typed_number_out_of_range_is_refused_and_mode_controls(browser, servers):
    from aiworkbook.sizing.workload import MAX_TOKENS

    spec, _ = servers.get("sizing")
    page = open_dashboard(browser, spec.url)
    try:
        sizer = page.locator(".aiwb-model-sizer")
        headline = sizer.locator(".aiwb-value").first
        page.wait_for_function(
            "el => el.textContent.includes('8 × 4,608 tokens')",
            arg=headline.element_handle(),
            timeout=ANSWER_TIMEOUT_MS,
        )
        shown = headline.text_content()
        error = sizer.locator(".aiwb-error").first
        _type(page, "seq_len", "1e12")
        error.wait_for(state="visible", timeout=ANSWER_TIMEOUT_MS)
        assert error.text_content().split(" ", 1)[1].startswith(_label("seq_len") + " = ")  # as on screen
        assert f"1 to {MAX_TOKENS:,}" in error.text_content()
        assert "1e12" in error.text_content()  # what was typed, not a clamped or shortened number
        assert _box(page, "seq_len").locator("input").first.input_value() == "1e12"
        # the last valid estimate, not one of 1e12 or 112, marked as not updated
        assert headline.text_content() == _label("stale_mark") + shown
        page.wait_for_selector(".aiwb-model-sizer.aiwb-stale", timeout=ANSWER_TIMEOUT_MS)
        assert _label("stale") in sizer.locator(".aiwb-status").first.text_content()
        shot(page, "sizing-typed-1e12")
        _type(page, "seq_len", "-5")
        page.wait_for_function(
            "el => el.textContent.includes(\"'-5'\")", arg=error.element_handle(), timeout=ANSWER_TIMEOUT_MS
        )
        _type(page, "seq_len", "2048")
        error.wait_for(state="hidden", timeout=ANSWER_TIMEOUT_MS)
        page.wait_for_function(
            "el => el.textContent.includes('8 × 2,560 tokens')",
            arg=headline.element_handle(),
            timeout=ANSWER_TIMEOUT_MS,
        )
        # inference: concurrency, no batch, ZeRO, data parallel or recipe
        assert _box(page, "concurrency").is_visible() and not _box(page, "batch").is_visible()
        for key in ("zero", "dp", "recipe"):
            assert not _box(page, key).is_visible(), key
        sizer.get_by_label(_label("mode"), exact=True).select_option(
            "full training"
        )  # the label (value "train")
        _box(page, "batch").wait_for(state="visible", timeout=ANSWER_TIMEOUT_MS)
        assert not _box(page, "concurrency").is_visible() and _box(page, "zero").is_visible()
        sizer.get_by_label(_label("mode"), exact=True).select_option("QLoRA")
        weights = sizer.get_by_label(_label("weights_dtype"), exact=True)
        page.wait_for_function(
            "el => el.value === 'nf4' && el.options.length === 1",
            arg=weights.element_handle(),
            timeout=ANSWER_TIMEOUT_MS,
        )
        assert error.inner_text().strip() == ""
        shot(page, "sizing-qlora-nf4")
    finally:
        close_page(page)
