"""`prove allreduce --launcher slurm` (issue 38): two tasks started by the real loopback Slurm's srun
(tests/slurm_cluster.py) find each other through Slurm's environment (SLURM_PROCID, SLURM_NTASKS,
SLURM_LOCALID, the first node of SLURM_NODELIST via scontrol) and all-reduce over gloo on the CPU;
rank 0 reports bus bandwidth per message size."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from slurm_cluster import slurm  # noqa: F401 (the fixture)

from aiworkbook.cli import main

_BIN = Path(sys.executable).with_name("aiworkbook")


def test_two_srun_tasks_all_reduce_and_rank_0_reports_busbw(slurm, tmp_path):  # noqa: F811
    out = tmp_path / "allreduce.json"
    argv = ["srun", "--nodes=1", "--ntasks=2", f"--chdir={tmp_path}", str(_BIN), "prove", "allreduce"]
    argv += ["--launcher", "slurm", "--device", "cpu", "--quick", "--json", str(out)]
    r = slurm.run(*argv, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads(out.read_text())
    assert res["inputs"]["ranks"] == 2 and res["inputs"]["backend"] == "gloo"
    assert sorted(x["rank"] for x in res["details"]["ranks"]) == [0, 1]
    sweep = res["details"]["sweep"]
    assert len(sweep) == 3 and all(x["busbw_bps"] > 0 for x in sweep)
    assert res["details"]["incorrect"] == []
    assert "rank 1 of 2: done" in r.stderr
    assert r.stdout.count("busbw") >= 3  # rank 0 prints the sweep, once


def test_outside_srun_it_names_the_missing_variable(monkeypatch, capsys):
    for var in ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"):
        monkeypatch.delenv(var, raising=False)
    assert main(["prove", "allreduce", "--launcher", "slurm", "--device", "cpu", "--quick"]) == 2
    assert "SLURM_PROCID" in capsys.readouterr().err
