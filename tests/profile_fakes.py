"""Test helpers for locked profiles: proof results with an environment, and a fake golden proof
registered in the real registry (so check() re-runs through registry.run and its proof lock)."""

from __future__ import annotations

import copy
import sys
import types
from pathlib import Path
from typing import Any

from aiworkbook.proofs import registry
from aiworkbook.proofs.result import ProofResult
from aiworkbook.sizing import Workload

ENV: dict[str, Any] = {
    "gpus": [{"name": "NVIDIA L40S", "driver": "550.54.15", "throttle_reasons": []}],
    "gpu_status": "1 NVIDIA GPU(s): NVIDIA L40S",
    "host": {"cpu_model": "AMD EPYC 9354", "torch_version": "2.5.1", "torch_cuda": "12.4"},
    "torch": {"version": "2.5.1", "cuda": "12.4"},
}

CHAT = {
    "name": "chat",
    "model": "llama-3-8b",
    "workload": Workload(mode="infer", seq_len=4096, new_tokens=512, concurrency=8, engine="vllm"),
}


def env(**changes: Any) -> dict[str, Any]:
    """ENV with some fingerprint parts changed: driver=, gpu=, torch=, cpu=."""
    e = copy.deepcopy(ENV)
    if "driver" in changes:
        e["gpus"][0]["driver"] = changes["driver"]
    if "gpu" in changes:
        e["gpus"][0]["name"] = changes["gpu"]
    if "torch" in changes:
        e["torch"]["version"] = changes["torch"]
    if "cpu" in changes:
        e["host"]["cpu_model"] = changes["cpu"]
    return e


def result(proof: str = "kv", measured: float = 1.0e9, unit: str = "B", **kw: Any) -> ProofResult:
    kw.setdefault("environment", env())
    kw.setdefault("predicted", 1.0e9)
    kw.setdefault("device", "cuda")
    kw.setdefault("inputs", {"model": "tiny-llama", "quick": True, "ran": "tiny-llama"})
    return ProofResult(proof=proof, measured=measured, unit=unit, **kw)


FAKE = "golden-fake"


def install_fake_proof(monkeypatch, measured: float = 100.0, environment: dict | None = None) -> list[dict]:
    """Register proof FAKE (module in sys.modules); returns the list of inputs each run received."""
    calls: list[dict] = []
    mod = types.ModuleType("aiwb_fake_golden_proof")

    def plan(inputs: Any) -> registry.Plan:
        return registry.Plan(FAKE, "cpu", None, "", "s")

    def run(model: Any, *, control: Any) -> ProofResult:
        inputs = model.given()  # the inputs as the caller named them
        calls.append(dict(inputs))
        control.step(1, 1, "measured")
        return ProofResult(
            proof=FAKE,
            device="cpu",
            inputs=dict(inputs),
            measured=inputs.get("scale", 1.0) * measured,
            unit="s",
            environment=environment if environment is not None else env(),
        )

    mod.plan, mod.run = plan, run
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    info = registry.ProofInfo(
        FAKE,
        "fake golden proof",
        "a figure the test controls",
        mod.__name__,
        (registry.InputSpec("scale", "float", "multiplies the figure", 1.0), registry._DEVICE),
    )
    monkeypatch.setitem(registry._REGISTRY, FAKE, info)
    return calls


def write_locked(folder, *, note: str = "golden") -> Path:
    """A valid locked profile on disk through the CLI (size --json, lock): `p.json` with an inference
    workload ('chat', llama-3-8b on L40S) and two golden proofs, beside `kv.json` and `roof.json`."""
    import contextlib
    import io

    from aiworkbook.cli import main

    d = Path(folder)
    result("kv", 1.0e9, notes=["a note"]).save(d / "kv.json")
    result("roofline", 8.0e11, "B/s").save(d / "roof.json")
    size = ["size", "llama-3-8b", "--mode", "infer", "--batch", "8", "--seq", "2048", "--new-tokens", "256"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*size, "--engine", "vllm", "--gpu", "L40S", "--json"]) == 0
    (d / "chat.json").write_text(out.getvalue())
    lock = ["lock", "--pattern", "llm-inference", "--no-detect", "--workload", str(d / "chat.json")]
    lock += ["--result", str(d / "kv.json"), "--result", str(d / "roof.json"), "--note", note]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main([*lock, "-o", str(d / "p.json")]) == 0
    return d / "p.json"


def priced_profile(*workloads: dict[str, Any]) -> Any:
    """An inference profile on the L40S node ($1.00 per L40S-hour) with these workloads, no proofs: what
    the report's prices and the CFO's figures are read from (tests/test_report_cfo.py, test_price_provenance.py)."""
    from aiworkbook.profile import lock

    return lock("llm-inference", node="inference-4xl40s", detected=None, workloads=list(workloads))
