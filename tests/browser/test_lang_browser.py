"""Each dashboard in Dutch and German (`?lang=`) in Chromium: no English word a viewer could read is left,
in the page's text or in its charts (SVG). The failure message lists each leftover line with its English
words in brackets, so whoever adds a string sees what to put in the catalogs (widgets/i18n.py,
aiworkbook/patterns/text_*.py). Rerun: `.venv/bin/python -m pytest -p no:cacheprovider
tests/browser/test_lang_browser.py`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import close_page, open_dashboard, shot

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from english_left import english_left  # noqa: E402

pytestmark = pytest.mark.browser

SETTLE_MS = 60_000  # the sizer's answer and the charts, computed after the page is ready
#: what each dashboard shows once it has answered (waited for before the text is read): a drawn chart's
#: words, or the proof plan
ANSWERED = {
    "sizing": "() => document.querySelectorAll('.aiwb-model-sizer svg.marks text').length > 3",
    "monitor": "() => document.querySelectorAll('.aiwb-gpu-monitor svg.marks text').length > 3",
    "report": "() => document.querySelector('.aiwb-proof-runner .aiwb-value')?.textContent.trim().length > 0",
}
TEXT_JS = """() => [document.body.innerText,
  ...Array.from(document.querySelectorAll('svg text')).map(t => t.textContent)].join('\\n')"""


@pytest.mark.parametrize("lang", ["nl", "de"])
@pytest.mark.parametrize("name", ["sizing", "monitor", "report"])
def test_no_english_left(browser, servers, name, lang):
    spec, _ = servers.get(name)
    sep = "&" if "?" in spec.url else "?"
    page = open_dashboard(browser, f"{spec.url}{sep}lang={lang}")
    try:
        page.wait_for_function(ANSWERED[name], timeout=SETTLE_MS)
        page.wait_for_function(
            "() => Array.from(document.querySelectorAll('.aiwb-status')).every(e => !e.textContent.trim())",
            timeout=SETTLE_MS,
        )
        switch = page.locator(".aiwb-lang select")
        assert switch.input_value() == lang  # the switch shows the page's language
        text = page.evaluate(TEXT_JS)
        shot(page, f"lang-{name}-{lang}")
        if name == "monitor":  # the recorded trace's charts and titles too
            from aiworkbook.widgets.i18n import label

            page.locator(".aiwb-gpu-monitor button", has_text=label("recorded", lang)).click()
            page.wait_for_function(
                "() => document.querySelectorAll('.aiwb-gpu-monitor svg.marks').length >= 4 && Array.from("
                "document.querySelectorAll('.aiwb-gpu-monitor svg.marks')).every(s => s.querySelectorAll('text').length > 3)",
                timeout=SETTLE_MS,
            )
            text += "\n" + page.evaluate(TEXT_JS)
            shot(page, f"lang-{name}-{lang}-recorded")
        left = english_left(text, lang)
        assert not left, f"English left on the {lang} {name} dashboard:\n" + "\n".join(left)
    finally:
        close_page(page)


def test_the_switch_reloads_the_page_in_the_chosen_language(browser, servers):
    from aiworkbook.widgets.i18n import label

    spec, _ = servers.get("sizing")
    page = open_dashboard(browser, spec.url)
    try:
        assert page.locator(".aiwb-lang select").input_value() == "en"
        page.locator(".aiwb-lang select").select_option("de")
        page.wait_for_url("**lang=de**", timeout=SETTLE_MS)
        page.wait_for_selector(".aiwb-ready", timeout=SETTLE_MS)
        headline = page.locator(".aiwb-model-sizer .aiwb-value").first
        page.wait_for_function(
            "([el, s]) => el.textContent.includes(s)",
            arg=[headline.element_handle(), label("headroom", "de")],
            timeout=SETTLE_MS,
        )
        assert "8 × 4.608 Tokens" in headline.text_content()  # Babel's German grouping
        assert label("tp", "de") in page.locator(".aiwb-model-sizer").inner_text()
    finally:
        close_page(page)
