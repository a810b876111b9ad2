"""`make gpu-proof` on an offline GPU node (issue 23, item 2): tools/gpu_proof.sh runs the machine's own
torch, installs only the proofs' missing packages (none here), keeps inside its time limit, and
benchmarks/gpu_proof.py rewrites summary.json after every step."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_proof.py"
SHELL = ROOT / "tools" / "gpu_proof.sh"


@pytest.fixture(scope="module")
def gp():
    spec = importlib.util.spec_from_file_location("gpu_proof_kit", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["gpu_proof_kit"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_missing_lists_only_what_is_not_importable(gp, monkeypatch):
    monkeypatch.setattr(gp, "PROOF_DEPS", {"json": "json-stdlib", "no_such_module_xyz": "nosuch>=1"})
    assert gp.missing_requirements() == ["nosuch>=1"]
    assert "torch" not in json.dumps(gp.PROOF_DEPS)  # the machine's own torch, never installed


def test_missing_flag_prints_requirements_before_any_third_party_import():
    p = subprocess.run(
        [sys.executable, str(SCRIPT), "--missing"], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert p.returncode == 0 and p.stdout.strip() == ""  # this venv has every proof package


def test_summary_is_rewritten_after_every_step(gp, tmp_path, monkeypatch):
    out = tmp_path / "r"
    seen = []

    def fake_run_step(step, device, dry, limit, out_dir):
        path = out_dir / "summary.json"
        seen.append(json.loads(path.read_text()) if path.exists() else None)
        return {"step": step.name, "proof": step.proof, "est_s": step.est_s, "status": "pass", "seconds": 0.0}

    monkeypatch.setattr(gp, "run_step", fake_run_step)
    rc = gp.main(["--dry-run", "--no-trace", "--out", str(out), "--only", "vram-smoke", "vram-1b-bf16"])
    assert rc == 0
    assert seen[0] is None  # nothing before the first step
    assert [r["step"] for r in seen[1]["steps"]] == ["vram-smoke"] and seen[1]["complete"] is False
    final = json.loads((out / "summary.json").read_text())
    assert final["complete"] is True and [r["step"] for r in final["steps"]] == ["vram-smoke", "vram-1b-bf16"]


def _shell(tmp_path, limit: int, *args: str):
    env = {
        **os.environ,
        "GPU_PYTHON": sys.executable,
        "GPU_PROOF_LIMIT_S": str(limit),
        "OUT": str(tmp_path / "out"),
        "GPU_PROOF_VENV": str(tmp_path / "venv"),
    }
    return subprocess.run(
        ["bash", str(SHELL), *args], capture_output=True, text=True, timeout=limit + 60, cwd=tmp_path, env=env
    )


def test_shell_kit_runs_the_given_python_installs_nothing_and_keeps_its_budget(tmp_path):
    p = _shell(tmp_path, 150, "--dry-run", "--no-trace", "--only", "vram-smoke")
    assert p.returncode in (0, 3), p.stderr[-2000:]
    assert "installing" not in p.stdout and not (tmp_path / "venv").exists()  # nothing was missing
    budget = int(p.stdout.split("budget ")[1].split(" s")[0])
    assert 100 <= budget <= 120  # 150 s less the 30 s margin less the set-up
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["complete"] and summary["budget_s"] == budget
    assert [r["step"] for r in summary["steps"]] == ["vram-smoke"]


def test_shell_kit_refuses_a_limit_that_leaves_no_budget(tmp_path):
    p = _shell(tmp_path, 50, "--dry-run")
    assert p.returncode == 1 and "too little" in p.stderr and not (tmp_path / "out").exists()
