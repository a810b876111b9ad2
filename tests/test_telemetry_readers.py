"""GPU and host readers against the fake NVML (tests/fake_nvml.py) and a fake psutil."""

from __future__ import annotations

import importlib
import json
from types import SimpleNamespace

import pytest
from fake_nvml import CONSUMER, DATACENTER, MIG, OLD_DRIVER, FakeNVML

from aiworkbook.telemetry.gpu_metrics import FIELDS, decode_throttle
from aiworkbook.telemetry.gpu_reader import GPUReader
from aiworkbook.telemetry.host_reader import HOST_FIELDS, HostReader
from aiworkbook.telemetry.na import NA, is_na, is_number

# the package exports the function environment(); the module is reached through importlib
env_mod = importlib.import_module("aiworkbook.telemetry.environment")


@pytest.fixture
def fleet():
    from aiworkbook.telemetry.sampler import reset_shared_sampler

    # environment() prefers the shared sampler's live reader: forget one an earlier test opened
    reset_shared_sampler()
    with FakeNVML([DATACENTER, MIG, CONSUMER, OLD_DRIVER]) as fake:
        env_mod.reset()
        yield fake
    env_mod.reset()
    reset_shared_sampler()


def _value_or_na(v) -> bool:
    return isinstance(v, NA) or is_number(v) or isinstance(v, bool | list)


def test_every_metric_is_a_value_or_a_marked_na(fleet):
    reader = GPUReader(clock=fleet.clock)
    assert reader.status().startswith("4 NVIDIA GPU(s): NVIDIA H100 80GB HBM3")
    for row in reader.read_all():
        assert set(FIELDS) <= set(row)
        bad = {k: v for k, v in row.items() if k != "index" and not _value_or_na(v)}
        assert not bad


def test_profile_specific_gaps_carry_their_reason(fleet):
    reader = GPUReader(clock=fleet.clock)
    dc, mig, consumer, old = reader.read_all()
    assert dc["util_gpu_pct"] == 87.0 and dc["ecc_aggregate_corrected"] == 12 and dc["nvlink_active"] == 18
    assert mig["util_gpu_pct"] == NA("not supported") and mig["remapped_correctable"] == NA("not supported")
    assert consumer["ecc_volatile_corrected"] == NA("not supported")
    assert consumer["remapped_uncorrectable"] == NA("not supported")
    assert consumer["nvlink_active"] == NA("not supported")
    # an R470-era driver lacks the ClocksEventReasons symbol: the deprecated ThrottleReasons answers
    assert old["throttle_reasons"] == ["gpu_idle", "sw_power_cap"] and old["throttle_mask"] == 0x5
    assert old["mem_reserved_bytes"] == NA("memory info v2 not available")
    assert old["mem_used_bytes"] == DATACENTER["mem_used"] + DATACENTER["mem_reserved"]  # v1 counts it
    assert old["processes"][0]["pid"] == 4242  # the _v2 binding after NVMLLibraryMismatchError
    assert old["energy_mj"] == NA("not supported") and is_na(old["power_avg_w"])
    assert dc["throttle_reasons"] == ["sw_power_cap"] and consumer["throttle_reasons"] == ["gpu_idle"]
    assert dc["pcie_tx_bps"] == 1000 * 1024.0  # NVML reports KB/s
    assert dc["mem_reserved_bytes"] == DATACENTER["mem_reserved"]
    caps = reader.capabilities()
    assert caps[0]["utilization"] == "ok" and caps[1]["utilization"] == "not supported"
    assert caps[2]["ecc"] == "not supported" and caps[3]["energy"] == "not supported"
    assert caps[3]["throttle"] == "ok" and caps[3]["processes"] == "ok"
    assert fleet.unstubbed == []  # every NVML call the readers made was answered by the fake


def test_unsupported_groups_are_not_polled_again(fleet):
    reader = GPUReader(clock=fleet.clock)
    reader.read_all()
    calls = []
    orig = fleet._nvmlDeviceGetUtilizationRates

    def counting(p):
        calls.append(p["name"])
        return orig(p)

    fleet._nvmlDeviceGetUtilizationRates = counting
    import pynvml

    pynvml.nvmlDeviceGetUtilizationRates = fleet._stub(
        "nvmlDeviceGetUtilizationRates", fleet._saved["nvmlDeviceGetUtilizationRates"]
    )
    reader.read_all()
    assert "NVIDIA A100-SXM4-80GB" not in calls  # MIG: probed once as unsupported
    assert "NVIDIA H100 80GB HBM3" in calls


def test_identity_with_mig_instances(fleet):
    reader = GPUReader(clock=fleet.clock)
    ident = reader.identity(1)
    assert ident["mig_mode"] == "enabled" and ident["compute_capability"] == "8.0"
    assert [m["uuid"] for m in ident["mig_instances"]] == ["MIG-fake-0", "MIG-fake-1"]
    assert ident["cuda_driver"] == "12.4" and ident["driver"] == "550.54.15"
    assert reader.identity(0)["mig_instances"] == []
    assert reader.identity(3)["name"] == "NVIDIA GeForce GTX 1080"


def test_power_rate_from_energy_counter_deltas(fleet):
    reader = GPUReader(clock=fleet.clock)
    first = reader.read(0)
    assert is_na(first["power_avg_w"]) and "first sample" in first["power_avg_w"].reason
    fleet.profiles[0]["power_mw"] = 250_000
    fleet.advance(2.5)
    assert reader.read(0)["power_avg_w"] == pytest.approx(250.0)
    fleet.profiles[0]["energy_mj"] = 0  # counter reset (driver reload)
    fleet.advance(1.0)
    assert reader.read(0)["power_avg_w"] == NA("counter reset")


def test_lost_gpu_does_not_stop_the_others(fleet):
    reader = GPUReader(clock=fleet.clock)
    reader.read_all()
    fleet.lose(0)
    fleet.advance(1.0)
    rows = reader.read_all()
    assert rows[0]["power_w"] == NA("GPU is lost") and rows[0]["util_gpu_pct"] == NA("GPU is lost")
    assert rows[2]["power_w"] == 412.0
    before = fleet.calls
    reader.read(0)
    assert fleet.calls == before  # a lost GPU is not asked again
    assert reader.lost() == {0}


def test_no_driver_gives_a_clear_state():
    with FakeNVML([DATACENTER], driver=False):
        env_mod.reset()
        reader = GPUReader()
        assert reader.status() == "no NVIDIA GPU found (NVIDIA driver not loaded)"
        assert reader.count() == 0 and reader.read_all() == []
        assert env_mod.gpu_available() is False
        env = env_mod.environment()
        assert env["gpus"] == [] and env["gpu_status"].startswith("no NVIDIA GPU found")
    env_mod.reset()


def test_environment_contract(fleet):
    env = env_mod.environment()
    json.dumps(env)  # JSON-safe
    assert env_mod.gpu_available() is True
    assert env["gpu_status"].startswith("4 NVIDIA GPU(s)")
    g0, g1 = env["gpus"][0], env["gpus"][1]
    for key in ("index", "name", "uuid", "driver", "cuda_driver", "sm_clock_mhz", "sm_clock_max_mhz",
                "mem_clock_mhz", "power_limit_w", "throttle_reasons", "temperature_c"):  # fmt: skip
        assert key in g0
    assert g0["throttle_reasons"] == ["sw_power_cap"] and g0["throttled"] is False  # at its power limit
    assert [n["level"] for n in g0["throttle_notes"]] == ["info"]
    assert g0["power_limit_w"] == 700.0 and g0["temperature_c"] == 54.0
    assert g1["util_gpu_pct"] == {"na": "not supported"}
    assert env["gpus"][3]["throttle_reasons"] == ["gpu_idle", "sw_power_cap"]  # the deprecated symbol
    assert env["gpus"][3]["throttled"] is False
    for key in ("cpu_model", "cores", "threads", "ram_bytes"):
        assert key in env["host"]


def test_xid_events_become_a_timeline(fleet):
    from aiworkbook.telemetry.events import EventTimeline

    reader = GPUReader(clock=fleet.clock)
    tl = EventTimeline(reader.handles())
    assert tl.poll() == []
    fleet.inject_xid(2, 79)
    fleet.inject_xid(0, 48)
    new = tl.poll()
    assert [(e["gpu"], e["xid"]) for e in new] == [(2, 79), (0, 48)]
    assert new[0]["description"] == "GPU has fallen off the bus"
    assert len(tl.events) == 2 and tl.poll() == []


def test_subsecond_history_from_nvml_samples(fleet):
    reader = GPUReader(clock=fleet.clock)
    rows = reader.history(0, "power")
    assert len(rows) == 10 and rows[-1] == (int(fleet.now * 1e6), 412.0)
    assert reader.history(0, "gpu_util", since_us=rows[-3][0]) == [(t, 87.0) for t, _ in rows[-2:]]
    assert reader.history(1, "power") == NA("not supported")
    with pytest.raises(ValueError, match="kind"):
        reader.history(0, "fan")


def test_decode_throttle_names_every_bit():
    assert decode_throttle(0) == []
    assert decode_throttle(0x4 | 0x40) == ["sw_power_cap", "hw_thermal_slowdown"]
    assert decode_throttle(0x1000) == ["bit_0x1000"]


class FakePsutil:
    """Counters under the test's control."""

    def __init__(self):
        self.disk = SimpleNamespace(
            read_bytes=0, write_bytes=0, read_time=0, write_time=0, read_count=0, write_count=0
        )
        self.net = SimpleNamespace(bytes_recv=0, bytes_sent=0, errin=1, errout=2, dropin=0, dropout=3)

    def cpu_percent(self, percpu=False):
        return [10.0, 30.0]

    def virtual_memory(self):
        return SimpleNamespace(total=1000, available=400)

    def swap_memory(self):
        raise PermissionError("no /proc/swaps")

    def disk_io_counters(self):
        return self.disk

    def net_io_counters(self):
        return self.net


def test_host_rates_latency_and_failures():
    ps, now = FakePsutil(), [0.0]
    reader = HostReader(clock=lambda: now[0], psutil_module=ps)
    first = reader.read()
    assert set(HOST_FIELDS) == set(first)
    assert is_na(first["disk_read_bps"]) and first["cpu_pct"] == 20.0 and first["ram_used_bytes"] == 600
    assert first["swap_used_bytes"] == NA("PermissionError: no /proc/swaps")
    ps.disk = SimpleNamespace(
        read_bytes=4_000_000, write_bytes=0, read_time=30, write_time=0, read_count=10, write_count=0
    )
    ps.net = SimpleNamespace(bytes_recv=2_000, bytes_sent=500, errin=1, errout=2, dropin=0, dropout=3)
    now[0] = 2.0
    r = reader.read()
    assert r["disk_read_bps"] == 2_000_000.0 and r["disk_write_bps"] == 0.0
    assert r["disk_read_latency_ms"] == 3.0 and r["disk_write_latency_ms"] == NA("no writes in the interval")
    assert (
        r["net_rx_bps"] == 1000.0
        and r["net_tx_bps"] == 250.0
        and r["net_errors"] == 3
        and r["net_drops"] == 3
    )


def test_host_cpu_is_read_at_most_every_half_second():
    calls = []

    class CountingPsutil(FakePsutil):
        def cpu_percent(self, percpu=False):
            calls.append(percpu)
            return [float(len(calls)), 0.0]

    now = [0.0]
    reader = HostReader(clock=lambda: now[0], psutil_module=CountingPsutil())
    primed = len(calls)  # the constructor primes psutil's deltas once
    seen = []
    for _ in range(10):  # 10 Hz for one second
        seen.append(reader.read()["cpu_pct"])
        now[0] += 0.1
    assert len(calls) - primed == 2  # at t=0.0 and t=0.5
    assert seen[0] == seen[4] != seen[5] == seen[9]


@pytest.mark.parametrize(
    "reasons,expected",
    [
        ([], False),
        (["gpu_idle"], False),
        (["applications_clocks_setting", "display_clock_setting", "sync_boost"], False),
        (["sw_power_cap"], False),
        (["gpu_idle", "hw_slowdown"], True),
        (["sw_power_cap", "sw_thermal_slowdown"], True),
        (["hw_power_brake_slowdown"], True),
        (["bit_0x1000"], True),
    ],
)
def test_one_throttled_definition_for_telemetry_and_proofs(reasons, expected):
    """telemetry's environment() flag and the proofs' verdict come from gpu_metrics.is_throttled."""
    from aiworkbook.proofs.environment import throttle_check, throttled
    from aiworkbook.telemetry.gpu_metrics import THROTTLE_REASONS, decode_throttle, is_throttled

    mask = sum(b for b, n in THROTTLE_REASONS.items() if n in reasons) | (
        0x1000 if "bit_0x1000" in reasons else 0
    )
    assert sorted(decode_throttle(mask)) == sorted(reasons)  # only names the decoder produces
    assert is_throttled(reasons) is expected
    assert throttled({"gpus": [{"throttle_reasons": reasons}]}) is expected
    share = {"gpu0": {r: 0.5 for r in reasons}}
    import aiworkbook.proofs.environment as penv

    orig = penv.throttle_window
    penv.throttle_window = lambda since: share
    try:
        assert throttle_check({"gpus": []}, 0.0, {}) is expected
    finally:
        penv.throttle_window = orig
    assert is_throttled({"na": "not supported"}) is None


def test_monitor_table_rates_are_decimal_like_every_other_rate():
    from aiworkbook.telemetry.sample import Sample
    from aiworkbook.telemetry.table import render_table
    from aiworkbook.units import fmt_rate

    host = {"disk_read_bps": 2.5e6, "disk_write_bps": 1.5e9, "net_rx_bps": 800.0, "net_tx_bps": NA("x")}
    text = render_table(Sample(t=0.0, wall=0.0, gpus=[], host=host))
    assert f"disk r {fmt_rate(2.5e6, 'auto')} w {fmt_rate(1.5e9, 'auto')}" in text
    assert "disk r 2.5 MB/s w 1.50 GB/s" in text and "tx n/a" in text and "MiB/s" not in text


def test_host_facts_collected_by_one_function():
    """detect(), telemetry's environment and the proofs' fallback share specs.detection.host_facts."""
    from aiworkbook.proofs.environment import _host
    from aiworkbook.specs.detection import detect, host_facts
    from aiworkbook.telemetry.environment import host_info

    facts = host_facts()
    assert host_info().keys() == facts.keys() == _host().keys()
    node = detect()
    assert (node.cpu_model, node.cpu_cores, node.cpu_threads, node.ram_bytes) == (
        facts["cpu_model"],
        facts["cores"],
        facts["threads"],
        facts["ram_bytes"],
    )
    assert (node.torch_version, node.cuda_version) == (facts["torch_version"], facts["torch_cuda"])
