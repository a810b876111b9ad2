"""Cheapest means runnable: tensor parallelism stays inside a GPU's scale-up domain (`scale_up_gpus`),
and what it sends over the link (`scale_up_bps`) is a time in the step, stated in a formula."""

from __future__ import annotations

import pytest

from aiworkbook.sizing import Workload, capacity, estimate
from aiworkbook.sizing.roofline import DEFAULT_TRAIN_MFU, train_step
from aiworkbook.specs import get_gpu, list_gpus, load_model

L8, L70 = load_model("llama-3-8b"), load_model("llama-3-70b")
INFER = Workload(mode="infer", concurrency=8, seq_len=4096, new_tokens=512)


def test_tensor_parallel_never_leaves_the_scale_up_domain():
    # 70B at 8 x 4,608 tokens needs more than eight 24 GB L4s: refused, not "16 x L4"
    assert get_gpu("L4").scale_up_gpus == 8
    assert capacity.gpus_needed(L70, INFER, "L4") is None
    for row in capacity.per_gpu(L8, Workload(mode="train")):
        if row["gpus"] is not None:
            assert row["gpus"] <= get_gpu(row["gpu"]).scale_up_gpus
    best = capacity.cheapest_gpu(L8, Workload(mode="train"))
    assert best is not None and best["gpus"] <= get_gpu(best["gpu"]).scale_up_gpus


def test_an_nvl72_domain_allows_more_than_eight():
    assert get_gpu("GB200").scale_up_gpus == 72
    assert {g.scale_up_gpus for g in list_gpus() if g.name != "GB200"} == {8}


def test_training_step_adds_the_all_reduces_over_the_link():
    w = Workload(mode="train", tp=8)
    gpu = get_gpu("RTX-3090")
    r = train_step(L8, w, gpu)
    tokens = w.batch * w.seq_len
    moved = 2 * 2 * L8.num_layers * 2 * 7 / 8 * tokens * L8.hidden_size * 2  # fwd+bwd, bf16
    assert r["tp_comm_s"] == pytest.approx(moved / (gpu.scale_up_bps / 2))
    compute = r["model_flops_per_gpu_step"] / (r["peak_flops"] * DEFAULT_TRAIN_MFU)
    assert r["step_time_s"] == pytest.approx(compute + r["tp_comm_s"])
    assert "PCIe4 64 GB/s" in r["tp_comm_formula"] and f"{tokens:,} tokens" in r["tp_comm_formula"]


def test_nvlink_costs_less_time_than_pcie_at_the_same_split():
    w = Workload(mode="train", tp=4)
    nv, pcie = train_step(L8, w, get_gpu("H100-SXM")), train_step(L8, w, get_gpu("RTX-4090"))
    ratio = get_gpu("H100-SXM").scale_up_bps / get_gpu("RTX-4090").scale_up_bps
    assert pcie["tp_comm_s"] == pytest.approx(nv["tp_comm_s"] * ratio)


def test_serving_figures_carry_the_term_and_tp_one_has_none():
    one = estimate(L8, INFER, gpu="RTX-4090").to_dict()["roofline"]
    assert "tp_comm_s" not in one  # nothing to send
    four = estimate(L8, INFER.replace(tp=4), gpu="RTX-4090").roofline
    assert four.tp_comm_s > 0 and four.decode_tokens_per_s == pytest.approx(INFER.concurrency / four.tpot_s)
