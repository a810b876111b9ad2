"""Storage and cost sections of an Estimate, and the assumptions behind them."""

from __future__ import annotations

import json
import math

import pytest

from aiworkbook.cli import main
from aiworkbook.errors import SpecError
from aiworkbook.sizing import Assumptions, Workload, estimate
from aiworkbook.sizing.assumptions import LLAMA3_GPU_MTBF_HOURS
from aiworkbook.specs import get_gpu, get_node, load_model

L70 = load_model("llama-3-70b")
L8 = load_model("llama-3-8b")
H100 = get_gpu("H100-SXM")


def test_llama3_mtbf_default_reproduces_the_papers_cluster_mtbf():
    # 16,384 GPUs: M ≈ 3.1 h (REFERENCE.md)
    assert LLAMA3_GPU_MTBF_HOURS / 16_384 == pytest.approx(3.1, abs=0.05)


def test_training_storage_section():
    w = Workload(mode="train", seq_len=8192, dp=2048, tp=8, zero=1)
    a = Assumptions(storage_write_bps=50e9, storage_read_bps=100e9)
    est = estimate(L70, w, gpu=H100, assumptions=a)
    st = est.storage
    assert st["weights_only_bytes"] == 2 * L70.params and st["resumable_bytes"] == 14 * L70.params
    assert st["write_s"] == pytest.approx(14 * L70.params / 50e9)
    m = LLAMA3_GPU_MTBF_HOURS * 3600 / (2048 * 8)
    assert st["system_mtbf_s"] == pytest.approx(m)
    assert st["young_interval_s"] == pytest.approx(math.sqrt(2 * st["write_s"] * m))
    assert 0 < st["waste_fraction"] < 1 and st["goodput"] == pytest.approx(1 - st["waste_fraction"])
    loader = st["dataloader"]
    assert loader["samples_per_s"] == pytest.approx(2048 / est.roofline["step_time_s"])
    assert loader["bytes_per_s"] == pytest.approx(loader["samples_per_s"] * 8192 * 4)


def test_training_run_cost_includes_failures():
    w = Workload(
        mode="train", seq_len=8192, dp=1024, tp=8, zero=3
    )  # ZeRO-3: it fits eight-way, so it is priced
    a = Assumptions(train_tokens=15e12, price_per_gpu_hour=2.0)
    c = estimate(L70, w, gpu=H100, assumptions=a).cost
    run = c["run"]
    ideal = 15e12 / estimate(L70, w, gpu=H100).roofline["tokens_per_s"] / 3600 * 8192
    assert run["gpu_hours"] == pytest.approx(ideal / (1 - run["waste_fraction"]))
    assert run["usd"] == pytest.approx(run["gpu_hours"] * 2.0) and run["usd_lost"] > 0
    # Meta reports 6.4M H100-hours for Llama 3 70B on 15T tokens; 40 % MFU lands in that range.
    assert 4e6 < run["gpu_hours"] < 9e6


def test_serving_cost_split_prefill_decode():
    w = Workload(mode="infer", concurrency=8, seq_len=4096, new_tokens=512)
    est = estimate(
        L8, w, gpu=H100, assumptions=Assumptions(price_per_gpu_hour=3.0, utilization=0.5, headroom=0.2)
    )
    c = est.cost
    eff = 0.5 * 0.8
    assert c["effective_utilization"] == pytest.approx(eff)
    assert c["decode_usd_per_mtok"] == pytest.approx(
        1e6 * 3.0 / (3600 * est.roofline["decode_tokens_per_s"] * eff)
    )
    assert c["prefill_tokens_per_s"] == pytest.approx(8 * 4096 / est.roofline["ttft_s"])
    assert c["prefill_usd_per_mtok"] < c["decode_usd_per_mtok"]  # prefill is compute-bound and batched
    assert c["decode_joules_per_mtok"] == pytest.approx(700 * 1.3 / est.roofline["decode_tokens_per_s"] * 1e6)
    assert est.storage["weights_bytes"] == est.memory.weights


def test_assumptions_from_node_and_validation():
    node = get_node("gpu-training-8xh100")
    a = Assumptions.from_node(node, train_tokens=1e9)
    assert a.storage_write_bps == node.storage_write_bps and a.price_per_gpu_hour == pytest.approx(3.0)
    assert a.train_tokens == 1e9 and a.source == "node gpu-training-8xh100"
    for field, bad in [("utilization", 0), ("headroom", 1.0), ("storage_write_bps", -1), ("pue", 0)]:
        with pytest.raises(SpecError) as e:
            Assumptions(**{field: bad})
        assert e.value.field == field


NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(
    "field, bad",
    [
        ("storage_write_bps", NAN),
        ("storage_read_bps", INF),
        ("gpu_mtbf_hours", NAN),
        ("pue", INF),
        ("bytes_per_token", NAN),
        ("restart_s", NAN),
        ("restart_s", INF),
        ("restart_s", True),
        ("usd_per_kwh", True),
        ("usd_per_kwh", NAN),
        ("utilization", NAN),
        ("utilization", True),
        ("headroom", NAN),
        ("headroom", False),
        ("price_per_gpu_hour", NAN),
        ("price_per_gpu_hour", True),
        ("train_tokens", INF),
        ("train_tokens", NAN),
        ("train_tokens", True),
    ],
)
def test_assumptions_refuse_nan_inf_and_bools(field, bad):
    """NaN passed `v <= 0` (always False) and True passed as a number: both reached the JSON."""
    with pytest.raises(SpecError) as e:
        Assumptions(**{field: bad})
    assert e.value.field == field


@pytest.mark.parametrize("flag", ["--write-gbps", "--read-gbps", "--mtbf-hours", "--price", "--train-tokens"])
def test_cli_size_refuses_nan(flag, capsys):
    assert main(["size", "llama-3-8b", "--gpu", "H100-SXM", flag, "nan", "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "nan" in captured.err


def test_cli_size_json_has_storage_cost_assumptions(capsys):
    rc = main(
        [
            "size",
            "llama-3-8b",
            "--mode",
            "train",
            "--seq",
            "4096",
            "--gpus",
            "8",
            "--zero",
            "3",
            "--gpu",
            "H100-SXM",
            "--train-tokens",
            "1e10",
            "--write-gbps",
            "5",
            "--json",
        ]
    )
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert {
        "memory",
        "params",
        "rules_of_thumb",
        "roofline",
        "fits",
        "storage",
        "cost",
        "assumptions",
    } <= set(doc)
    assert doc["assumptions"]["storage_write_bps"] == 5e9 and doc["cost"]["run"]["train_tokens"] == 1e10
    rc = main(["size", "llama-3-8b", "--price", "-1"])
    assert rc == 2 and "price_per_gpu_hour" in capsys.readouterr().err


def test_trainable_and_optimizer_is_the_one_count():
    from aiworkbook.sizing.states import model_states, trainable_and_optimizer

    s = load_model("tiny-llama")
    h, a, k, d = s.hidden_size, s.num_heads, s.num_kv_heads, s.head_dim
    r = 8
    adapters = s.num_layers * r * ((h + a * d) + 2 * (h + k * d) + (a * d + h))  # q, k, v, o
    lora = Workload(mode="lora", lora_rank=r)
    assert trainable_and_optimizer(s, lora)[:2] == (adapters, 8 * adapters)  # megatron-bf16: fp32 m and v
    assert trainable_and_optimizer(s, Workload(mode="infer"))[:2] == (0, 0)
    assert trainable_and_optimizer(s, Workload(precision="fp32", recipe="fp32-adamw"))[:2] == (
        s.params,
        8 * s.params,
    )
    for w in (lora, Workload(recipe="adafactor"), Workload(mode="lora", recipe="adafactor")):
        trainable, opt, _ = trainable_and_optimizer(s, w)
        est = estimate(s, w, gpu=H100)
        assert est.params["trainable"] == trainable == model_states(s, w).trainable
        assert est.memory.optimizer == opt  # dp = tp = 1: nothing sharded
        wb, mb = (2, 4)  # 16-bit weights + fp32 master in both recipes at bf16-mixed
        assert est.storage["resumable_bytes"] == trainable * (wb + mb) + opt


def test_cost_prices_the_storage_section_it_is_given(monkeypatch):
    from aiworkbook.sizing import plan

    calls = []
    real = plan.storage_section
    monkeypatch.setattr(plan, "storage_section", lambda *a, **k: calls.append(1) or real(*a, **k))
    w = Workload(seq_len=4096, dp=8, zero=3)
    est = estimate(L8, w, gpu=H100, assumptions=Assumptions(train_tokens=1e10))
    assert len(calls) == 1  # was computed again inside cost_section
    assert est.cost["run"]["waste_fraction"] == est.storage["waste_fraction"]
    doctored = {**est.storage, "waste_fraction": 0.5}
    c = plan.cost_section(L8, w, H100, est.roofline, est.assumptions, doctored)
    assert c["run"]["waste_fraction"] == 0.5 and len(calls) == 1
