"""ModelSizer builds its fine-tuning section and its family/config folds only when they are first shown
or touched: an inference page starts with fewer widget models (the sizing page's start-up,
benchmarks/bench_dashboard_startup.py), while `value` still holds every field and setting one before
its section exists works and is checked as its control would check it."""

from __future__ import annotations

import ipywidgets as W
import pytest
from aiworkbook.widgets import ModelSizer
from aiworkbook.widgets.finetune import all_fields
from test_widgets import assert_error

from aiworkbook.sizing import Workload


def _models(w: W.Widget) -> set[int]:
    """The widget models under `w` (children, layouts, styles), as the page receives them."""
    seen: dict[int, W.Widget] = {}
    todo = [w]
    while todo:
        x = todo.pop()
        if id(x) in seen:
            continue
        seen[id(x)] = x
        for k in x.keys:
            v = getattr(x, k, None)
            todo.extend(y for y in (v if isinstance(v, list | tuple) else [v]) if isinstance(y, W.Widget))
    return set(seen)


@pytest.fixture
def sizer():
    s = ModelSizer(background=False)
    yield s
    s.close()


def test_an_inference_page_starts_without_the_hidden_sections(sizer):
    assert not sizer.finetune.built and sizer._sections == {}
    start = len(_models(sizer))
    assert sizer.finetune.box.children == ()
    sizer.controls  # noqa: B018 - touching the controls from Python builds the section
    sizer.config_text  # noqa: B018
    sizer.family_fields  # noqa: B018
    assert sizer.finetune.built and set(sizer._sections) == {"family", "config"}
    built = len(_models(sizer))
    assert built - start >= 80, (start, built)  # 58 fine-tuning + 36 fold models, less the placeholders
    assert sizer.error == ""


def test_value_holds_every_unbuilt_field_at_its_default_and_the_estimate_is_unchanged(sizer):
    defaults = Workload().to_dict()
    v = sizer.value
    assert not sizer.finetune.built
    assert {f: v[f] for f in all_fields()} == {f: defaults[f] for f in all_fields()}
    before = sizer.result
    sizer.controls  # noqa: B018 - built now, nothing else changed
    sizer.value = {"seq_len": 4096}  # recompute with the built controls
    assert sizer.value == v and sizer.result["memory"] == before["memory"]


def test_a_training_mode_builds_the_section_with_values_set_before(sizer):
    sizer.value = {"mode": "lora", "lora_rank": 32, "lora_targets": ["v_proj"], "dropout": 0.1}
    assert sizer.error == "" and sizer.finetune.built
    assert sizer.finetune.box.layout.display == "" and sizer.finetune.lora.layout.display == ""
    c = sizer.controls
    assert c["lora_rank"].value == "32" and c["lora_targets"].value == ("v_proj",)
    assert c["dropout"].value == 0.1 and c["dropout"].toggle.value
    w = sizer.result["workload"]
    assert (w["lora_rank"], w["lora_targets"], w["dropout"]) == (32, ["v_proj"], 0.1)


@pytest.mark.parametrize(
    "change,field",
    [
        ({"mode": "lora", "lora_rank": 0}, "lora_rank"),
        ({"mode": "lora", "lora_rank": "many"}, "lora_rank"),
        ({"mode": "train", "compile": "yes"}, "compile"),
        ({"mode": "lora", "lora_targets": ["no_proj"]}, "lora_targets"),
        ({"lora_rank": 64}, "lora_rank"),  # hidden in inference: refused, as before
    ],
)
def test_a_bad_value_for_an_unbuilt_field_is_refused_naming_it(sizer, change, field):
    before = sizer.result
    sizer.value = change
    assert_error(sizer, field)
    assert sizer.result == before  # nothing computed from it


def test_a_training_mode_in_the_constructor_builds_the_section_at_once():
    s = ModelSizer(background=False, mode="train", compile=True)
    try:
        assert s.finetune.built and s.controls["compile"].value is True and s.error == ""
    finally:
        s.close()


def test_opening_a_fold_builds_it_in_the_widgets_language():
    s = ModelSizer(lang="de", background=False)
    try:
        folds = next(c for c in s.children if isinstance(c, W.Accordion))
        assert all(f.children == () for f in folds.children)
        folds.selected_index = 0  # the viewer opens "family"
        assert "family" in s._sections and len(folds.children[0].children) == 8
        assert s.family.description and s.family._options_labels  # labelled, choices shown
        folds.selected_index = 1
        assert list(folds.children[1].children) == [s.config_text, s.upload]
    finally:
        s.close()


def test_the_family_source_builds_its_fields_and_sizes_from_them(sizer):
    sizer.source.value = "family"
    assert "family" in sizer._sections and sizer.error == ""
    assert sizer.value["model"] == "llama-custom"
    sizer.family_fields["num_hidden_layers"].value = "16"
    assert sizer.error == "" and sizer.result["model"] == "llama-custom"
