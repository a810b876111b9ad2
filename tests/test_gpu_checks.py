"""benchmarks/gpu_checks.py, the device run's first output: the interpreter, NVML's total less reserved
against CUDA's total (through the fake NVML and a stand-in for torch.cuda's answers), the attention
backend. The CPU path runs as it is; the CUDA path's arithmetic with torch.cuda's three calls replaced."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import pytest
import torch
from fake_nvml import DATACENTER, FakeNVML

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def checks():
    spec = importlib.util.spec_from_file_location("gpu_checks", ROOT / "benchmarks" / "gpu_checks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_on_the_cpu_it_reports_the_interpreter_and_the_attention_backend(checks, capsys):
    doc = checks.checks()
    assert doc["sys_prefix"] == sys.prefix and doc["in_venv"] == (sys.prefix != sys.base_prefix)
    assert doc["cuda_available"] is False and "nvml_total_bytes" not in doc
    assert doc["attention"]["backend"] in ("flash", "efficient", "math")
    checks._print(doc)
    out = capsys.readouterr().out
    assert out.index("check 1") < out.index("check 2, memory: no CUDA") < out.index("check 3, attention")


def test_nvml_total_less_reserved_is_set_against_cudas_total(checks, monkeypatch, capsys):
    usable = DATACENTER["mem_total"] - DATACENTER["mem_reserved"]
    cuda_total = usable - 2 * 2**20  # what CUDA says: 2 MiB less, as an example
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (cuda_total - 2**30, cuda_total))
    props = types.SimpleNamespace(uuid="00000000-fake-h100")  # torch's uuid has no "GPU-"
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: props)
    import aiworkbook.proofs.attention as att

    monkeypatch.setattr(
        att, "attention_check", lambda device: {"backend": "flash", "detail": device, "policy": ["flash"]}
    )
    with FakeNVML([{**DATACENTER, "uuid": "GPU-other"}, DATACENTER]):  # torch's device 0 is NVML's 1
        doc = checks.checks()
    assert doc["nvml_uuid"] == DATACENTER["uuid"]
    assert doc["nvml_total_less_reserved_bytes"] == usable
    assert doc["torch_total_minus_nvml_usable_mib"] == -2.0
    checks._print(doc)
    assert "(torch - NVML: -2.0 MiB)" in capsys.readouterr().out
