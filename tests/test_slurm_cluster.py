"""The loopback Slurm cluster the Slurm tests run on (tests/slurm_cluster.py): it starts, its node is
idle, and it runs a two-task step, each task with its own rank in Slurm's environment."""

from __future__ import annotations

from slurm_cluster import slurm  # noqa: F401 (the fixture)


def test_the_loopback_cluster_runs_a_two_task_step(slurm):  # noqa: F811
    assert slurm.state() == "idle"
    r = slurm.run("srun", "--nodes=1", "--ntasks=2", "printenv", "SLURM_PROCID", timeout=60)
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.split()) == ["0", "1"]
    assert slurm.run("scontrol", "show", "hostnames", "aiwb-node1", timeout=10).stdout.split() == [
        "aiwb-node1"
    ]
