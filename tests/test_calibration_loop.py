"""The one loop of the design: measured ceilings -> a calibrated NodeProfile -> sizing uses them."""

from __future__ import annotations

import json

import pytest

from aiworkbook.cli import main
from aiworkbook.errors import SpecError
from aiworkbook.proofs.roofline import calibrated_node, prove_roofline
from aiworkbook.sizing import Workload, estimate
from aiworkbook.specs import GPUSpec, get_gpu, get_node, load_gpu, load_model, load_node_file


@pytest.fixture(scope="module")
def roofline_result():
    return prove_roofline("tiny-llama", device="cpu", quick=True, buffer_bytes=32 * 2**20)


def test_calibrated_node_round_trip(tmp_path, roofline_result):
    node = calibrated_node(roofline_result)
    measured = node.gpu_spec()
    assert measured.measured and measured.memory_bandwidth_bps == pytest.approx(roofline_result.measured)
    path = tmp_path / "node.json"
    node.save(path)
    doc = json.loads(path.read_text())
    assert doc["kind"] == "node-profile" and doc["schema_version"] == 1
    again = load_node_file(path)
    assert again.gpu_spec() == measured and get_node(str(path)).gpu_calibrated == measured


def test_sizing_decode_uses_measured_bandwidth(roofline_result):
    spec = load_model("tiny-llama")
    node = calibrated_node(roofline_result)
    w = Workload(mode="infer", seq_len=128, new_tokens=16)
    est = estimate(spec, w, node=node, device="cpu")
    measured = node.gpu_spec()
    bw, peak = measured.memory_bandwidth_bps, measured.peak_flops("bf16")
    # batch 1 decode reads every multiplied matrix in bf16 once (the untied input table is only looked
    # up: one row) plus the KV cache, per token, at the MEASURED bandwidth; on a CPU whose measured bf16
    # matmul rate is low (or busy) the step can be compute bound instead: the roofline takes the slower
    weight_bytes = (spec.params - spec.params_embedding + spec.hidden_size) * 2
    kv = spec.kv_cache_bytes(128 + 16)
    flops = (
        2 * (spec.params - spec.params_embedding) + 4 * spec.num_layers * spec.num_heads * spec.head_dim * 144
    )
    t_mem, t_cmp = (weight_bytes + kv) / bw, flops / peak
    assert est.roofline["batch1_tokens_per_s"] == pytest.approx(1 / max(t_mem, t_cmp), rel=0.05)
    datasheet = estimate(spec, w, gpu="H100-SXM")
    assert datasheet.roofline["batch1_tokens_per_s"] > 10 * est.roofline["batch1_tokens_per_s"]


def test_load_gpu_accepts_proof_result_node_and_spec(tmp_path, roofline_result):
    rpath = tmp_path / "roofline.json"
    roofline_result.save(rpath)
    from_result = load_gpu(str(rpath))
    assert from_result.name == "CPU (measured)"
    npath = tmp_path / "node.json"
    calibrated_node(roofline_result).save(npath)
    assert load_gpu(str(npath)) == from_result
    spath = tmp_path / "gpu.json"
    spath.write_text(get_gpu("L4").model_dump_json())
    assert load_gpu(str(spath)) == get_gpu("L4")
    bad = tmp_path / "other.json"
    bad.write_text('{"hello": 1}')
    with pytest.raises(SpecError, match="roofline proof result"):
        load_gpu(str(bad))
    assert load_gpu("l40s") == get_gpu("L40S")


def test_cli_size_with_node_file(tmp_path, capsys, roofline_result):
    npath = tmp_path / "node.json"
    calibrated_node(roofline_result).save(npath)
    rc = main(["size", "tiny-llama", "--mode", "infer", "--node", str(npath), "--device", "cpu", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0 and doc["gpu"] == "CPU (measured)"
    assert doc["cost"]["price_per_gpu_hour"] is None and "--price" in doc["cost"]["note"]
    rc = main(["size", "tiny-llama", "--mode", "infer", "--gpu", str(npath), "--price", "0.5", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0 and doc["cost"]["price_per_gpu_hour"] == 0.5 and doc["cost"]["decode_usd_per_mtok"] > 0


def test_cli_size_on_a_measured_host_defaults_to_the_cpu(tmp_path, capsys, roofline_result):
    """A calibrated CPU node used to be sized as CUDA: a context and a reserve on "one CPU (measured)"."""
    npath = tmp_path / "node.json"
    calibrated_node(roofline_result).save(npath)
    for flag in ("--node", "--gpu"):
        assert main(["size", "tiny-llama", "--mode", "infer", flag, str(npath), "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["device"] == "cpu" and doc["memory"]["cuda_context"] == doc["memory"]["reserve"] == 0
    assert main(["size", "tiny-llama", "--node", str(npath), "--device", "cuda", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["device"] == "cuda"  # an explicit --device wins
    assert main(["size", "tiny-llama", "--gpu", "H100-SXM", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["device"] == "cuda"


def test_gpu_spec_without_tdp_is_unknown_power():
    g = GPUSpec.model_validate({**get_gpu("L4").model_dump(), "tdp_watts": 0})
    est = estimate(load_model("tiny-llama"), Workload(mode="infer"), gpu=g)
    assert est.cost["watts_per_gpu_at_tdp"] is None and "decode_joules_per_mtok" not in est.cost
