"""Typed Estimate sections: attribute access, units in field metadata, None where a figure does not
apply, the pinned JSON keys of `size --json`, and item access kept for dict-shaped callers."""

import dataclasses
import json

import pytest

from aiworkbook.sizing import Assumptions, Workload, estimate
from aiworkbook.sizing.sections import Cost, Fits, Roofline, RulesOfThumb, Section, Storage
from aiworkbook.specs import get_gpu, load_model

L8 = load_model("llama-3-8b")

#: The JSON keys of each section per case, as `size --json` printed them before the sections were typed.
PINNED = {
    "train_h100_tokens": {
        "roofline": ["flops_per_token", "model_flops_per_gpu_step", "assumed_mfu", "peak_flops",
                     "step_time_s", "tokens_per_s"],
        "fits": ["gpu", "usable_bytes", "budget_bytes", "total_bytes", "headroom_bytes", "fits"],
        "storage": ["weights_only_bytes", "resumable_bytes", "write_s", "restore_s", "system_mtbf_s",
                    "young_interval_s", "daly_interval_s", "waste_fraction", "goodput", "dataloader"],
        "cost": ["price_per_gpu_hour", "gpus", "watts_per_gpu_at_tdp", "usd_per_mtok_trained",
                 "joules_per_mtok_trained", "run"],
    },
    "train_nogpu": {
        "roofline": ["flops_per_token", "model_flops_per_gpu_step", "assumed_mfu", "peak_flops",
                     "step_time_s", "tokens_per_s"],
        "fits": ["gpu", "fits"],
        "storage": ["weights_only_bytes", "resumable_bytes", "write_s", "restore_s", "system_mtbf_s",
                    "young_interval_s", "daly_interval_s", "waste_fraction", "goodput"],
        "cost": [],
    },
    "infer_h100": {
        "roofline": ["ttft_s", "tpot_s", "decode_tokens_per_s", "decode_bound", "batch1_tokens_per_s",
                     "crossover_batch", "experts_touched_per_layer"],
        "fits": ["gpu", "usable_bytes", "budget_bytes", "total_bytes", "headroom_bytes", "fits"],
        "storage": ["weights_bytes", "load_s"],
        "cost": ["price_per_gpu_hour", "gpus", "watts_per_gpu_at_tdp", "prefill_usd_per_mtok",
                 "decode_usd_per_mtok", "effective_utilization", "prefill_tokens_per_s",
                 "decode_joules_per_mtok", "prefill_joules_per_mtok"],
    },
    "infer_nogpu": {"roofline": [], "fits": ["gpu", "fits"], "storage": ["weights_bytes", "load_s"], "cost": []},
}  # fmt: skip
RULES = ["rule", "formula", "bytes", "itemised_total", "difference_bytes", "ratio_to_itemised"]
RUN = ["train_tokens", "days", "gpu_hours", "usd", "usd_lost", "waste_fraction", "energy_kwh", "energy_usd"]


def _case(name):
    return {
        "train_h100_tokens": lambda: estimate(
            L8,
            Workload(seq_len=4096, dp=8, zero=3),
            gpu="H100-SXM",
            assumptions=Assumptions(train_tokens=1e10),
        ),
        "train_nogpu": lambda: estimate(L8, Workload(), device="cpu"),
        "infer_h100": lambda: estimate(L8, Workload(mode="infer", concurrency=4), gpu="H100-SXM"),
        "infer_nogpu": lambda: estimate(L8, Workload(mode="infer", concurrency=4)),
    }[name]()


@pytest.mark.parametrize("case", sorted(PINNED))
def test_json_keys_are_pinned(case):
    est = _case(case)
    d = json.loads(json.dumps(est.to_dict()))
    for section, keys in PINNED[case].items():
        assert list(d[section]) == keys, section
        assert list(getattr(est, section).keys()) == keys  # the mapping view is the JSON view
    assert list(d["rules_of_thumb"]) == RULES
    if case == "train_h100_tokens":
        assert list(d["cost"]["run"]) == RUN
        assert list(d["storage"]["dataloader"]) == ["samples_per_s", "bytes_per_s"]


def test_sections_are_typed_with_units_and_none_where_not_applicable():
    est = _case("infer_h100")
    assert isinstance(est.roofline, Roofline) and isinstance(est.fits, Fits)
    assert isinstance(est.storage, Storage) and isinstance(est.cost, Cost)
    assert isinstance(est.rules_of_thumb, RulesOfThumb)
    # attribute and item access read the same figure
    assert est.roofline.tpot_s == est.roofline["tpot_s"] > 0
    assert est.fits.fits is est.fits["fits"] is True
    # serving has no training figures: present as attributes, None, absent from the JSON
    assert est.roofline.step_time_s is None and "step_time_s" not in est.roofline
    assert est.storage.resumable_bytes is None and est.cost.usd_per_mtok_trained is None
    with pytest.raises(KeyError):
        est.roofline["step_time_s"]
    assert est.roofline.get("step_time_s", "absent") == "absent"
    # units come from the field metadata, never from the key
    assert Roofline.unit("tpot_s") == "s" and Roofline.unit("peak_flops") == "FLOP/s"
    assert Fits.unit("headroom_bytes") == "B" and Cost.unit("decode_usd_per_mtok") == "$/Mtok"
    assert Storage.unit("dataloader") == "" and Assumptions.unit("storage_write_bps") == "B/s"
    for cls in (Roofline, Fits, Storage, Cost, RulesOfThumb, Assumptions):
        assert issubclass(cls, Section)
        for f in dataclasses.fields(cls):
            assert "unit" in f.metadata, (cls.__name__, f.name)


def test_sections_are_frozen_and_hashable():
    est = _case("train_h100_tokens")
    with pytest.raises(dataclasses.FrozenInstanceError):
        est.roofline.step_time_s = 1.0  # type: ignore[misc]
    assert hash(est.cost) == hash(_case("train_h100_tokens").cost)
    assert est.cost.run is not None and est.cost.run.waste_fraction == est.storage.waste_fraction
    assert est.cost["run"]["waste_fraction"] == est.storage["waste_fraction"]  # nested item access
    assert {**est.storage, "waste_fraction": 0.5}["waste_fraction"] == 0.5  # a Mapping for ** too


def test_workload_point_sits_on_its_own_dtype_roof():
    from aiworkbook.proofs.roofline import roofline_chart_data, workload_point

    h100 = get_gpu("H100-SXM")
    first = list(h100.peak_flops_dense)[0]
    point = workload_point(L8, batch=64, context=2048, weights_dtype="bf16")
    rows = [r for r in roofline_chart_data(h100, point) if r["kind"] == "workload"]
    assert rows[0]["dtype"] == "bf16"
    assert rows[0]["bound"] == "memory"  # Llama-3-8B at batch 64 is memory-bound at bf16
    # on the fp32 roof (the table's first entry here) the same point reads compute-bound: the old bug
    assert first == "fp32"
    fp32 = [
        r for r in roofline_chart_data(h100, {"intensity": point["intensity"]}) if r["kind"] == "workload"
    ]
    assert fp32[0]["bound"] == "compute"
    est = estimate(L8, Workload(mode="infer", concurrency=64, seq_len=2048), gpu=h100)
    assert est.roofline.decode_bound == "memory" and est.roofline.compute_dtype == "bf16"


def test_encoder_only_inference_has_no_decode_no_decode_cost_no_lm_head():
    bert = load_model("bert-base-uncased")
    est = estimate(bert, Workload(mode="infer", concurrency=8, seq_len=512), gpu="H100-SXM")
    assert est.memory.logits == 0 and "encoder-only" in est.memory.formulas["logits"]
    r = est.roofline
    assert r.ttft_s and r.ttft_s > 0
    assert r.tpot_s is r.decode_tokens_per_s is r.batch1_tokens_per_s is r.decode_bound is None
    assert list(est.to_dict()["roofline"]) == PINNED["infer_h100"]["roofline"]  # keys kept, values null
    assert est.cost.decode_usd_per_mtok is None and est.cost.decode_joules_per_mtok is None
    assert est.cost.prefill_usd_per_mtok and est.cost.prefill_usd_per_mtok > 0
    dec = estimate(L8, Workload(mode="infer", concurrency=8, seq_len=512), gpu="H100-SXM")
    assert dec.memory.logits > 0 and dec.cost.decode_usd_per_mtok  # decoders keep all of it
