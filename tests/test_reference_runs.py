"""The committed GPU runs (data/reference-runs/) against today's code: real measurements on real hardware
that no one here can repeat without a lent GPU, so every estimate they cover is held to them here.

A change to the sizing engine that moves the VRAM estimate outside a run's recorded tolerance of what the
H200 measured, or a catalogue entry that disagrees with what the device reported, fails here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aiworkbook.proofs.result import ProofResult
from aiworkbook.proofs.vram import allocated_prediction
from aiworkbook.serving.embedded import predicted_kv_bytes
from aiworkbook.sizing import Workload, estimate
from aiworkbook.specs import load_model
from aiworkbook.specs.detection import match_catalogue
from aiworkbook.specs.gpu import load_gpu

RUNS = Path(__file__).resolve().parents[1] / "data" / "reference-runs"
#: every recorded ProofResult, read once: path -> its JSON
RECORDED = {p: json.loads(p.read_text()) for p in sorted(RUNS.rglob("*.json"))}
RECORDED = {p: d for p, d in RECORDED.items() if d.get("kind") == "aiworkbook.proof-result"}
RESULTS = list(RECORDED)
MIB = 1 << 20


def _rel(p: Path) -> str:
    return str(p.relative_to(RUNS))


def _load(proof: str) -> list[tuple[Path, dict]]:
    return [(p, d) for p, d in RECORDED.items() if d["proof"] == proof and d["device"] == "cuda"]


def test_there_are_gpu_runs_to_hold_the_code_to():
    assert len(_load("vram")) >= 6 and len(_load("serving")) >= 3


@pytest.mark.parametrize("path", RESULTS, ids=_rel)
def test_every_recorded_result_reads_back(path):
    d = RECORDED[path]
    r = ProofResult.from_dict(d)
    assert r.proof == d["proof"] and r.measured == d["measured"] and r.verdict == d["verdict"]


def _run_spec(inputs: dict):
    """The model the run really ran: the preset, or the proxy of it with the recorded parameter count
    (fewer layers; the vram proof's fit_proxy), found by that count, not by reading its name."""
    spec = load_model(inputs["model"])
    if spec.params == inputs["params"]:
        return spec
    for layers in range(spec.num_layers - 1, 0, -1):
        proxy = spec.scaled(num_layers=layers)
        if proxy.params == inputs["params"]:
            return proxy
    raise AssertionError(f"no proxy of {spec.name} has {inputs['params']} parameters")


@pytest.mark.parametrize("path", [p for p, _ in _load("vram")], ids=_rel)
def test_todays_vram_estimate_agrees_with_the_h200(path):
    d = RECORDED[path]
    spec = _run_spec(d["inputs"])
    w = Workload(**d["inputs"]["workload"])
    predicted = allocated_prediction(estimate(spec, w, gpu=None, device="cuda").memory, "cuda")
    ratio = d["measured"] / predicted
    assert abs(ratio - 1) <= d["tolerance"], (
        f"{_rel(path)}: measured {d['measured']:.0f} B / estimate {predicted} B = {ratio:.4f}"
    )


@pytest.mark.parametrize("path", [p for p, d in _load("serving") if "run1" not in str(p)], ids=_rel)
def test_serving_kv_pool_is_predicted_in_the_servers_dtype(path):
    """The embedded server on the H200 holds its KV cache in bf16 (run1 predicted it in fp32: ratio 0.500)."""
    d = RECORDED[path]
    heaviest = max(d["details"]["sweep"], key=lambda row: row["load"])
    # blocks are reserved for prompt + max_tokens per running sequence: both as the run counted them
    tokens = heaviest["prompt_tokens"]["max"] + heaviest["output_tokens_per_request"]["max"]
    predicted = predicted_kv_bytes(load_model(d["inputs"]["model"]), heaviest["peak_running"], tokens, "bf16")
    assert heaviest["kv_bytes_peak"] == predicted == d["predicted"]


def test_the_catalogue_matches_what_the_device_reported():
    checks = json.loads(next(RUNS.rglob("checks.json")).read_text())
    env = next(d for p, d in RECORDED.items() if "run3" in str(p))["environment"]
    gpu = env["gpus"][0]
    name = match_catalogue(gpu["name"], checks["nvml_total_bytes"])
    assert name == "H200-SXM"
    spec = load_gpu(name)
    assert spec.usable_memory_bytes == checks["nvml_total_bytes"]
    # the catalogue's CUDA total is read from public logs printed to 0.01 GiB: within 5 MiB of this driver's
    assert abs(spec.cuda_memory_bytes - checks["torch_total_bytes"]) <= 5 * MIB
    assert checks["torch_total_minus_nvml_usable_mib"] == 0.0  # NVML total less reserved is CUDA's total
    assert spec.l2_cache_bytes == env["cuda_device"]["l2_cache_bytes"]
    assert spec.compute_capability == env["cuda_device"]["capability"]
    assert spec.sm_count == env["cuda_device"]["multiprocessors"]
