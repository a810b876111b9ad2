"""Controls built from `Workload.fields()` (widgets/form.py), headless: a typed number out of range
shows the library's error and is not used (the last estimate stays, marked stale), only the controls
that apply to the mode are shown, QLoRA shows the NF4 weights it sizes, and `value` is a dict of the
widget's fields that traitlets can observe and link."""

from __future__ import annotations

import ipywidgets as W
import pytest
import test_widgets
from test_widgets import assert_error

from aiworkbook.sizing import Workload, estimate
from aiworkbook.sizing.workload import MAX_TOKENS, MAX_TP, MODES, applies
from aiworkbook.specs import load_model

sizer = test_widgets.sizer  # the fixture: a ModelSizer on its worker thread, closed afterwards


def settle(s) -> dict:
    assert s.wait(120) and s.error == "", s.error
    return s.result


@pytest.mark.parametrize("typed", ["1e12", "0", "-5", "12abc", ""])
def test_a_typed_number_out_of_range_shows_the_library_error_and_is_not_used(sizer, typed):
    before = settle(sizer)
    value = dict(sizer.value)
    sizer.controls["seq_len"].value = typed
    sizer.wait(120)
    assert_error(sizer, "seq_len", f"1 to {MAX_TOKENS:,}")
    assert sizer.result == before and sizer.value == value  # nothing of it reached the estimate
    assert "aiwb-stale" in sizer._dom_classes and sizer.t("stale") in sizer.status.value
    sizer.controls["seq_len"].value = "1024"  # a good value: a new estimate, no longer stale
    after = settle(sizer)
    assert after["workload"]["seq_len"] == 1024 and "aiwb-stale" not in sizer._dom_classes
    assert sizer.t("stale") not in sizer.status.value


def test_a_bad_number_the_new_mode_hides_does_not_stop_the_switch(sizer):
    """Seen in Chromium: concurrency -5 typed in inference, then LoRA picked: the select read LoRA while
    the form stayed inference's and nothing was computed, the bad box already hidden by the new mode."""
    settle(sizer)
    sizer.controls["concurrency"].value = "-5"
    sizer.wait(120)
    assert_error(sizer, "concurrency")
    sizer.controls["mode"].value = "lora"
    r = settle(sizer)  # no error: LoRA does not use concurrency
    assert r["workload"]["mode"] == "lora" and sizer.controls["lora_targets"].layout is not None
    assert sizer.finetune.box.layout.display == "" and sizer.controls["concurrency"].layout.display == "none"
    assert sizer.controls["concurrency"].value == "-5"  # kept for when it shows again
    sizer.controls["mode"].value = "infer"
    sizer.wait(120)
    assert_error(sizer, "concurrency")  # and refused again there


def test_number_controls_are_unbounded_text_boxes(sizer):
    """No ipywidgets bounded box (it clamps silently) and no number box (the browser drops what it
    cannot parse): every Workload number is a plain text box the library parses."""
    numbers = [c for c in sizer.controls.values() if isinstance(c, W.Text)]
    assert {"batch", "seq_len", "new_tokens", "concurrency", "tp", "dp", "lora_rank"} <= {
        c.field for c in numbers
    }
    every = [w for c in sizer.controls.values() for w in (c, *getattr(c, "children", ()))]
    every += list(sizer.family_fields.values())
    assert not [w for w in every if isinstance(w, W.BoundedIntText | W.BoundedFloatText | W.IntText)]


def test_only_the_controls_that_apply_to_the_mode_are_shown(sizer):
    for mode in MODES:
        sizer.controls["mode"].value = mode
        settle(sizer)
        for f, c in sizer.controls.items():
            if f in ("mode", "lora_targets", "lora_rank") or f in sizer.finetune.controls:
                continue
            assert (c.layout.display != "none") == applies(f, mode), (mode, f)
        shown = {
            f
            for f in ("batch", "concurrency", "zero", "dp", "recipe")
            if sizer.controls[f].layout.display != "none"
        }
        if mode == "infer":
            assert shown == {"concurrency"}
        else:
            assert shown == {"batch", "zero", "dp", "recipe"}


def test_a_field_the_mode_ignores_is_refused_when_set_away_from_its_default(sizer):
    sizer.value = {"mode": "infer", "checkpointing": "full"}  # the library's mode rule, as the CLI's
    assert_error(sizer, "checkpointing", "unless mode is train, lora or qlora (mode is infer)")
    sizer.value = {"mode": "train", "concurrency": 4}
    assert_error(sizer, "concurrency", "infer")


def test_qlora_shows_the_nf4_weights_it_sizes_and_gives_back_the_choice_after(sizer):
    sizer.value = {"model": "qwen2.5-0.5b", "gpu": "L4", "mode": "qlora", "seq_len": 1024}
    r = settle(sizer)
    assert (
        sizer.controls["weights_dtype"].options == ("nf4",) and sizer.controls["weights_dtype"].value == "nf4"
    )
    assert sizer.value["weights_dtype"] == "nf4" and r["workload"]["weights_dtype"] == "nf4"
    w = Workload(mode="qlora", seq_len=1024, weights_dtype="nf4")
    assert r["memory"] == estimate(load_model("qwen2.5-0.5b"), w, gpu="L4").memory.as_dict()
    sizer.controls["mode"].value = "infer"
    assert settle(sizer)["workload"]["weights_dtype"] == "bf16"  # what it was before QLoRA
    assert sizer.controls["weights_dtype"].value == "bf16"


def test_the_recipe_left_to_the_precision_is_an_option_in_words_and_reachable_again(sizer):
    """ipywidgets draws a None value as an empty box, and None was not among the options: the recipe read
    blank in every training mode and, once one was picked, could not be set back (seen in Chromium)."""
    from aiworkbook.widgets.base import localize_choices

    sizer.value = {"model": "qwen2.5-0.5b", "gpu": "L4", "mode": "train", "seq_len": 512}
    r = settle(sizer)
    recipe = sizer.controls["recipe"]
    assert recipe.value == recipe.options[0] and recipe.label  # selected and shown, not blank
    follows = Workload(mode="train", seq_len=512).recipe  # what None resolves to (the precision's recipe)
    assert sizer.value["recipe"] is None and r["workload"]["recipe"] == follows != "adafactor"
    sizer.controls["recipe"].value = "adafactor"
    assert settle(sizer)["workload"]["recipe"] == "adafactor" and sizer.value["recipe"] == "adafactor"
    sizer.controls["recipe"].value = recipe.options[0]  # the viewer picks it again
    assert settle(sizer)["workload"]["recipe"] == follows and sizer.value["recipe"] is None
    sizer.value = {"recipe": "sgd-momentum"}
    sizer.value = {"recipe": None}  # and from Python
    assert settle(sizer)["workload"]["recipe"] == follows and recipe.value == recipe.options[0]
    labels = {}
    for lang in ("en", "nl", "de"):
        w = W.Dropdown(options=list(recipe.options), value=recipe.value)
        localize_choices(w, lang)
        labels[lang] = w._options_labels[0]
    assert labels == {"en": "follows the precision", "nl": "volgt de precisie", "de": "folgt der Präzision"}


def test_value_is_a_dict_of_the_fields_observable_and_linkable(sizer):
    from aiworkbook.widgets import KVPlanner

    seen = []
    sizer.observe(lambda change: seen.append(change["new"]), names="value")
    sizer.controls["concurrency"].value = "12"
    settle(sizer)
    assert seen and seen[-1]["concurrency"] == 12 and isinstance(sizer.value, dict)
    planner = KVPlanner(background=False)
    try:
        assert isinstance(planner.value, dict) and planner.value["tp"] == 1
        link = W.dlink((sizer, "value"), (planner, "value"), lambda v: {"concurrency": v["concurrency"]})
        sizer.controls["concurrency"].value = "16"
        settle(sizer)
        assert planner.value["concurrency"] == 16 and planner.error == ""
        link.unlink()
    finally:
        planner.close()


def test_kv_planner_bounds_are_the_librarys():
    from aiworkbook.widgets import KVPlanner

    k = KVPlanner(model="llama-3-8b", gpu="H100-SXM", background=False)
    try:
        before = dict(k.result)
        k.controls["tp"].value = str(MAX_TP + 1)  # the old widget stopped at 64; the library at MAX_TP
        assert_error(k, "tp", f"1 to {MAX_TP:,}")
        assert k.result == before and "aiwb-stale" in k._dom_classes
        k.controls["tp"].value = "128"  # within the bound: the model's own rule speaks (32 heads)
        assert_error(k, "tp", "num_heads")
        k.controls["tp"].value = "2"
        assert k.error == "" and k.value["tp"] == 2 and "aiwb-stale" not in k._dom_classes
        k.controls["context"].value = "1e12"
        assert_error(k, "context")
        k.controls["gpu_memory_utilization"].value = "0"
        k.controls["context"].value = "4096"
        assert_error(k, "gpu_memory_utilization")
    finally:
        k.close()


def test_the_fields_are_described_once_and_match_the_library():
    from aiworkbook.widgets.form import schema

    assert schema() is schema()  # read once per kernel (a sizer asked ~180 times while it built)
    assert schema() == {d["name"]: d for d in Workload.fields()}
