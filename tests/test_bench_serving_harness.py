"""`benchmarks/bench_serving.py --harness --json FILE`, which tools/gpu_proof_device.sh runs blind on a
lent machine before the proofs: it must run on its own and write the rows the docs read (no timing is
judged here; the figures are the benchmark's)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_harness_rows_alone_write_json(tmp_path):
    out = tmp_path / "harness.json"
    subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_serving.py"), "--harness", "--json", str(out)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    doc = json.loads(out.read_text())
    assert doc["cpus"] >= 1 and doc["python"].count(".") == 2
    names = [r["name"] for r in doc["rows"]]
    assert names == [
        "harness overhead, p50 TTFT - planted, 64 streams",
        "harness CPU per request (client + stand-in server)",
        "harness overhead split, 64 streams: the client's send up to the stand-in's handler",
        "harness overhead split, 64 streams: the stand-in's write past its deadline",
        "harness overhead split, 64 streams: the stand-in's write to the client's parsed chunk",
    ]
    overhead, cpu, send, late, delivery = doc["rows"]
    # the stand-in cannot answer before its planted 50 ms, so the overhead is never negative
    assert overhead["value"] > 0 and overhead["reference"] > 0
    assert "n=512/32" in overhead["note"]
    assert ", met;" in overhead["note"] or ", MISSED;" in overhead["note"]
    assert "sum(range(100000)) in" in overhead["note"]
    assert cpu["value"] > 0 and cpu["unit"] == "ms CPU"
    # the parts come from the stand-in's readings matched to the client's records: a request matched
    # to another's readings would show a negative send or delivery, and the stand-in never writes early
    for part in (send, late, delivery):
        assert part["value"] >= 0 and part["reference"] >= 0 and part["unit"] == "ms"
    assert send["value"] + delivery["value"] < overhead["value"] * 3


def test_the_device_script_records_them():
    script = (ROOT / "tools" / "gpu_proof_device.sh").read_text()
    # into the work folder, which the one bundle (gpu-proof.tar.gz) carries back
    assert 'benchmarks/bench_serving.py --harness --json "$WORK/bench-serving-harness.json"' in script
    assert 'tar -czf "$OUT/gpu-proof.tar.gz" -C "$WORK" .' in script
    # the proofs first (they are what the lent time is for), the harness rows in the time kept back for them
    assert script.index("bash tools/gpu_proof.sh") < script.index("bench_serving.py --harness")
    assert "GPU_PROOF_LIMIT_S=$((LIMIT - (SECONDS - start) - 80))" in script
