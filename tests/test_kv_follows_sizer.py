"""The KV planner follows the sizer's engine, context and concurrency, not only its model and GPU, so
the sizing page shows one workload; where it cannot (the sizer sizes training) it says so, and a line
above it names what it follows and what stays its own (widgets/kv_planner.py `follow`)."""

from __future__ import annotations

import pytest
from english_left import english_left

from aiworkbook.sizing import Workload, capacity
from aiworkbook.specs import get_gpu, load_model


@pytest.fixture
def pair():
    from aiworkbook.widgets import KVPlanner, ModelSizer

    sizer, planner = ModelSizer(background=False), KVPlanner(background=False)
    yield sizer, planner
    planner.close()
    sizer.close()


@pytest.mark.timeout(120)
def test_the_planner_plans_the_sizers_serving_workload(pair):
    sizer, planner = pair
    link = planner.follow(sizer)
    sizer.value = {"model": "qwen3-8b", "gpu": "L40S", "engine": "vllm", "concurrency": 4, "seq_len": 2048}
    v = planner.value
    assert (v["model"], v["gpu"], v["engine"], v["concurrency"], v["context"]) == (
        "qwen3-8b", "L40S", "vllm", 4, 2048 + sizer.value["new_tokens"],
    )  # fmt: skip
    w = Workload(
        mode="infer", seq_len=2048, new_tokens=sizer.value["new_tokens"], concurrency=4, engine="vllm"
    )
    spec, gpu = load_model("qwen3-8b"), get_gpu("L40S")
    assert planner.result["max_concurrency"] == capacity.max_concurrency(spec, w, gpu)
    assert planner.result["fits"] == sizer.result["fits"]["fits"]  # one verdict on one page
    said = planner.follows.value
    assert (
        "Follows the sizer above: Model, GPU, Engine, KV cache, Context, Concurrency, Tensor parallel."
        in said
    )
    assert "Its own" not in said
    link.unlink()
    assert planner.follows.value == ""  # cut: it says nothing about following
    sizer.value = {"concurrency": 2}
    assert planner.value["concurrency"] == 4


@pytest.mark.timeout(120)
def test_a_training_sizer_gives_no_kv_shape_and_the_planner_says_so(pair):
    sizer, planner = pair
    planner.follow(sizer)
    before = {k: planner.value[k] for k in ("engine", "context", "concurrency")}
    sizer.value = {"mode": "train", "gpu": "H200-SXM"}
    assert planner.value["gpu"] == "H200-SXM"
    assert {k: planner.value[k] for k in before} == before
    said = planner.follows.value
    assert "Follows the sizer above: Model, GPU." in said and "Its own: Engine, KV cache, Context" in said
    assert "no KV cache to plan" in said


@pytest.mark.timeout(120)
@pytest.mark.parametrize("lang", ["nl", "de"])
def test_the_line_is_in_the_pages_language(lang):
    import re

    from aiworkbook.widgets import KVPlanner, ModelSizer

    sizer, planner = ModelSizer(background=False, lang=lang), KVPlanner(background=False, lang=lang)
    try:
        planner.follow(sizer)
        sizer.value = {"mode": "train"}
        text = re.sub(r"<[^>]+>", " ", planner.follows.value)
        assert text.strip() and not english_left(text, lang), text
    finally:
        planner.close()
        sizer.close()
