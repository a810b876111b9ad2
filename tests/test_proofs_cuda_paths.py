"""The CUDA paths of the proofs, run on the CPU: real proofs and real CPU tensors, with the device-specific
calls (torch.cuda's memory figures and events, NVML) answered by a small fake GPU. What runs is the
proofs' own CUDA logic: selection, the NVML baseline before CUDA initialises, the fit refusal against a
given free-memory figure, the caught out-of-memory, the peak bookkeeping and the result fields."""

from __future__ import annotations

import gc
import os
import sys
import weakref
from pathlib import Path

import pytest
import torch

from aiworkbook.proofs import device as D
from aiworkbook.proofs import kv as KV
from aiworkbook.proofs import roofline as RL
from aiworkbook.proofs import timing as T
from aiworkbook.proofs import vram as V
from aiworkbook.proofs.device import DoesNotFit, WouldNotFit, oom_guard, resolve_device

sys.path.insert(0, str(Path(__file__).parent))
from fake_nvml import DATACENTER, FakeNVML  # noqa: E402

GiB = 2**30


class FakeGPU:
    """One device as torch.cuda and NVML would see it. Nothing exists until torch "initialises" (first
    memory call): then the CUDA context takes `context` bytes; every mem_get_info reading after that
    finds the caching allocator `grow` bytes bigger (it only grows), and NVML's `used` is
    others + context + reserved, so both views describe the same device.

    Allocated bytes follow the proof's real (CPU) tensors: from `start` (the fixture's set-up: a
    dispatch mode pushed inside torch.inference_mode would be dropped when that guard restores its
    dispatch keys) a dispatch-level tracker (memory_accounting.StepTemporaryTracker) counts every storage created and
    freed, so memory_allocated and max_memory_allocated are what the allocator would have handed out
    (no block rounding, no cuBLAS workspace: those differ on a real GPU)."""

    def __init__(self, nvml, *, total=80 * GiB, others=1 * GiB, context=500 * 2**20, grow=256 * 2**20):
        self.nvml, self.total, self.others, self.context, self.grow = nvml, total, others, context, grow
        self.initialised = False
        self.reserved = 0
        self.allocated = 0
        self.tracker = None  # started by the first reset_peak_memory_stats
        self.peaks_read: list[int] = []
        self.calls: dict[str, int] = {}
        self._sync()

    def _count(self, name):
        self.calls[name] = self.calls.get(name, 0) + 1

    def _init(self):
        self.initialised = True
        self._sync()

    def _sync(self):
        used = self.others + (self.context + self.reserved if self.initialised else 0)
        p = self.nvml.profiles[0]
        p["mem_used"], p["mem_reserved"] = used, 0
        p["processes"] = [(os.getpid(), used - self.others)] if self.initialised else []

    # torch.cuda
    def is_initialized(self):
        return self.initialised

    def mem_get_info(self, device=None):
        self._count("mem_get_info")
        if not self.initialised:
            self._init()
        else:
            self.reserved += self.grow
            self._sync()
        return self.total - self.others - self.context - self.reserved, self.total

    def memory_reserved(self, device=None):
        return self.reserved

    def memory_allocated(self, device=None):
        self._count("memory_allocated")
        if self.allocated or self.tracker is None:  # a figure the test set wins
            return self.allocated
        return self.tracker.now

    def start(self):
        from aiworkbook.proofs.memory_accounting import StepTemporaryTracker

        self.tracker = StepTemporaryTracker().__enter__()

    def reset_peak_memory_stats(self, device=None):
        self._count("reset_peak_memory_stats")
        self._init()
        self.tracker.peak = self.tracker.now  # the peak restarts from what is live

    @property
    def peak_allocated(self) -> int:
        return self.tracker.peak if self.tracker is not None else 0

    def max_memory_allocated(self, device=None):
        self.peaks_read.append(self.peak_allocated)
        return self.peak_allocated

    def stop(self):
        if self.tracker is not None:
            self.tracker.__exit__(None, None, None)
            self.tracker = None

    def max_memory_reserved(self, device=None):
        return self.reserved

    def synchronize(self, device=None):
        self._count("synchronize")

    def empty_cache(self):
        self._count("empty_cache")


@pytest.fixture
def gpu(monkeypatch):
    """A fake CUDA device under the proofs: CUDA 'present', NVML answering, tensors on the CPU."""
    profile = dict(DATACENTER, name="NVIDIA H200", mem_total=80 * GiB)
    with FakeNVML([profile]) as nvml:
        g = FakeGPU(nvml)
        for name in (
            "is_initialized",
            "mem_get_info",
            "memory_reserved",
            "memory_allocated",
            "reset_peak_memory_stats",
            "max_memory_allocated",
            "max_memory_reserved",
            "synchronize",
            "empty_cache",
        ):
            monkeypatch.setattr(torch.cuda, name, getattr(g, name))
        monkeypatch.setattr(torch.cuda, "Event", _FakeEvent)  # timed trials read the "GPU clock"
        monkeypatch.setattr(D, "cuda_available", lambda: True)
        monkeypatch.setattr(D, "_cuda_name", lambda: "NVIDIA H200 (fake)")
        monkeypatch.setattr(D, "_BASELINE", None)
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        for mod in (V, KV):
            monkeypatch.setattr(mod, "tensor_device", lambda dev: "cpu")
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: True)
        g.start()
        try:
            yield g
        finally:
            g.stop()


def test_auto_picks_cuda_and_reads_nvml_before_cuda_initialises(gpu):
    c = resolve_device("auto")
    assert c.device == "cuda" and c.flags == () and "NVIDIA H200 (fake)" in c.reason
    base = D.nvml_baseline()
    assert base["used"] == gpu.others and base["uuid"] == DATACENTER["uuid"]
    assert not gpu.initialised  # the reading came first
    gpu._init()
    assert D.record_nvml_baseline() is base  # once per process: later calls keep the first reading


def test_baseline_is_refused_once_torch_has_initialised_cuda(gpu):
    gpu._init()
    assert D.record_nvml_baseline() is None and D.nvml_baseline() is None


def test_free_memory_counts_this_process_cache_as_free(gpu):
    free, total = D.free_memory("cuda")
    gpu.reserved, gpu.allocated = 2 * GiB, GiB // 2
    free2, _ = D.free_memory("cuda")
    assert total == gpu.total
    assert free2 == free - GiB // 2  # cached blocks (reserved - allocated) stay ours to reuse: free


def test_refusal_against_the_free_memory_before_anything_is_allocated(gpu, monkeypatch):
    gpu.others = gpu.total - 3 * GiB  # 3 GiB free on the device
    gpu._sync()
    with pytest.raises(WouldNotFit, match="llama-3-8b.*nothing was allocated"):
        V.prove_vram("llama-3-8b", device="cuda", proxy=False)
    assert "reset_peak_memory_stats" not in gpu.calls  # refused before the allocating part began


def test_proxy_is_the_deepest_that_fits_the_cuda_budget():
    from aiworkbook.specs import load_model

    spec = load_model("llama-3-8b")
    w = V._workload(batch=1, seq_len=4096, precision="bf16-mixed", recipe="fp32-adamw", attention="sdpa")
    budget = int(0.9 * 139 * GiB)
    run, est, note = V.fit_proxy(spec, w, "cuda", budget)
    assert V._estimate(spec, w, "cuda").memory.total > budget  # 16 B/param x 8 B does not fit an H200
    assert 1 <= run.num_layers < spec.num_layers and est.memory.total <= budget
    deeper = V._estimate(spec.scaled(num_layers=run.num_layers + 1), w, "cuda").memory.total
    assert deeper > budget and f"{run.num_layers} of 32 layers" in note


def test_cuda_oom_is_caught_and_the_cache_emptied(gpu):
    with pytest.raises(DoesNotFit, match="does not fit at step 2: CUDA out of memory"):
        with oom_guard("step 2", "cuda"):
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    assert gpu.calls["empty_cache"] == 1


def test_vram_oom_mid_training_reports_does_not_fit_and_frees_the_model(gpu, monkeypatch):
    refs = []

    def step(self, *a, **k):
        refs.extend(weakref.ref(p) for grp in self.param_groups for p in grp["params"])
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 MiB")

    monkeypatch.setattr(torch.optim.AdamW, "step", step)
    r = V.prove_vram("tiny-llama", device="cuda", quick=True, seq_len=32, precision="fp32")
    assert r.verdict == "does-not-fit" and r.measured is None
    assert any("does not fit at step 1, batch 1 x 32 tokens" in n for n in r.notes)
    assert gpu.calls["empty_cache"] >= 1
    gc.collect()
    assert refs and not [x for x in refs if x() is not None]


def _expected_prediction(spec_name, seq, precision, recipe):
    from aiworkbook.sizing import estimate
    from aiworkbook.specs import load_model

    w = V._workload(
        batch=1, seq_len=seq, precision=precision, recipe=recipe, attention="sdpa", checkpointing="none"
    )
    mem = estimate(load_model(spec_name), w, gpu=None, device="cuda").memory
    return mem, int(mem.total - mem.cuda_context - mem.reserve)


def test_vram_peak_bookkeeping_and_result_fields(gpu):
    resolve_device("cuda")  # what a process does first: the NVML baseline precedes CUDA's context
    r = V.prove_vram("tiny-llama", device="cuda", quick=True, seq_len=32, steps=2, precision="fp32")
    cuda = r.details["cuda"]
    mem, predicted = _expected_prediction("tiny-llama", 32, "fp32", "fp32-adamw")
    assert r.device == "cuda" and r.inputs["precision"] == "fp32" and r.inputs["recipe"] == "fp32-adamw"
    assert r.predicted == predicted and cuda["predicted_total"] == mem.total
    assert r.measured == cuda["peak_allocated"] == gpu.peak_allocated
    assert cuda["peak_reserved"] == gpu.reserved
    # 2 steps x 2 readings after the first (which created the context): the allocator grew 4 times
    assert cuda["device_delta_torch"] == 4 * gpu.grow
    # NVML against the pre-CUDA baseline: the same growth plus the context and what was cached before
    assert cuda["device_delta_method"] == "nvml-baseline" and cuda["device_delta_includes_context"]
    assert cuda["device_delta"] == gpu.context + gpu.reserved
    assert cuda["device_delta"] - cuda["device_delta_torch"] == gpu.context + gpu.grow
    assert cuda["process_used_at_peak"] == gpu.context + gpu.reserved  # NVML listed our pid
    assert "context-excluded" not in r.flags and "cpu-fallback" not in r.flags
    assert r.verdict == ("pass" if abs(gpu.peak_allocated / predicted - 1) <= 0.10 else "fail")
    assert gpu.calls["synchronize"] >= 4 and gpu.calls["reset_peak_memory_stats"] == 1
    rows = {row["component"]: row for row in r.details["components"]}
    assert rows["weights"]["measured"] == rows["weights"]["predicted"]  # fp32 weights, counted


def test_vram_without_a_baseline_flags_context_excluded(gpu):
    gpu._init()  # torch initialised CUDA before the proof: too late for the baseline
    r = V.prove_vram("tiny-llama", device="cuda", quick=True, seq_len=32, steps=2, precision="fp32")
    cuda = r.details["cuda"]
    assert cuda["device_delta_method"] == "mem_get_info" and not cuda["device_delta_includes_context"]
    assert cuda["device_delta"] == cuda["device_delta_torch"] == 4 * gpu.grow
    assert "context-excluded" in r.flags


def test_device_delta_falls_back_when_nvml_reads_another_gpu():
    m = {"device_delta_torch": 10, "nvml_used_at_peak": 500, "nvml_uuid": "GPU-a"}
    assert V.device_delta(m, {"used": 100, "uuid": "GPU-a"}, "GPU-a") == (400, "nvml-baseline")
    assert V.device_delta(m, {"used": 100, "uuid": "GPU-a"}, "GPU-b") == (10, "mem_get_info")
    assert V.device_delta(m, None, "GPU-a") == (10, "mem_get_info")


def test_kv_grid_on_cuda_records_allocator_peaks(gpu):
    state = {"n": 0}

    def allocated(device=None):  # grows as the capacity loop allocates sequences
        state["n"] += 1
        return state["n"] * 2**20

    gpu.memory_allocated = allocated
    torch.cuda.memory_allocated = allocated
    r = KV.prove_kv(
        "tiny-llama", device="cuda", batches=(1, 2), contexts=(16, 32), new_tokens=2, budget_bytes=64 * 2**20
    )
    ok = [g for g in r.details["grid"] if "kv_measured" in g]
    assert len(ok) == 4 and all(g["kv_ratio"] == pytest.approx(1.0) for g in ok)
    for g in ok:
        tiny = KV.load_model("tiny-llama")
        mem = KV._estimate(tiny, KV._workload(tiny, g["batch"], g["context"], 2, "bf16"), "cuda")
        pred = int(mem.memory.total - mem.memory.cuda_context - mem.memory.reserve)
        assert g["peak_allocated"] in gpu.peaks_read and g["total_predicted_allocated"] == pred
        assert g["peak_allocated"] > 0  # followed the grid point's real tensors
    assert gpu.calls["reset_peak_memory_stats"] >= 5  # warm-up + one per grid point
    assert r.inputs["dtype"] == "bf16" and "peak_allocated per grid point" in " ".join(r.notes)
    assert r.details["capacity"]["measured"] >= 1


def test_kv_decode_is_timed_with_cuda_events(gpu):
    """Decode steps go through time_trials: on CUDA each step is bracketed by CUDA events (the fake
    clock advances 2.5 ms between records), not perf_counter around a synchronize."""
    r = KV.prove_kv(
        "tiny-llama", device="cuda", batches=(1,), contexts=(16,), new_tokens=3, budget_bytes=64 * 2**20
    )
    (g,) = r.details["grid"]
    assert g["timing_method"] == "cuda-events" and g["decode_steps"] == 3
    assert g["decode_step_s_median"] == pytest.approx(0.0025) and g["prefill_s"] == pytest.approx(0.0025)
    assert g["tokens_cached"] == 16 + 3  # no untimed warm-up step grew the cache


def test_prefill_keeps_only_the_last_logits():
    from aiworkbook.proofs.model import DecoderModel, KVCache
    from aiworkbook.specs import load_model

    spec = load_model("tiny-llama")
    m = DecoderModel(spec).eval()
    ids = torch.randint(0, spec.vocab_size, (2, 12))
    with torch.no_grad():
        full = m(ids, cache=KVCache(spec.num_layers))
        last = m(ids, cache=KVCache(spec.num_layers), logits_to_keep=1)
    assert full.shape == (2, 12, spec.vocab_size) and last.shape == (2, 1, spec.vocab_size)
    torch.testing.assert_close(last, full[:, -1:])


class _FakeEvent:
    now = 0.0

    def __init__(self, enable_timing=False):
        assert enable_timing
        self.t = None

    def record(self, stream=None):
        _FakeEvent.now += 0.0025  # the GPU clock advances 2.5 ms between consecutive records
        self.t = _FakeEvent.now

    def synchronize(self):
        pass

    def elapsed_time(self, end):  # milliseconds, as torch.cuda.Event reports
        return (end.t - self.t) * 1e3


def test_cuda_timing_uses_events_and_converts_ms_to_seconds(monkeypatch):
    syncs = []
    monkeypatch.setattr(torch.cuda, "Event", _FakeEvent)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: syncs.append(1))
    calls = []
    t = T.time_trials(lambda: calls.append(1), device="cuda", warmup=2, trials=4)
    assert t.method == "cuda-events" and len(calls) == 6 and syncs
    assert t.samples == pytest.approx([0.0025] * 4) and t.median == pytest.approx(0.0025)


def test_tf32_flag_is_set_inside_and_restored_with_the_new_api():
    m = torch.backends.cuda.matmul
    before = m.fp32_precision
    seen = []
    with RL.fp32_matmul_precision(True, "cuda"):
        seen.append(m.fp32_precision)
    with RL.fp32_matmul_precision(False, "cuda"):
        seen.append(m.fp32_precision)
    assert seen == ["tf32", "ieee"] and m.fp32_precision == before
    m.allow_tf32  # noqa: B018  the legacy getter still works: the flag went back to where it was
    with RL.fp32_matmul_precision(True, "cpu"):
        assert m.fp32_precision == before  # no-op off CUDA


def test_matmul_precision_is_recorded_without_the_legacy_getter():
    from aiworkbook.proofs.environment import matmul_flags

    m = torch.backends.cuda.matmul
    before = m.fp32_precision
    m.fp32_precision = "tf32"
    try:
        with pytest.raises(RuntimeError):
            m.allow_tf32  # noqa: B018  torch >= 2.9: mixing the APIs raises
        assert matmul_flags()["fp32_precision"] == "tf32"
    finally:
        m.fp32_precision = before


def test_fp8_scaled_mm_call_and_shape_rule():
    out = RL.matmul_rates("cpu", ["fp8"], shapes=[32, 40], trials=1)["fp8"]
    assert out["per_shape_flops"]["32"] > 0 and "40" not in out["per_shape_flops"]
    assert "divisible by 16" in out["note"] and "_scaled_mm" in out["note"]
    assert RL._reps("cuda", 2048) == 8 and RL._reps("cuda", 8192) == 1 and RL._reps("cpu", 128) == 1


def test_calibrated_h200_spec_takes_tf32_and_fp8(monkeypatch):
    from aiworkbook.specs import GPUSpec

    class Props:
        name, total_memory, major, minor = "NVIDIA H200", 150_754_820_096, 9, 0

    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: Props)
    base = RL.datasheet_spec()
    assert base.name == "H200-SXM"
    flops = {"fp32": 5.0e13, "tf32": 3.5e14, "bf16": 7.9e14, "fp16": 7.8e14, "fp8": 1.3e15}
    ceilings = {
        "bandwidth": {"read_bps": 4.3e12, "cache_bytes": 60 * 2**20},
        "matmul": {k: {"ceiling_flops": v} for k, v in flops.items()},
    }
    cal = GPUSpec.model_validate(RL.calibrated_spec(ceilings, "cuda", base).model_dump(mode="json"))
    assert cal.measured and cal.name == "H200-SXM (measured)" and cal.memory_bandwidth_bps == 4.3e12
    assert cal.peak_flops("tf32") == 3.5e14 and cal.peak_flops("fp8") == 1.3e15
    rows = RL.roofline_chart_data(cal, {"intensity": 1.0}, label="llama-3-8b")
    assert {r["dtype"] for r in rows} >= {"tf32", "fp8"} and rows[-1]["bound"] == "memory"


def test_throttle_reasons_from_the_snapshot():
    from aiworkbook.proofs.environment import throttle_check

    busy = {"gpus": [{"throttle_reasons": ["sw_power_cap", "hw_thermal_slowdown"]}]}
    idle = {"gpus": [{"throttle_reasons": ["gpu_idle", "sync_boost", "sw_power_cap"]}]}
    assert throttle_check(busy, None, {}) and not throttle_check(idle, None, {})
