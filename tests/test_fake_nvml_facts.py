"""The fake NVML as unkind as the real library where issue 36 found it kinder: MIG handles answer a
versioned memory call with the v2 struct, a 580-series driver reports CUDA 13.0, and the H100's
reserved memory is the catalogue's (nvidia-smi's total less CUDA's)."""

from __future__ import annotations

import pynvml
import pytest
from fake_nvml import DATACENTER, MIG, FakeNVML

from aiworkbook.specs.gpu import get_gpu
from aiworkbook.telemetry.gpu_reader import GPUReader


def test_a_mig_handle_answers_a_versioned_memory_call_with_the_v2_struct():
    with FakeNVML([MIG]):
        pynvml.nvmlInit()
        mh = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(pynvml.nvmlDeviceGetHandleByIndex(0), 1)
        v2 = pynvml.nvmlDeviceGetMemoryInfo(mh, version=pynvml.nvmlMemory_v2)
        v1 = pynvml.nvmlDeviceGetMemoryInfo(mh)
    assert isinstance(v2, pynvml.c_nvmlMemory_v2_t) and v2.version == pynvml.nvmlMemory_v2
    assert v2.total == v1.total == MIG["mig"][1][2] and v2.reserved == 0


@pytest.mark.parametrize(
    ("driver", "cuda"),
    [("580.65.06", "13.0"), ("570.86.15", "12.8"), ("550.54.15", "12.4"), ("535.183.01", "12.2")],
)
def test_the_driver_branch_sets_the_cuda_version_nvml_reports(driver, cuda):
    with FakeNVML([DATACENTER], driver_version=driver) as fake:
        assert GPUReader(clock=fake.clock).identity(0)["cuda_driver"] == cuda


def test_the_h100s_reserved_memory_is_the_catalogues():
    h100 = get_gpu("H100-SXM")
    assert DATACENTER["mem_total"] == h100.usable_memory_bytes
    assert DATACENTER["mem_reserved"] == h100.usable_memory_bytes - h100.cuda_memory_bytes
