"""benchmarks/bench_storage.py beside fio: the fio command, the parsing of fio's JSON, the rows, and
the skip when fio is absent (no timing is judged here; the figures are the benchmark's)."""

from __future__ import annotations

import importlib.util
import json
import stat
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_storage", ROOT / "benchmarks" / "bench_storage.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


B = _bench()


def _fio_json(rw: str, io_bytes: int, runtime_ms: int, error: int = 0) -> str:
    idle = {"io_bytes": 0, "bw_bytes": 0, "runtime": 0}
    part = {"io_bytes": io_bytes, "bw_bytes": io_bytes * 1000 // max(runtime_ms, 1), "runtime": runtime_ms}
    job = {"jobname": "aiwb", "error": error, "read": idle, "write": idle, rw: part}
    return json.dumps({"fio version": "fio-3.33", "jobs": [job]})


def test_fio_command_is_a_durable_write_and_a_cold_read(tmp_path):
    w = B.fio_command("fio", tmp_path / "f.bin", 1 << 20, "write")
    r = B.fio_command("fio", tmp_path / "f.bin", 1 << 20, "read")
    assert (
        "--rw=write" in w and "--end_fsync=1" in w and "--fallocate=none" in w and "--invalidate=1" not in w
    )
    assert "--rw=read" in r and "--invalidate=1" in r and "--end_fsync=1" not in r
    assert all(f"--filename={tmp_path / 'f.bin'}" in c and "--size=1048576" in c for c in (w, r))
    assert "--output-format=json" in w


def test_parse_fio_reads_bytes_over_runtime_past_a_warning():
    text = "fio: some warning before the JSON\n" + _fio_json("write", 256 << 20, 500)
    assert B.parse_fio(text, "write", 256 << 20) == pytest.approx((256 << 20) / 0.5)
    assert B.parse_fio(_fio_json("read", 8 << 20, 4), "read", 8 << 20) == pytest.approx((8 << 20) / 0.004)


@pytest.mark.parametrize(
    "text",
    [
        "no json at all",
        _fio_json("write", 1 << 20, 10, error=5),  # the job failed
        _fio_json("write", 1 << 19, 10),  # fewer bytes than asked
        _fio_json("read", 1 << 20, 0),  # no runtime
    ],
)
def test_parse_fio_refuses_a_failed_or_short_job(text):
    rw = "read" if '"read": {"io_bytes": 1048576' in text else "write"
    with pytest.raises(ValueError):
        B.parse_fio(text, rw, 1 << 20)


def test_without_fio_the_rows_say_so_and_nothing_runs(tmp_path, capsys):
    rows = B.fio_rows(tmp_path, 4, "note", fio=None)
    assert [r["name"] for r in rows] == ["checkpoint vs fio: skipped"]
    assert rows[0]["value"] is None and "apt-get install fio" in rows[0]["note"]
    assert "fio rows skipped" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


_FAKE_FIO = """#!{python}
# A stand-in for fio: lays out the file on a write (as fio does), then prints a warning and fio's JSON.
import json, sys
a = dict(x[2:].split("=", 1) for x in sys.argv[1:] if "=" in x)
rw, n = a["rw"], int(a["size"])
if rw == "write":
    open(a["filename"], "wb").write(bytes(n))
idle = {{"io_bytes": 0, "bw_bytes": 0, "runtime": 0}}
print("fio: a warning")
print(json.dumps({{"jobs": [{{"error": 0, "read": idle, "write": idle, rw: {{"io_bytes": n, "runtime": 2}}}}]}}))
"""


def test_rows_with_fio_alternate_rounds_and_give_each_ratio(tmp_path):
    fio = tmp_path / "fio"
    fio.write_text(_FAKE_FIO.format(python=sys.executable))
    fio.chmod(fio.stat().st_mode | stat.S_IXUSR)
    work = tmp_path / "work"
    work.mkdir()
    rows = B.fio_rows(work, 2, "2 MiB on test fs", fio=str(fio), rounds=2)
    assert [r["name"] for r in rows] == [
        "checkpoint save safetensors / fio write (1 MiB, end_fsync=1)",
        "checkpoint restore safetensors / fio cold read (1 MiB, invalidate=1)",
        "checkpoint load_file safetensors / fio cold read (1 MiB, invalidate=1)",
    ]
    for r, goal in zip(rows, ("goal >= 0.9", "goal >= 0.8", "no goal"), strict=True):
        assert r["value"] > 0 and r["reference"] == pytest.approx((2 << 20) / 0.002, rel=0.01)  # state bytes
        assert r["ratio"] == pytest.approx(r["value"] / r["reference"])
        assert goal in r["note"] and "2 alternating rounds" in r["note"]
        assert r["note"].count(",") >= 1 and "2 MiB on test fs" in r["note"]
        each = r["note"].split("each round's ratio: ")[1].split(";")[0].split(", ")
        mid = float(r["note"].split("not the goal's measure: ")[1].split(")")[0])
        assert len(each) == 2 and mid == pytest.approx(sum(float(x) for x in each) / 2, abs=0.006)
    assert "MADV_POPULATE_READ" in rows[1]["note"] and "save_file" in rows[0]["note"]
    assert not (work / "fio.bin").exists()
