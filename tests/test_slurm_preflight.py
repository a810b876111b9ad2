"""`preflight vllm` inside a Slurm allocation (issue 38): it reports the GPUs Slurm gave the job and
step (SLURM_JOB_GPUS, SLURM_STEP_GPUS) beside CUDA_VISIBLE_DEVICES and which devices it checked; run
by the real loopback Slurm's srun (tests/slurm_cluster.py, no GPU there) it says it checked none."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from fake_nvml import DATACENTER, FakeNVML
from slurm_cluster import slurm  # noqa: F401 (the fixture)

from aiworkbook.cli import main

_BIN = Path(sys.executable).with_name("aiworkbook")


def test_the_allocation_and_the_devices_checked_are_reported(capsys, monkeypatch):
    for k, v in {"SLURM_JOB_ID": "77", "SLURM_JOB_GPUS": "2,3", "SLURM_STEP_GPUS": "3"}.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    with FakeNVML([DATACENTER]):
        main(["preflight", "vllm", "llama-3-8b", "--max-model-len", "8192", "--json"])
        doc = json.loads(capsys.readouterr().out)
        main(["preflight", "vllm", "llama-3-8b", "--max-model-len", "8192"])
        text = capsys.readouterr().out
    assert doc["slurm"] == {
        "SLURM_JOB_ID": "77",
        "SLURM_JOB_GPUS": "2,3",
        "SLURM_STEP_GPUS": "3",
        "CUDA_VISIBLE_DEVICES": "0",
        "checked": [d["label"] for d in doc["devices"]],
    }
    assert len(doc["slurm"]["checked"]) == 1
    assert text.startswith(
        "Slurm: SLURM_JOB_ID=77, SLURM_JOB_GPUS=2,3, SLURM_STEP_GPUS=3, CUDA_VISIBLE_DEVICES=0"
    )


def test_outside_slurm_nothing_is_added(capsys, monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    with FakeNVML([DATACENTER]):
        main(["preflight", "vllm", "llama-3-8b", "--max-model-len", "8192", "--json"])
    assert "slurm" not in json.loads(capsys.readouterr().out)


def test_under_srun_without_gpus_it_names_the_job_and_checked_none(slurm):  # noqa: F811
    r = slurm.run("srun", "--ntasks=1", str(_BIN), "preflight", "vllm", "llama-3-8b", "--json", timeout=120)
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert doc["slurm"]["checked"] == [] and doc["slurm"]["SLURM_JOB_ID"].isdigit()
