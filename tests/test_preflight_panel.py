"""The pre-flight panel of the sizing dashboard (issue 26, item 1): headless, through the fake NVML; it
shows what aiworkbook.preflight computes, says "no NVIDIA GPU found" on a machine without one, and bad
input lands in its error area."""

from __future__ import annotations

import pytest
from fake_nvml import DATACENTER, FakeNVML

from aiworkbook.preflight.vllm import run
from aiworkbook.sizing.vllm import VllmSettings

GiB = 2**30
SHARED = {**DATACENTER, "mem_used": 30 * GiB, "processes": [(4242, 20 * GiB), (4250, None)]}


def _panel(**kw):
    from aiworkbook.widgets import PreflightPanel

    p = PreflightPanel(**kw)
    assert p.wait(30)
    return p


def test_without_a_gpu_it_says_so_cleanly():
    with FakeNVML([DATACENTER], driver=False):
        p = _panel()
    assert "no NVIDIA GPU found" in p.headline.value and "driver not loaded" in p.details.value
    assert p.error == "" and p.result["gpu_found"] is False
    assert {"aiwb-preflight", "aiwb-ready"} <= set(p._dom_classes)


def test_it_shows_the_librarys_answer_who_holds_what_and_the_risk():
    with FakeNVML([SHARED]):
        p = _panel(auto=False)
        p.max_model_len.value = 8192
        p.read()
        assert p.wait(30)
        want = run("llama-3-8b", VllmSettings(max_model_len=8192)).to_dict()
    assert p.result["max_utilization"] == want["max_utilization"]
    assert p.result["at_max_utilization"]["kv_cache_tokens"] == want["at_max_utilization"]["kv_cache_tokens"]
    assert "Will not start at 0.9" in p.headline.value
    assert f"{want['max_utilization']:.2f}" in p.details.value
    assert "4242" in p.details.value and "n/a (NVML cannot read it)" in p.details.value
    assert "aiwb-preflight-risk" in p.details.value and "time-sliced" in p.details.value
    with FakeNVML([SHARED]):
        p.utilization.value = want["max_utilization"]
        p.read()
        assert p.wait(30)
    assert "Starts at" in p.headline.value and p.result["starts"]


@pytest.mark.parametrize("model", ["no-such-model", ""])
def test_a_bad_model_lands_in_the_error_area(model):
    with FakeNVML([SHARED]):
        p = _panel(auto=False)
        p.model.value = model
        p.read()
        assert p.wait(30)
    assert p.error and "model" in p.error.lower() and "Traceback" not in p.error_area.value
    assert p.result == {}


def test_dutch_words():
    with FakeNVML([DATACENTER], driver=False):
        p = _panel(lang="nl")
    assert "geen NVIDIA-GPU gevonden" in p.headline.value
    # NVML's reason is a message (its id from the return code): said in Dutch, not looked up by English
    assert "NVIDIA-driver niet geladen" in p.details.value and "driver not loaded" not in p.details.value
    assert p.result["reasons"][0] == "no NVIDIA GPU found (NVIDIA driver not loaded)"  # the library's str


def test_german_figures_and_words():
    with FakeNVML([SHARED]):
        p = _panel(auto=False, lang="de")
        p.max_model_len.value = 8192
        p.read()
        assert p.wait(30)
    assert "Startet nicht bei 0,9" in p.headline.value
    assert f"{p.result['max_utilization']:.2f}".replace(".", ",") in p.details.value
    assert " frei)" in p.details.value and " free)" not in p.details.value
