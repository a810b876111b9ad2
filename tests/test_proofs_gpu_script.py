"""benchmarks/gpu_proof.py (`make gpu-proof`) proven on the CPU: its --dry-run runs the same steps, in the
same order, through the same code as on a GPU (small models), and writes the same files."""

from __future__ import annotations

import importlib.util
import json
import sys
import tarfile
import time
from pathlib import Path

import pytest

from aiworkbook.proofs.device import cuda_available
from aiworkbook.proofs.result import ProofResult

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_proof.py"


@pytest.fixture(scope="module")
def gp():
    spec = importlib.util.spec_from_file_location("gpu_proof", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["gpu_proof"] = mod  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def fresh_sampler():
    from aiworkbook.telemetry.sampler import reset_shared_sampler

    reset_shared_sampler()
    yield
    reset_shared_sampler()


def test_dry_run_writes_every_result_summary_and_trace(gp, tmp_path, fresh_sampler, capsys):
    out = tmp_path / "results"
    scratch = tmp_path / "scratch"
    rc = gp.main(
        ["--dry-run", "--out", str(out), "--bundle", str(tmp_path / "b.tar.gz"), "--scratch", str(scratch)]
    )
    summary = json.loads((out / "summary.json").read_text())
    from aiworkbook.persist import read_json

    assert read_json(out / "summary.json", kind=gp.SUMMARY_KIND, max_version=1) == summary
    assert summary["kind"] == "aiworkbook.gpu-proof-summary" and summary["schema_version"] == 1
    names = [s.name for s in gp.PLAN]
    assert [r["step"] for r in summary["steps"]] == names
    assert summary["mode"] == "dry-run-cpu" and summary["device"] == "cpu"
    for row in summary["steps"]:
        assert row["status"] in ("pass", "fail", "info"), row  # ran: no error, timeout or skip
        r = ProofResult.load(out / row["file"])
        assert r.proof == row["proof"] and r.device == "cpu" and r.verdict == row["status"]
    by = {r["step"]: r for r in summary["steps"]}
    assert "proxy-model" in by["vram-8b-bf16-mixed-proxy"]["flags"]
    assert set(by["roofline"]["ceilings"]) >= {f"matmul_{d}_flops" for d in gp.ALL_DTYPES}
    assert by["roofline"]["ceilings"]["matmul_fp8_flops"] > 0  # torch._scaled_mm ran (CPU kernel)
    # every proof that runs on CUDA has a step (all-reduce needs 2+ GPUs, the host proof is CPU-only,
    # the checkpoint proof restores each save cold and verifies it, as the restore proof would)
    from aiworkbook.proofs import registry

    assert {r["proof"] for r in summary["steps"]} == {
        i.name for i in registry.proofs() if i.gpu and i.name not in ("allreduce", "restore")
    }
    sched = by["serving-1b"]["schedulers"]  # the static vs continuous figures reach the summary
    assert sched["concurrency"] == 8 and sched["throughput_ratio"] > 0
    assert sched["continuous_throughput_tok_s"] / sched["static_throughput_tok_s"] == pytest.approx(
        sched["throughput_ratio"]
    )
    ck = ProofResult.load(out / by["checkpoint-2g"]["file"])
    assert Path(ck.inputs["dir"]) == scratch.resolve() and not scratch.exists()  # written there, removed
    assert rc == (0 if all(r["status"] in ("pass", "info") for r in summary["steps"]) else 3)
    lines = (out / "trace.jsonl").read_text().splitlines()
    head = json.loads(lines[0])
    assert head["kind"] == "aiworkbook.telemetry.trace" and "dry run" in head["note"]
    phases = {json.loads(x)["phase"] for x in lines[1:]}
    assert set(names) <= phases  # a sample on entry and exit of every step
    with tarfile.open(tmp_path / "b.tar.gz") as tar:
        assert "results/summary.json" in tar.getnames()
    table = capsys.readouterr().out
    assert "step" in table and "vram-8b-bf16" in table


def test_a_failing_or_overrunning_step_is_recorded_and_the_run_goes_on(gp, tmp_path, monkeypatch):
    from aiworkbook.proofs.device import interruptible

    slept_out = []

    def fake_call(step, device, dry):
        if step.name == "vram-smoke":
            raise ValueError("boom")
        with interruptible("slow step", "cpu"):
            time.sleep(5)  # real time: the script's limit is a real SIGALRM, which ends this sleep early
            slept_out.append(step.name)

    monkeypatch.setattr(gp, "_call", fake_call)
    bad = gp.run_step(gp.PLAN[1], "cpu", True, 5, tmp_path)
    slow = gp.run_step(gp.PLAN[2], "cpu", True, 0.3, tmp_path)
    assert bad["status"] == "error" and "ValueError: boom" in bad["error"]
    assert slow["status"] == "timeout" and slept_out == []  # stopped inside its sleep, not after it


def test_without_cuda_it_measures_nothing_and_exits_1(gp, tmp_path, capsys):
    if cuda_available():
        pytest.skip("this machine has CUDA: the no-CUDA exit path cannot happen here (CPU-only CI runs it)")
    assert gp.main(["--out", str(tmp_path / "x")]) == 1
    assert "no CUDA device" in capsys.readouterr().err and not (tmp_path / "x").exists()


def test_plan_fits_the_budget(gp, capsys):
    assert gp.main(["--list"]) == 0
    # estimates leave 30 % for start-up and their own error; past that the runner skips the last steps
    # (storage and data, the least GPU-specific), and each step's hard limit bounds an overrun
    assert sum(s.est_s for s in gp.PLAN) <= 0.7 * gp.BUDGET_S
    assert all(s.est_s < s.limit_s for s in gp.PLAN)
    assert "total estimate" in capsys.readouterr().out


def test_bench_runner_json_carries_kind_and_version_and_is_checked_first(tmp_path, monkeypatch):
    """benchmarks/run.py wrote a bare list with write_text, after every bench had run."""
    import importlib.util

    from aiworkbook.errors import SpecError
    from aiworkbook.persist import read_json

    path = SCRIPT.parent / "run.py"
    spec = importlib.util.spec_from_file_location("bench_run", path)
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    bench = tmp_path / "bench_fake.py"
    bench.write_text(
        "def run():\n    return [{'name': 'x', 'value': 1.0, 'unit': 's', 'reference': 2.0, 'ratio': 0.5}]\n"
    )
    monkeypatch.setattr(run, "HERE", tmp_path)
    out = tmp_path / "bench.json"
    assert run.main(["--json", str(out)]) == 0
    doc = read_json(out, kind=run.BENCH_KIND, max_version=run.BENCH_SCHEMA_VERSION)
    assert doc["schema_version"] == 1 and doc["rows"] == [
        {"bench": "bench_fake", "name": "x", "value": 1.0, "unit": "s", "reference": 2.0, "ratio": 0.5}
    ]
    bench.write_text("def run():\n    raise AssertionError('ran before the output path was checked')\n")
    with pytest.raises(SpecError, match="not a folder"):
        run.main(["--json", str(tmp_path)])


def test_every_step_passes_only_inputs_its_proof_declares(gp):
    from aiworkbook.proofs import registry

    for step in gp.PLAN:
        info = registry.get(step.proof)
        for kw in (step.gpu, step.dry):
            assert set(kw) <= set(info.accepts), (step.name, set(kw) - set(info.accepts))
