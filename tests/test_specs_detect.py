"""detect(): this node without torch imports; NVML failures become 'no NVIDIA GPU found (<reason>)'."""

from __future__ import annotations

import subprocess
import sys

import pynvml
import pytest
from fake_nvml import DATACENTER, NS, FakeNVML

from aiworkbook.specs import detect as detect_api
from aiworkbook.specs.detection import match_catalogue, nvml_gpus, torch_versions


def test_detect_reports_host():
    import psutil

    node = detect_api()
    assert node.detected and node.ram_bytes == psutil.virtual_memory().total
    assert node.cpu_threads == psutil.cpu_count() and node.disk_free_bytes > 0
    assert node.storage_type in {"ssd", "hdd", "nvme", "unknown"}


def test_torch_version_read_without_import():
    code = "import sys; from aiworkbook.specs.detection import torch_versions; v = torch_versions(); print(v[0], 'torch' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    version, imported = r.stdout.split()
    import torch

    assert version == torch.__version__ and imported == "False"
    assert torch_versions()[1] == torch.version.cuda


def test_nvml_gpu_found():
    with FakeNVML([DATACENTER]):
        gpus, status, driver = nvml_gpus()
        assert [g.catalogue_name for g in gpus] == ["H100-SXM"] and driver == "550.54.15"
        assert gpus[0].compute_capability == "9.0" and gpus[0].mig_mode == "disabled"
        assert status.startswith("1 NVIDIA GPU(s)")
        node = detect_api()
        assert node.gpu == "H100-SXM" and node.gpu_count == 1


def test_nvml_no_driver():
    with FakeNVML([DATACENTER], driver=False):
        gpus, status, _ = nvml_gpus()
    assert gpus == [] and status == "no NVIDIA GPU found (NVIDIA driver not loaded)"
    with FakeNVML([], init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND):
        _, status, _ = nvml_gpus()
    assert status == "no NVIDIA GPU found (NVIDIA driver/NVML library not found)"


def test_nvml_metric_failure_is_not_fatal():
    gpu = {
        **DATACENTER,
        "unsupported": {"nvmlDeviceGetMigMode": NS, "nvmlDeviceGetCudaComputeCapability": NS},
    }
    with FakeNVML([gpu]):
        gpus, _, _ = nvml_gpus()
    assert gpus[0].mig_mode == "n/a" and gpus[0].compute_capability == ""


@pytest.mark.parametrize(
    "name,mem,expected",
    [
        ("NVIDIA H100 PCIe", 80 * 2**30, "H100-PCIe"),
        ("NVIDIA A100-SXM4-40GB", 40 * 2**30, "A100-40GB"),
        ("NVIDIA A100-SXM4-80GB", 80 * 2**30, "A100-SXM-80GB"),
        ("NVIDIA L4", 24 * 2**30, "L4"),
        ("NVIDIA GeForce RTX 4090", 24 * 2**30, "RTX-4090"),
        ("Tesla T4", 16 * 2**30, None),
        ("NVIDIA H100 80GB HBM3", 85_520_809_984, "H100-SXM"),
        ("NVIDIA L40S", 48 * 10**9, "L40S"),
        # substrings are not tokens, and the memory must agree with the catalogue entry
        ("NVIDIA L40", 48 * 10**9, None),
        ("NVIDIA GH200 480GB", 102 * 10**9, None),
        ("NVIDIA GH200 144G HBM3e", 144 * 10**9, None),
        ("NVIDIA GB200", 186 * 10**9, "GB200"),
        ("NVIDIA A100 80GB PCIe", 80 * 2**30, None),
        ("NVIDIA H100 NVL", 94 * 10**9, None),
        ("NVIDIA H100 80GB HBM3", 40 * 2**30, None),
        ("NVIDIA H100 80GB HBM3", 0, None),
    ],
)
def test_match_catalogue(name, mem, expected):
    assert match_catalogue(name, mem) == expected


def test_every_catalogue_gpu_is_detected_by_its_real_nvml_name():
    """Each catalogue GPU answers to the name a real nvidia-smi printed for it (tests/data/nvml_names.json
    keeps each name's source), at the catalogue's own usable memory."""
    import json
    from pathlib import Path

    from aiworkbook.specs.gpu import list_gpus

    data = json.loads((Path(__file__).parent / "data" / "nvml_names.json").read_text())
    seen = {row["catalogue"] for row in data["names"]} | set(data["not_nvml"])
    assert seen == {g.name for g in list_gpus()}  # no catalogue GPU left out
    catalogue = {g.name: g for g in list_gpus()}
    for row in data["names"]:
        assert row["source"]
        mem = catalogue[row["catalogue"]].usable_memory_bytes
        assert match_catalogue(row["nvml"], mem) == row["catalogue"], row
        assert match_catalogue(row["nvml"].upper(), mem) == row["catalogue"], row
