"""What the sizer, the KV planner and the report dashboard say: a set-up that does not fit priced on
what it needs, one sentence on what was measured where, the budget line and rule of thumb explained,
the planner following the sizer (cut-able), refusing contexts past the positions and never suggesting
flags that contradict its own controls; the locker's empty-lock warning, sizing, labels and words."""

from __future__ import annotations

import base64
import re

import pytest
from profile_fakes import result
from test_widgets import assert_error

from aiworkbook.sizing import Workload, capacity
from aiworkbook.sizing.needs import needs
from aiworkbook.specs import load_model


def _widget(name: str, **kw):
    """A widget from aiworkbook.widgets, closed after the test."""
    import aiworkbook.widgets as aw

    w = getattr(aw, name)(**kw)
    yield w
    w.close()


@pytest.fixture
def sizer():
    yield from _widget("ModelSizer", background=False)


def test_sizer_headline_prices_what_a_setup_that_does_not_fit_needs(sizer):
    sizer.value = {"model": "llama-3-70b", "gpu": "RTX-4090"}
    assert sizer.error == ""
    w = Workload(mode="infer", concurrency=8, seq_len=4096, new_tokens=512)
    n = needs(load_model("llama-3-70b"), w, "RTX-4090")
    head = sizer.headline.value
    assert "does NOT fit" in head
    assert f"needs {n.here.gpus} × RTX-4090" in head
    assert f"or {n.cheapest.gpus} × {n.cheapest.gpu} at the lowest cost" in head
    assert (
        f"${n.priced.usd_per_mtok:,.2f} per million output tokens on {n.priced.gpus} × {n.priced.gpu}" in head
    )
    assert "decode_usd_per_mtok" not in sizer.result["cost"]  # 1 × RTX-4090 is not priced at all
    assert sizer.result["answer"]["fits"] is False
    assert sizer.result["answer"]["runs_on"] == {"gpu": n.priced.gpu, "gpus": n.priced.gpus, "mig": None}
    # no price for a set-up that cannot run; only where the headline's price (its needs') comes from
    assert "per million" not in sizer.cost.value
    assert sizer.result["answer"]["price_words"] in sizer.cost.value


def test_sizer_opens_with_where_and_explains_the_budget_line_and_rule(sizer):
    assert sizer.children[0] is sizer.where and "aiwb-where" in sizer.where._dom_classes
    assert "estimate" in sizer.where.value
    # fits one MIG 3g.40gb instance of the H100 (its deployment's): priced there, said so
    assert "$1.09 per million output tokens on 1 × H100-SXM MIG 3g.40gb" in sizer.headline.value
    explain = re.findall(r'<div class="aiwb-explain"[^>]*>(.*?)</div>', sizer.rule.value)
    assert len(explain) == 2
    assert "Dashed line" in explain[0] and "90%" in explain[0] and "H100-SXM" in explain[0]
    ratio = sizer.result["rules_of_thumb"]["ratio_to_itemised"]
    assert f"{ratio:.1f}×" in explain[1] and "Trust the itemised bar" in explain[1]


def test_sizer_prices_training_per_token_trained(sizer):
    sizer.value = {"model": "llama-3.2-1b", "mode": "train", "batch": 1, "seq_len": 1024}
    assert sizer.error == ""
    assert "per million tokens trained" in sizer.headline.value
    assert "output tokens" not in sizer.headline.value + sizer.cost.value


@pytest.fixture
def planner():
    yield from _widget("KVPlanner", background=False)


def test_planner_refuses_a_context_beyond_the_models_positions(planner):
    before = dict(planner.result)
    planner.value = {"context": 65536}  # Llama-3-8B has 8,192 positions
    assert_error(planner, "context", "65536", "8,192")
    assert planner.result == before  # the refused value is not used
    assert "aiwb-error" in planner.error_area._dom_classes and planner.error_area.layout.display != "none"
    planner.value = {"context": 8192}
    assert planner.error == ""


def test_planner_suggests_tensor_parallel_for_a_negative_budget_and_never_contradicts_its_box(planner):
    planner.value = {"model": "llama-3-70b", "gpu": "H100-SXM", "tp": 1}
    assert planner.error == ""
    assert planner.result["kv_budget_bytes"] < 0
    spec = load_model("llama-3-70b")
    w = Workload(mode="infer", seq_len=8192, context=8192, concurrency=32)
    need = capacity.gpus_needed(spec, w, "H100-SXM")
    assert planner.result["tp_needed"] == need
    assert f"raise Tensor parallel to {need}" in planner.figures.value
    assert "--tensor-parallel-size" not in planner.result["vllm_args"]  # nothing that contradicts tp=1
    planner.value = {"tp": need}
    assert planner.error == ""
    assert f"--tensor-parallel-size={need}" in planner.result["vllm_args"]
    assert "raise Tensor parallel" not in planner.figures.value


def test_planner_follows_the_sizer_until_the_link_is_cut(sizer, planner):
    link = planner.follow(sizer)
    sizer.value = {"model": "qwen3-8b", "gpu": "L40S"}
    assert (planner.value["model"], planner.value["gpu"]) == ("qwen3-8b", "L40S")
    assert planner.result["max_concurrency"] >= 0 and planner.error == ""
    link.unlink()
    sizer.value = {"model": "llama-3-8b", "gpu": "H100-SXM"}
    assert (planner.value["model"], planner.value["gpu"]) == ("qwen3-8b", "L40S")


@pytest.fixture
def locker():
    yield from _widget("ProfileLocker", detect=False)


def test_locker_warns_before_locking_an_empty_profile(locker):
    assert locker.lock() is None and locker.profile is None
    assert "Nothing to lock yet" in locker.headline.value and "aiwb-warning" in locker.headline.value
    prof = locker.lock()  # a second press locks it anyway
    assert prof is not None and not prof.proofs and not prof.workloads


def test_locker_adds_the_current_sizing_and_labels_each_download(locker, sizer):
    locker.add_button.click()
    assert_error(locker, "sizing")  # nothing linked yet
    link = locker.follow(sizer)
    sizer.value = {"model": "qwen3-8b", "gpu": "L40S"}
    locker.add_button.click()
    assert locker.error == "" and len(locker.workloads) == 1
    assert "qwen3-8b" in locker.headline.value
    prof = locker.lock()  # no warning: a workload is held
    assert [(w.model, w.gpu) for w in prof.workloads] == [("qwen3-8b", "L40S")]
    assert "Download the locked profile (JSON)" in locker.download.value
    locker.add_result(result("kv", 9.5e8))
    locker.check()
    assert "Download the check result (JSON)" in locker.download.value
    assert "exit" not in locker.headline.value and "Check" in locker.headline.value
    locker.report()
    assert "Download the report (HTML)" in locker.download.value
    page = base64.b64decode(locker.download.value.split("base64,")[1].split('"')[0]).decode()
    assert "aiwb-where" in page
    link.unlink()


def test_an_error_ends_the_working_sign(planner):
    from aiworkbook.errors import SpecError

    planner.status.value = "Working…"  # as while a background computation runs
    planner.show_error(SpecError("context", 0, "an integer >= 1"))
    # the sign is gone: blank, or (a result was on screen) the line saying it was not updated
    assert (
        planner.status.value in ("", f"<i>{planner.t('stale')}</i>") and planner.t("context") in planner.error
    )


def test_planner_following_a_sizer_on_the_same_model_and_gpu_plans_once(sizer, monkeypatch):
    """follow() sets the sizer's model, GPU and serving shape again; when they are the planner's own, no
    second plan (a dashboard's start-up computed it twice); a real change still plans once more."""
    import aiworkbook.widgets.kv_planner as kv

    calls = []
    real = kv.plan

    def counting(*a, **kw):
        calls.append(a[0]["model"])
        return real(*a, **kw)

    monkeypatch.setattr(kv, "plan", counting)
    # llama-3-8b on an H100-SXM with hf, 8 x (4,096 + 512), as the sizer
    planner = kv.KVPlanner(background=False, engine="hf", context=4608, concurrency=8)
    assert (sizer.value["model"], sizer.value["gpu"]) == (planner.value["model"], planner.value["gpu"])
    link = planner.follow(sizer)
    assert calls == ["llama-3-8b"] and planner.error == ""
    assert set(planner.value) == set(kv.FIELDS)  # the whole value, not the link's two fields
    sizer.value = {"model": "qwen3-8b"}
    assert calls == ["llama-3-8b", "qwen3-8b"] and planner.value["model"] == "qwen3-8b"
    link.unlink()
    planner.close()
