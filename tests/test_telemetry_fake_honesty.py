"""The fake NVML is no kinder than the real one (issue 23): blocking calls block, PIDs are the host's,
MIG handles answer and fail as NVML does, a MIG parent refuses its process list without root."""

from __future__ import annotations

import os

import pynvml
import pytest
from fake_nvml import DATACENTER, LATENCY_S, MIG, FakeNVML


def test_pcie_throughput_blocks_about_20_ms_per_call_and_event_waits_block_their_timeout():
    slept: list[float] = []
    with FakeNVML([DATACENTER], sleep=slept.append) as fake:
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        pynvml.nvmlDeviceGetMemoryInfo(h)
        assert slept == []  # the other calls answer at once
        pynvml.nvmlDeviceGetPcieThroughput(h, pynvml.NVML_PCIE_UTIL_TX_BYTES)
        pynvml.nvmlDeviceGetPcieThroughput(h, pynvml.NVML_PCIE_UTIL_RX_BYTES)
        assert slept == [LATENCY_S["nvmlDeviceGetPcieThroughput"]] * 2 == [0.020] * 2
        es = pynvml.nvmlEventSetCreate()
        with pytest.raises(pynvml.NVMLError_Timeout):
            pynvml.nvmlEventSetWait_v2(es, 250)
        assert slept[-1] == 0.25 and fake.blocked_s == pytest.approx(0.04)


def test_the_reader_pays_the_latency_in_fake_time():
    from aiworkbook.telemetry.gpu_reader import GPUReader

    with FakeNVML([DATACENTER, DATACENTER]) as fake:
        fake._sleep = fake.advance  # spend fake time, bounded
        reader = GPUReader(clock=fake.clock)
        reader.read_all()  # the first read also probes every metric group once
        t0 = fake.now
        reader.read_all()
        # every later sample: tx and rx on each GPU, 40 ms per GPU (a 1 Hz sampler of 8 GPUs: 0.32 s)
        assert fake.now - t0 == pytest.approx(2 * 2 * 0.020)


def test_process_lists_carry_host_pids_so_a_container_never_finds_itself():
    from aiworkbook.proofs.device import nvml_reading

    me = os.getpid()
    profile = dict(DATACENTER, processes=[(me, 123_456_789)])
    with FakeNVML([profile]):
        assert nvml_reading(pid=me)["process_used"] == 123_456_789  # bare metal: the same numbering
    with FakeNVML([profile], pid_offset=100_000):
        r = nvml_reading(pid=me)
        assert r is not None and "process_used" not in r  # the host's PID is not ours


def test_mig_handles_answer_what_nvml_answers_and_fail_the_rest():
    with FakeNVML([MIG]) as fake:
        pynvml.nvmlInit()
        parent = pynvml.nvmlDeviceGetHandleByIndex(0)
        with pytest.raises(pynvml.NVMLError_NoPermission):  # aggregate list needs privileges
            pynvml.nvmlDeviceGetComputeRunningProcesses(parent)
        mig = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(parent, 1)
        assert pynvml.nvmlDeviceGetUUID(mig) == "MIG-fake-1"
        assert pynvml.nvmlDeviceIsMigDeviceHandle(mig).value == 1
        assert pynvml.nvmlDeviceIsMigDeviceHandle(parent).value == 0
        assert pynvml.nvmlDeviceGetGpuInstanceId(mig) == 1
        assert "MIG" in pynvml.nvmlDeviceGetName(mig)
        assert (
            pynvml.nvmlDeviceGetUUID(pynvml.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig)) == MIG["uuid"]
        )
        assert pynvml.nvmlDeviceGetComputeRunningProcesses(mig) == []  # per instance: answered
        with pytest.raises(pynvml.NVMLError_NotSupported):
            pynvml.nvmlDeviceGetTemperature(mig, pynvml.NVML_TEMPERATURE_GPU)
        with pytest.raises(pynvml.NVMLError_InvalidArgument):  # a parent-only question
            pynvml.nvmlDeviceGetMaxMigDeviceCount(mig)
        fake.root = True
        assert [p.pid for p in pynvml.nvmlDeviceGetComputeRunningProcesses(parent)] == [4243]
