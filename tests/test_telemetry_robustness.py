"""Robustness of the telemetry: lazy NVML, shutdown at exit, one bad GPU among good ones, a shared
sampler driven from many threads, bounded buffers, NA through every export, corrupt traces."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from fake_nvml import CONSUMER, DATACENTER, MIG, OLD_DRIVER, FakeNVML

from aiworkbook.errors import SpecError
from aiworkbook.telemetry.export import JsonlLog, to_csv, to_dataframe, to_jsonl
from aiworkbook.telemetry.gpu_reader import GPUReader
from aiworkbook.telemetry.na import NA, is_na
from aiworkbook.telemetry.replay import load_trace, trace_header
from aiworkbook.telemetry.sampler import Sampler

ROOT = Path(__file__).resolve().parents[1]


def _run(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": f"{ROOT}{':'}{ROOT / 'tests'}", "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_import_does_not_touch_nvml():
    out = _run(
        """
        import sys
        import aiworkbook.telemetry
        import aiworkbook.telemetry.sampler, aiworkbook.telemetry.gpu_reader, aiworkbook.telemetry.events
        import aiworkbook.telemetry.environment, aiworkbook.telemetry.openmetrics, aiworkbook.cli.monitor_cmds
        import aiworkbook.specs.detection, aiworkbook.proofs.device
        from aiworkbook import nvml
        print("pynvml" in sys.modules, nvml._state)
        """
    )
    assert out.split() == ["False", "None"]


def test_nvml_is_shut_down_at_exit_and_not_reopened_by_a_late_poll():
    out = _run(
        """
        import atexit
        from fake_nvml import DATACENTER, FakeNVML
        fake = FakeNVML([DATACENTER]).install()

        def report():  # registered first, so atexit runs it last
            from aiworkbook.telemetry import nvml_backend
            late = nvml_backend.call("nvmlDeviceGetCount")  # a daemon sampler's tick after the hook
            print(fake.called["nvmlInitWithFlags"], fake.called["nvmlShutdown"], late)
        atexit.register(report)

        from aiworkbook.telemetry.sampler import Sampler
        s = Sampler(interval=0.1, host=False).start()  # left running: a daemon thread at exit
        s.sample_now()
        """
    )
    init, shutdown, late = out.split(maxsplit=2)
    assert (init, shutdown) == ("1", "1")
    assert "shut down" in late  # NA(...), not a second nvmlInit


def test_detection_telemetry_and_proofs_share_one_nvml_init():
    """specs/detection, the telemetry reader and proofs/device.nvml_reading go through aiworkbook.nvml:
    NVML is initialised once per process and not shut down between readings."""
    out = _run(
        """
        from fake_nvml import OLD_DRIVER, FakeNVML
        fake = FakeNVML([OLD_DRIVER]).install()
        from aiworkbook.proofs.device import nvml_reading
        from aiworkbook.specs.detection import nvml_gpus
        from aiworkbook.telemetry.gpu_reader import GPUReader
        assert len(nvml_gpus()[0]) == 1
        GPUReader().read_all()
        readings = [nvml_reading(pid=4242) for _ in range(3)]
        # OLD_DRIVER lacks the _v3 process symbol: the _v2 fallback still finds the process
        print(fake.called["nvmlInitWithFlags"], fake.called["nvmlShutdown"], readings[-1]["process_used"])
        """
    )
    assert out.split() == ["1", "0", str(OLD_DRIVER["processes"][0][1])]


def test_one_gpu_whose_binding_misbehaves_does_not_stop_the_others():
    with FakeNVML([DATACENTER, MIG, CONSUMER]) as fake:
        real_impls = {}
        for name in ("_nvmlDeviceGetPowerUsage", "_nvmlDeviceGetUtilizationRates", "_nvmlDeviceGetName"):
            real_impls[name] = getattr(fake, name)

            def broken(handle, *a, _name=name, **k):
                if handle is fake.profiles[1]:
                    raise OSError("segfault-ish ctypes failure")  # not an NVMLError at all
                return real_impls[_name](handle, *a, **k)

            setattr(fake, name, broken)
            import pynvml

            setattr(pynvml, name[1:], fake._stub(name[1:], fake._saved[name[1:]]))
        reader = GPUReader(clock=fake.clock)
        rows = reader.read_all()
        assert rows[1]["power_w"] == NA("segfault-ish ctypes failure")
        assert rows[0]["power_w"] == 412.0 and rows[2]["power_w"] == 412.0
        assert rows[0]["util_gpu_pct"] == 87.0 and rows[1]["temp_gpu_c"] == 54.0


def test_a_gpu_whose_handle_fails_and_a_gpu_lost_mid_run():
    prof = {**CONSUMER, "unsupported": {}}
    with FakeNVML([DATACENTER, prof, MIG]) as fake:
        fake.profiles[1]["unsupported"] = {}
        orig = fake._nvmlDeviceGetHandleByIndex

        def handle_by_index(index):
            if index == 1:
                import pynvml

                raise pynvml.NVMLError(pynvml.NVML_ERROR_NO_PERMISSION)
            return orig(index)

        fake._nvmlDeviceGetHandleByIndex = handle_by_index
        import pynvml

        pynvml.nvmlDeviceGetHandleByIndex = fake._stub(
            "nvmlDeviceGetHandleByIndex", fake._saved["nvmlDeviceGetHandleByIndex"]
        )
        s = Sampler(gpu_reader=GPUReader(clock=fake.clock), host=False, clock=fake.clock)
        first = s.sample_now()
        assert first.gpus[1]["power_w"] == NA("no permission") and first.gpus[0]["power_w"] == 412.0
        fake.lose(2)
        fake.advance(1.0)
        second = s.sample_now()
        assert second.gpus[2]["mem_used_bytes"] == NA("GPU is lost")
        assert second.gpus[0]["power_avg_w"] == pytest.approx(412.0)
        assert s.errors == 0 and s.gpu_reader.lost() == {2}


def test_shared_sampler_survives_concurrent_phase_window_start_stop():
    with FakeNVML([DATACENTER, MIG]) as fake:
        s = Sampler(interval=0.1, gpu_reader=GPUReader(), host=False, capacity=500)
        errors: list[BaseException] = []
        stop_at = time.monotonic() + 0.8
        baseline = {t.ident for t in threading.enumerate()}

        def worker(k: int) -> None:
            try:
                while time.monotonic() < stop_at:
                    if k % 3 == 0:
                        s.start()
                    elif k % 3 == 1 and k != 1:
                        s.stop()
                    with s.phase(f"p{k}"):
                        s.window(since=0).summary()
                        s.latest()
                    fake.inject_xid(k % 2, 13)
            except BaseException as exc:  # pragma: no cover - the assertion below reports it
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        s.stop()
        assert errors == [] and s.errors == 0, (errors, s.last_error)
        assert s.current_phase is None and not s.running
        workers = [
            t for t in threading.enumerate() if t.name == "aiworkbook-telemetry" and t.ident not in baseline
        ]
        for t in workers:  # a stopped worker ends within its tick; an orphaned one polls on past this
            t.join(2)
        assert [t for t in workers if t.is_alive()] == []  # no orphaned worker left polling
        assert len(s.ring) <= 500 and len(s.ring) > 0
        assert all(e["xid"] == 13 for e in s.events)


class _BlockingReader:
    """A GPU reader whose read can be held, to catch the worker mid-tick."""

    source = "test"

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.gate.set()
        self.inside = threading.Event()

    def status(self) -> str:
        return "test"

    def count(self) -> int:
        return 0

    def read_all(self) -> list:
        self.inside.set()
        self.gate.wait(5)
        return []


def test_stop_then_start_while_a_tick_is_running_leaves_one_worker():
    """stop() from one thread and start() from another while the worker is inside a tick: the old
    worker must still exit (it used to see the shared stop flag cleared again and poll forever)."""
    reader = _BlockingReader()
    s = Sampler(interval=0.1, gpu_reader=reader, host=False, events=False)
    reader.gate.clear()
    s.start()
    assert reader.inside.wait(5)
    s.stop(timeout=0.05)  # returns while the worker is still blocked in read_all
    old = [t for t in threading.enumerate() if t.name == "aiworkbook-telemetry" and t.is_alive()]
    assert len(old) == 1
    s.start()
    reader.gate.set()
    old[0].join(5)  # the old worker finishes its tick; it exits unless it was revived
    alive = [t for t in threading.enumerate() if t.name == "aiworkbook-telemetry" and t.is_alive()]
    s.stop()
    assert len(alive) == 1


def test_ring_and_hires_buffers_are_bounded():
    with FakeNVML([DATACENTER]) as fake:
        s = Sampler(gpu_reader=GPUReader(clock=fake.clock), host=False, capacity=5, hires=True)
        for _ in range(12):
            fake.advance(1.0)
            s.sample_now()
        assert len(s.ring) == 5 and s.ring.dropped == 7
        ring = s.hires[(0, "power")]
        assert ring.capacity == 50 and len(ring) == 50 and ring.dropped > 0
        # NVML's buffer had nothing newer on a repeat read: NotFound is "no new samples", not NA
        assert GPUReader(clock=fake.clock).history(0, "power", since_us=int(fake.now * 1e6)) == []


@pytest.fixture
def with_na(tmp_path):
    with FakeNVML([DATACENTER, MIG]) as fake:
        reader = GPUReader(clock=fake.clock)
        s = Sampler(gpu_reader=reader, host=False, events=False, clock=fake.clock)
        for _ in range(3):
            s.sample_now()
            fake.advance(1.0)
        yield s, trace_header(reader, 1.0), tmp_path


def test_na_round_trips_through_jsonl_log_csv_and_pandas(with_na):
    s, header, tmp = with_na
    samples = s.samples()
    assert samples[0].gpus[1]["util_gpu_pct"] == NA("not supported")
    assert samples[0].gpus[0]["power_avg_w"] == NA("first sample (no delta yet)")
    # JSONL trace and streaming log: the reason survives
    _, back = load_trace(to_jsonl(samples, tmp / "t.jsonl", header))
    log = JsonlLog(tmp / "log.jsonl", header)
    for x in samples:
        log.write(x)
    log.close()
    _, logged = load_trace(tmp / "log.jsonl")
    assert back == samples and logged == samples
    # pandas and CSV: NA becomes NaN, numbers stay numbers, and the CSV reads back the same
    df = to_dataframe(samples)
    assert math.isnan(df["gpu1.util_gpu_pct"][0]) and math.isnan(df["gpu0.power_avg_w"][0])
    assert df["gpu0.power_avg_w"][2] == pytest.approx(412.0)
    csv = pd.read_csv(to_csv(samples, tmp / "s.csv"), keep_default_na=True)
    assert list(csv.columns) == list(df.columns)
    for col in ("gpu0.power_w", "gpu1.util_gpu_pct", "gpu0.power_avg_w", "gpu1.mem_reserved_bytes"):
        pd.testing.assert_series_equal(csv[col], df[col], check_dtype=False, check_names=False)
    assert json.loads(json.dumps(s.window().summary()))["unavailable"]["gpu1.util_gpu_pct"] == "not supported"


def _trace(tmp: Path, lines: list[str]) -> Path:
    p = tmp / "broken.jsonl"
    head = json.dumps({"kind": "aiworkbook.telemetry.trace", "schema_version": 1, "label": "x"})
    p.write_text("\n".join([head, *lines]) + "\n")
    return p


@pytest.mark.parametrize(
    ("lines", "line", "what"),
    [
        (['{"t": 1, "wall": 1, "gpus": [], "host": {}}', '{"t": 2, "wall"'], 3, "json"),
        (['{"t": 1, "gpus": [], "host": {}}', "", '{"wall": 2, "gpus": [], "host": {}}'], 4, "t"),
        (['{"t": "soon", "gpus": []}'], 2, "could not convert"),
        (['{"t": 1, "gpus": {"power_w": 3}}'], 2, "gpus"),
        (["[1, 2, 3]"], 2, "JSON object"),
    ],
)
def test_corrupt_trace_error_names_file_and_line(tmp_path, lines, line, what):
    p = _trace(tmp_path, lines)
    with pytest.raises(SpecError) as e:
        load_trace(p)
    msg = str(e.value)
    assert str(p) in msg and f"line {line}" in msg and what in msg, msg


def test_truncated_header_and_wrong_kind_name_the_file(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text('{"kind": "aiworkbook.telemetry.trace", "schema_version": 99}\n{"t": 1}\n')
    with pytest.raises(SpecError, match=r"t\.jsonl.*schema_version.*line 1"):
        load_trace(p)
    p.write_text("")
    with pytest.raises(SpecError, match=r"t\.jsonl.*empty"):
        load_trace(p)
    assert is_na({"na": "x"})
