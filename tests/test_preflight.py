"""`aiworkbook preflight vllm` (issue 26, items 1 and 4): this GPU read through the fake NVML with
co-tenants, MIG slices, processes whose memory NVML cannot read and no GPU; vLLM's start-up rule
(ceil(total x utilisation) <= free at start-up) and its KV arithmetic at the largest value that passes."""

from __future__ import annotations

import json
import math

import pynvml
import pytest
from fake_nvml import DATACENTER, MIG, FakeNVML

from aiworkbook.cli import main
from aiworkbook.errors import SpecError
from aiworkbook.preflight import cgroup_of, preflight, read_devices
from aiworkbook.preflight.vllm import gpu_for
from aiworkbook.sizing.memory import CUDA_CONTEXT_BYTES
from aiworkbook.sizing.vllm import VllmSettings, startup
from aiworkbook.specs import load_model

GiB = 2**30
SHARED = {**DATACENTER, "mem_used": 30 * GiB, "processes": [(4242, 20 * GiB), (4250, None)]}
IDLE = {**DATACENTER, "mem_used": 300 * 2**20, "processes": []}
SLICES = {
    **MIG,
    "mig": [
        (0, "MIG-fake-0", 20_000_000_000, 2 * GiB, [(4300, None)]),
        (1, "MIG-fake-1", 40_000_000_000, 7_000_000),
    ],
}


def _names(pid: int) -> str:
    return {4242: "python3", 4250: "ollama"}.get(pid, "?")


def _run(capsys, *args: str) -> tuple[int, dict]:
    code = main(["preflight", "vllm", *args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_co_tenants_make_the_default_utilisation_refuse_and_the_largest_that_starts_is_exact(capsys):
    with FakeNVML([SHARED]):
        code, doc = _run(capsys, "llama-3-8b", "--max-model-len", "8192")
    assert code == 1 and doc["starts"] is False and doc["exit_code"] == 1
    dev = doc["devices"][0]
    total, free = dev["cuda_total_bytes"], dev["free_bytes"]
    assert total == SHARED["mem_total"] - SHARED["mem_reserved"]  # cudaMemGetInfo's total, not nvidia-smi's
    assert math.ceil(total * 0.9) > free - CUDA_CONTEXT_BYTES  # vLLM's own check fails at 0.9
    assert "less than desired GPU memory utilization (0.9" in doc["reasons"][0]
    u = doc["max_utilization"]
    assert math.ceil(total * u) <= free - CUDA_CONTEXT_BYTES < math.ceil(total * (u + 0.01))
    # the KV figures at that value are vLLM's arithmetic on this device's memory read now
    dev_read = None
    with FakeNVML([SHARED]):
        dev_read = read_devices(["0"])[0]
    ref = startup(
        load_model("llama-3-8b"),
        gpu_for(dev_read),
        VllmSettings(max_model_len=8192, gpu_memory_utilization=u),
    )
    assert doc["at_max_utilization"]["kv_cache_tokens"] == ref.kv_cache_tokens > 0
    assert doc["at_max_utilization"]["max_concurrency"] == pytest.approx(ref.max_concurrency)
    # who holds what: both tenants, the unreadable one without a figure, the rest unattributed
    tenants = {t["pid"]: t for t in dev["tenants"]}
    assert tenants[4242]["used_bytes"] == 20 * GiB and tenants[4250]["used_bytes"] is None
    assert dev["unattributed_bytes"] == 10 * GiB
    assert any(r.startswith("time-sliced, not isolated: 2 other process(es)") for r in doc["risks"])
    assert any("cannot read the memory of pid 4250" in r for r in doc["risks"])


def test_the_utilisation_that_starts_exits_zero(capsys):
    with FakeNVML([SHARED]):
        code, first = _run(capsys, "llama-3-8b", "--max-model-len", "8192")
        u = first["max_utilization"]
        code, doc = _run(capsys, "llama-3-8b", "--max-model-len", "8192", "--gpu-memory-utilization", str(u))
    assert code == 0 and doc["starts"] and doc["reasons"] == []
    assert doc["at_utilization"]["kv_cache_tokens"] == first["at_max_utilization"]["kv_cache_tokens"]


def test_an_idle_gpu_starts_at_the_default_without_a_sharing_risk(capsys):
    with FakeNVML([IDLE]):
        code, doc = _run(capsys, "llama-3-8b")
    assert code == 0 and doc["starts"] and doc["utilization"] == 0.9
    assert doc["risks"] == [] and doc["devices"][0]["tenants"] == []
    assert doc["max_utilization"] >= 0.9


def test_text_output_names_who_holds_what_and_the_risk(capsys):
    with FakeNVML([SHARED]):
        code = main(["preflight", "vllm", "llama-3-8b", "--max-model-len", "8192"])
    out = capsys.readouterr().out
    assert code == 1
    assert "who holds what:" in out and "pid 4242" in out and "n/a (NVML cannot read it)" in out
    assert "largest --gpu-memory-utilization that starts: 0." in out
    assert "risk: time-sliced, not isolated" in out and "verdict: will not start (exit 1)" in out


def test_a_whole_gpu_in_mig_mode_is_refused_naming_its_slices(capsys):
    with FakeNVML([SLICES]):
        code = main(["preflight", "vllm", "llama-3-8b", "--device", "0"])
    err = capsys.readouterr().err
    assert code == 2 and "MIG mode" in err and "0:0 (MIG-fake-0)" in err and "0:1 (MIG-fake-1)" in err


def test_a_mig_slice_is_read_as_its_own_device(capsys):
    with FakeNVML([SLICES]):
        code, doc = _run(capsys, "llama-3-8b", "--max-model-len", "8192", "--device", "MIG-fake-1")
    assert code == 0
    dev = doc["devices"][0]
    assert dev["device"] == "0:1" and dev["mig"] and dev["total_bytes"] == 40_000_000_000
    assert dev["tenants"] == [] and doc["risks"] == []  # alone on its slice: no sharing risk


def test_a_shared_mig_slice_names_the_risk_within_the_slice():
    with FakeNVML([SLICES]):
        devs = read_devices(["0:0"], name_of=_names)
    r = preflight(load_model("llama-3-8b"), devs, VllmSettings(max_model_len=8192))
    assert devs[0].tenants[0].used_bytes is None  # NVML: N/A under MIG
    assert any("share MIG slice GPU 0 MIG 0" in x and "not from them" in x for x in r.risks)
    assert not any(x.startswith("time-sliced") for x in r.risks)


def test_a_process_list_nvml_refuses_leaves_co_tenants_unknown():
    gpu = {
        **SHARED,
        "unsupported": {"nvmlDeviceGetComputeRunningProcesses_v3": pynvml.NVML_ERROR_NO_PERMISSION},
    }
    with FakeNVML([gpu]):
        devs = read_devices(["0"])
    assert devs[0].tenants == () and devs[0].processes_note == "no permission"
    r = preflight(load_model("llama-3-8b"), devs, VllmSettings(max_model_len=8192))
    assert any("co-tenants unknown" in x for x in r.risks)


def test_a_model_that_fits_nowhere_next_to_the_tenants_has_no_utilisation_that_starts(capsys):
    full = {**DATACENTER, "mem_used": 70 * GiB, "processes": [(4242, 70 * GiB)]}
    with FakeNVML([full]):
        code, doc = _run(capsys, "llama-3-8b", "--max-model-len", "8192")
    assert code == 1 and doc["max_utilization"] is None and doc["at_max_utilization"] is None


def test_no_gpu_says_so_and_exits_one(capsys):
    with FakeNVML([DATACENTER], driver=False):
        code = main(["preflight", "vllm", "llama-3-8b"])
        out = capsys.readouterr().out
        code_json, doc = _run(capsys, "llama-3-8b")
    assert code == 1 and out.startswith("no NVIDIA GPU found (NVIDIA driver not loaded)")
    assert code_json == 1 and doc["gpu_found"] is False and doc["starts"] is False


@pytest.mark.parametrize(
    "args",
    [
        ["--device", "7"],
        ["--device", "0:9"],
        ["--tensor-parallel-size", "2", "--device", "0"],
        ["--gpu-memory-utilization", "0"],
        ["--context-mib", "-1"],
    ],
)
def test_bad_input_exits_two(capsys, args):
    with FakeNVML([IDLE]):
        assert main(["preflight", "vllm", "llama-3-8b", *args]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_tensor_parallel_reads_one_device_per_rank_and_the_tightest_bounds(capsys):
    with FakeNVML([IDLE, SHARED]):
        code, doc = _run(capsys, "llama-3-8b", "--tensor-parallel-size", "2", "--max-model-len", "8192")
    assert [d["device"] for d in doc["devices"]] == ["0", "1"]
    assert code == 1 and doc["max_utilization"] == min(d["max_utilization"] for d in doc["devices"])


def test_cgroups_name_the_container_or_pod(tmp_path):
    rows = {
        101: "0::/system.slice/docker-" + "ab" * 32 + ".scope\n",
        102: "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234abcd_5678_90ab_cdef_1234567890ab"
        ".slice/cri-containerd-" + "cd" * 32 + ".scope\n",
        103: "12:memory:/user.slice\n0::/user.slice/user-1000.slice/session-3.scope\n",
    }
    for pid, text in rows.items():
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "cgroup").write_text(text)
    assert cgroup_of(101, tmp_path) == ("/system.slice/docker-" + "ab" * 32 + ".scope", "docker " + "ab" * 6)
    path, who = cgroup_of(102, tmp_path)
    assert who == "pod 1234abcd-5678-90ab-cdef-1234567890ab, cri-containerd " + "cd" * 6
    assert cgroup_of(103, tmp_path) == ("/user.slice/user-1000.slice/session-3.scope", None)
    assert cgroup_of(999, tmp_path) == (None, None)  # hidden (another PID namespace): unknown, not guessed
    gpu = {**DATACENTER, "processes": [(101, GiB), (102, 2 * GiB)]}
    with FakeNVML([gpu]):
        dev = read_devices(["0"], proc_root=tmp_path, name_of=_names)[0]
    assert [t.container for t in dev.tenants] == ["docker " + "ab" * 6, who]


def test_a_wrong_device_count_is_a_spec_error():
    with FakeNVML([IDLE]):
        devs = read_devices(["0"])
    with pytest.raises(SpecError, match="device"):
        preflight(load_model("llama-3-8b"), devs, VllmSettings(tensor_parallel_size=2))


def test_cuda_visible_devices_picks_the_device_as_vllm_would_see_it(monkeypatch):
    other = {**IDLE, "uuid": "GPU-00000000-fake-second", "bus_id": "00000000:19:00.0"}
    with FakeNVML([SHARED, other]):
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-00000000-fake-sec")  # a unique prefix, as CUDA takes
        (dev,) = read_devices()
        assert dev.index == 1 and dev.tenants == ()
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
        assert [d.index for d in read_devices()] == [0]


def test_in_its_own_pid_namespace_host_pids_are_not_looked_up(tmp_path):
    """NVML lists host PIDs; inside a container the same numbers name other processes: no name, no
    cgroup, and a note saying why (the fake lists host PIDs with pid_offset, as a container sees them)."""
    (tmp_path / "self").mkdir()
    (tmp_path / "self" / "status").write_text("Name:\tpython\nNSpid:\t81234\t7\n")
    (tmp_path / "5242").mkdir()
    (tmp_path / "5242" / "cgroup").write_text("0::/system.slice/docker-" + "ab" * 32 + ".scope\n")
    with FakeNVML([SHARED], pid_offset=1000):
        (dev,) = read_devices(["0"], proc_root=tmp_path)
    assert [(t.pid, t.name, t.cgroup) for t in dev.tenants] == [(5242, "?", None), (5250, "?", None)]
    assert dev.names_note and "own PID namespace" in dev.names_note
    (tmp_path / "self" / "status").write_text("Name:\tpython\nNSpid:\t81234\n")  # the host's namespace
    with FakeNVML([SHARED], pid_offset=1000):
        (dev,) = read_devices(["0"], proc_root=tmp_path)
    assert dev.names_note is None and dev.tenants[0].container == "docker " + "ab" * 6


def test_a_gpu_that_passes_the_free_memory_check_but_holds_no_request_says_why(capsys):
    """An idle GPU, and a model whose weights leave no KV cache at 0.9: the free-memory rule passes, vLLM's
    own KV check (sizing.vllm.refusal, the one rule) refuses, and the reason says so in vLLM's terms."""
    with FakeNVML([IDLE]):
        code, doc = _run(capsys, "llama-3-70b", "--max-model-len", "8192")
    assert code == 1 and doc["starts"] is False
    assert doc["reasons"][0].startswith("at utilization 0.9, vLLM refuses to start: no available memory")
    with FakeNVML([IDLE]):
        code, doc = _run(capsys, "llama-3-8b", "--max-model-len", "131072", "--gpu-memory-utilization", "0.3")
    assert code == 1 and "estimated maximum model length is" in doc["reasons"][0]
