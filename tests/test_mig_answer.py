"""A workload one MIG instance holds is deployed on the instance, so the answer sizes and prices it there
(issue 33: a tiny-llama report priced a whole H100 while its deployment asked for `nvidia.com/mig-1g.10gb`).
The instance gets its compute slices' share of the GPU's peaks, SMs, power and price and its memory's share
of the bandwidth (NVIDIA's MIG user guide: `3g.40gb` on an H100 is 3 of 7 compute slices, 4 of 8 memory
slices); every face names the instance beside the price."""

from __future__ import annotations

import json
import re

import pytest
from pydantic import ValidationError

from aiworkbook.cli import main
from aiworkbook.i18n_format import money
from aiworkbook.profile import lock
from aiworkbook.profile.report import render_markdown
from aiworkbook.sizing import Workload
from aiworkbook.sizing.answer import answer
from aiworkbook.sizing.assumptions import Assumptions
from aiworkbook.sizing.needs import option
from aiworkbook.sizing.placement import mig_share, mig_slice
from aiworkbook.specs import GPUSpec, load_gpu, load_model

#: 32 × 4,608 tokens of llama-3-8b: vLLM's arithmetic holds it in one 3g.40gb instance of an H100
SERVE = {"mode": "infer", "concurrency": 32, "seq_len": 4096, "new_tokens": 512}


def test_an_instance_gets_its_slices_share_of_compute_price_and_bandwidth():
    h100 = load_gpu("H100-SXM")
    assert h100.mig_compute_slices == 7
    compute, memory = mig_share(h100, "3g.40gb")
    assert compute == pytest.approx(3 / 7)
    assert memory == pytest.approx(4 / 8, abs=0.01)  # 39.38 GiB of the 79.65 GiB the driver reports
    s = mig_slice(h100, "3g.40gb")
    assert s.name == "H100-SXM MIG 3g.40gb" and s.usable_memory_bytes == int(39.38 * 2**30)
    assert s.peak_flops("bf16") == pytest.approx(h100.peak_flops("bf16") * 3 / 7)
    assert s.memory_bandwidth_bps == pytest.approx(h100.memory_bandwidth_bps * memory)
    assert s.price_per_hour_usd == pytest.approx(h100.price_per_hour_usd * 3 / 7)
    assert s.tdp_watts == pytest.approx(700 * 3 / 7)
    assert s.cuda_memory_bytes is None  # cudaMemGetInfo in an instance reports the instance's memory
    assert s.scale_up_bps == 0 and s.mig_profiles == ()


def test_the_catalogues_profiles_name_their_compute_slices_and_a_wrong_one_is_refused():
    d = load_gpu("A100-40GB").model_dump()
    assert [p.compute_slices for p in load_gpu("A100-40GB").mig_profiles] == [1, 1, 2, 3, 4, 7]
    d["mig_compute_slices"] = 0  # not declared: the whole-GPU profile (7g.40gb) names the total
    assert GPUSpec.model_validate(d).mig_compute_slices == 7
    d["mig_compute_slices"] = 4
    with pytest.raises(ValidationError, match="fewer than a profile's 7 compute slices"):
        GPUSpec.model_validate(d)
    d["mig_compute_slices"], d["mig_profiles"][0]["name"] = 7, "one-tenth"
    with pytest.raises(ValidationError, match="mig_profiles.0.name"):
        GPUSpec.model_validate(d)


def test_compute_bound_training_costs_the_same_per_token_on_an_instance_and_its_hour_the_share():
    spec, w = load_model("tiny-llama"), Workload(mode="train", batch=1, seq_len=2048)
    whole, inst = option(spec, w, "H100-SXM", 1), option(spec, w, "H100-SXM", 1, mig="1g.10gb")
    assert inst.mig == "1g.10gb" and inst.share == pytest.approx(1 / 7)
    assert inst.usd_per_hour == pytest.approx(whole.usd_per_hour / 7)
    # a seventh of the compute at a seventh of the price: the same $ per token trained
    assert inst.usd_per_mtok_trained == pytest.approx(whole.usd_per_mtok_trained, rel=1e-9)
    # a node's own price is shared the same way
    node = Assumptions(price_per_gpu_hour=2.0)
    assert option(spec, w, "H100-SXM", 1, node, mig="1g.10gb").usd_per_hour == pytest.approx(2.0 / 7)


def test_memory_bound_serving_pays_for_the_instances_bandwidth():
    """Decode reads the weights and the KV cache: 3/7 of the price buys about 4/8 of the bandwidth."""
    spec = load_model("llama-3-8b")
    w = Workload(**SERVE, engine="vllm")
    whole, inst = option(spec, w, "H100-SXM", 1), option(spec, w, "H100-SXM", 1, mig="3g.40gb")
    compute, memory = mig_share(load_gpu("H100-SXM"), "3g.40gb")
    ratio = inst.usd_per_mtok / whole.usd_per_mtok
    assert ratio == pytest.approx(compute / memory, rel=0.05)  # memory-bound: price share / bandwidth share


def test_the_answer_prices_the_instance_its_deployment_asks_for():
    ref = answer(load_model("llama-3-8b"), Workload(**SERVE), "H100-SXM")
    o = ref.option
    assert ref.fits and o.mig == "3g.40gb" and o.on == "H100-SXM MIG 3g.40gb"
    assert ref.deployment.resource == "nvidia.com/mig-3g.40gb" and ref.deployment.count == 1
    assert o.usd_per_hour == pytest.approx(load_gpu("H100-SXM").price_per_hour_usd * 3 / 7)
    assert ref.price_words.render("en").endswith(
        "; one MIG 3g.40gb instance: 3/7 of the GPU's compute and price"
    )
    assert "3/7 der Rechenleistung und des Preises der GPU" in ref.price_words.render("de")
    # a workload no instance holds runs on the whole GPU, priced whole
    big = answer(load_model("llama-3-8b"), Workload(**{**SERVE, "concurrency": 48}), "H100-SXM")
    assert big.option.mig == "" and big.deployment.resource == "nvidia.com/gpu"
    assert big.option.usd_per_hour == load_gpu("H100-SXM").price_per_hour_usd


def _argv() -> list[str]:
    return ["--mode", "infer", "--concurrency", "32", "--seq", "4096", "--new-tokens", "512"]


def test_size_and_the_report_name_the_instance_beside_its_price(capsys):
    ref = answer(load_model("llama-3-8b"), Workload(**SERVE), "H100-SXM")
    assert main(["size", "llama-3-8b", "--gpu", "H100-SXM", *_argv(), "--json"]) == 0
    a = json.loads(capsys.readouterr().out)["answer"]
    assert a["runs_on"] == {"gpu": "H100-SXM", "gpus": 1, "mig": "3g.40gb"}
    assert a["usd_per_hour"] == pytest.approx(ref.option.usd_per_hour)
    assert a["price_source"].endswith("one MIG 3g.40gb instance: 3/7 of the GPU's compute and price")
    assert main(["size", "llama-3-8b", "--gpu", "H100-SXM", *_argv()]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert f"{money(ref.usd_per_mtok)} per million output tokens on 1 x H100-SXM MIG 3g.40gb (" in line
    assert line.endswith("deploy: vllm, tensor parallel 1, nvidia.com/mig-3g.40gb: 1")

    prof = lock(
        "llm-inference",
        detected=None,
        workloads=[{"name": "w", "model": "llama-3-8b", "gpu": "H100-SXM", "workload": Workload(**SERVE)}],
    )
    md = render_markdown(prof)
    head = next(x for x in md.splitlines() if x.startswith("**w"))
    assert (
        f"{money(ref.usd_per_mtok).lstrip('$')} USD per million output tokens (1 × H100-SXM MIG 3g.40gb)"
        in head
    )
    row = next(x for x in md.splitlines() if x.startswith("| w |") and "MIG" in x)
    assert row.rstrip(" |").endswith("1.29 × 1 H100-SXM MIG 3g.40gb")  # 3/7 of $3.00 per GPU-hour
    assert "Runs on H100-SXM MIG 3g.40gb" in md and "nvidia.com/mig-3g.40gb: 1" in md
    month = next(x for x in md.splitlines() if x.startswith("| w | 1 × H100-SXM MIG 3g.40gb |"))
    assert money(ref.usd_per_mtok).lstrip("$") in month


@pytest.mark.timeout(120)
def test_the_sizer_headline_and_cost_line_price_the_instance():
    import aiworkbook.widgets as aw

    ref = answer(load_model("llama-3-8b"), Workload(**SERVE), "H100-SXM")
    s = aw.ModelSizer(background=False)
    try:
        s.value = {"model": "llama-3-8b", "gpu": "H100-SXM", **SERVE}
        assert s.error == ""
        shown = money(ref.usd_per_mtok, "en")
        head = re.sub(r"<[^>]+>", "", s.headline.value)
        assert f"{shown} per million output tokens on 1 × H100-SXM MIG 3g.40gb" in head
        assert shown in s.cost.value and "3/7 of the GPU&#x27;s compute and price" in s.cost.value
        assert s.result["answer"]["runs_on"]["mig"] == "3g.40gb"
    finally:
        s.close()
