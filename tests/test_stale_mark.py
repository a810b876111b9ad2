"""Stale figures are styled, and the headline above them says so (issue 33): while a refused input
shows its error, the sizer's and the KV planner's last figures stay on screen faded and outlined (the
page's CSS on `.aiwb-stale`), and the headline carries a "not updated" mark in the viewer's language;
a valid input takes both away."""

from __future__ import annotations

import pytest
from aiworkbook.widgets.base import LAYOUT_CSS
from aiworkbook.widgets.i18n import label


@pytest.mark.parametrize("name, field", [("ModelSizer", "concurrency"), ("KVPlanner", "concurrency")])
@pytest.mark.parametrize("lang", ["en", "de"])
def test_stale_figures_are_styled_and_the_headline_marked(name, field, lang):
    import aiworkbook.widgets as aw

    w = getattr(aw, name)(background=False, lang=lang)
    try:
        head = w.headline.value
        w.controls[field].value = "-5"
        assert "aiwb-stale" in w._dom_classes
        assert w.headline.value.endswith(head) and label("stale_mark", lang) in w.headline.value
        assert "aiwb-stale-mark" in w.headline.value and "aiwb-headline" in w.headline._dom_classes
        assert "aiwb-chart" in w.chart._dom_classes
        figures = [c for c in _all(w) if "aiwb-figures" in getattr(c, "_dom_classes", ())]
        assert figures  # the words beside the chart fade with it
        w.controls[field].value = "8"
        assert "aiwb-stale" not in w._dom_classes and "aiwb-stale-mark" not in w.headline.value
    finally:
        w.close()


def test_the_page_styles_what_is_stale():
    css = " ".join(LAYOUT_CSS.split())
    assert ".aiwb-stale .aiwb-chart" in css and ".aiwb-stale .aiwb-figures" in css
    assert "opacity" in css and "dashed" in css
    assert ".aiwb-stale .aiwb-headline" in css and ".aiwb-stale-mark" in css


def test_a_narrow_page_puts_the_words_below_the_chart_not_over_its_legend():
    """Seen at 1024 px: the sizer's chart was squeezed to 260 px beside its words, its legend hidden
    under them. The row wraps and the chart keeps its width."""
    from aiworkbook.widgets import ModelSizer

    s = ModelSizer(background=False)
    try:
        rows = [c for c in _all(s) if "aiwb-chart-row" in getattr(c, "_dom_classes", ())]
        assert len(rows) == 1 and rows[0].children[0] is s.chart
    finally:
        s.close()
    css = " ".join(LAYOUT_CSS.split())
    assert (
        ".aiwb-chart-row { flex-wrap: wrap;" in css
        and ".aiwb-chart-row > .aiwb-chart { flex: 0 0 auto; }" in css
    )


def _all(root):
    out, stack = [], [root]
    while stack:
        w = stack.pop()
        out.append(w)
        stack.extend(getattr(w, "children", ()) or ())
    return out
