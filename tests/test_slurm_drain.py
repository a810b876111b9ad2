"""`check --passive --slurm-drain` (issue 38) as the cluster's own health check on the real loopback
Slurm (tests/slurm_cluster.py): NVML only (the fake NVML, tests/fake_nvml.py, stands in for a GPU
this machine lacks), a planted regression drains the node with a one-line reason, the next passing
check resumes it, and a node an admin drained for another reason stays drained."""

from __future__ import annotations

import pytest
from fake_nvml import DATACENTER, FakeNVML
from profile_fakes import write_locked
from slurm_cluster import slurm, wait_state  # noqa: F401 (the fixture)

from aiworkbook.cli import main
from aiworkbook.telemetry.environment import reset as reset_reader

#: the GPU the profile was locked on (profile_fakes: one NVIDIA L40S, driver 550.54.15), healthy
HEALTHY = {**DATACENTER, "name": "NVIDIA L40S", "throttle": 0, "ecc": (0, 0, 0, 0), "remapped": (0, 0, 0, 0)}


@pytest.fixture(scope="module")
def locked(tmp_path_factory):
    return write_locked(tmp_path_factory.mktemp("drain"))


def _passive(slurm, locked, gpu, capsys, monkeypatch) -> tuple[int, str]:  # noqa: F811
    monkeypatch.setenv("SLURM_CONF", str(slurm.conf))
    with FakeNVML([gpu], sleep=lambda s: None):  # the XID wait returns at once
        reset_reader()
        try:
            code = main(["check", str(locked), "--passive", "--slurm-drain", "--node", slurm.node])
        finally:
            reset_reader()
    return code, capsys.readouterr().out


def test_a_planted_regression_drains_and_the_next_pass_resumes(slurm, locked, capsys, monkeypatch):  # noqa: F811
    code, out = _passive(slurm, locked, HEALTHY, capsys, monkeypatch)
    assert code == 0, out
    assert slurm.state() == "idle"
    code, out = _passive(slurm, locked, {**HEALTHY, "ecc": (0, 2, 0, 2)}, capsys, monkeypatch)
    assert code == 1 and "2 uncorrected ECC error(s)" in out
    wait_state(slurm, ("drained", "draining"))
    reason = slurm.reason()
    assert reason.startswith("aiworkbook check") and "uncorrected ECC" in reason and "\n" not in reason
    code, out = _passive(slurm, locked, HEALTHY, capsys, monkeypatch)
    assert code == 0, out
    wait_state(slurm, ("idle",))


def test_a_changed_driver_drains_and_an_admins_drain_is_left_alone(slurm, locked, capsys, monkeypatch):  # noqa: F811
    monkeypatch.setenv("SLURM_CONF", str(slurm.conf))
    with FakeNVML([HEALTHY], driver_version="560.35.03", sleep=lambda s: None):
        reset_reader()
        try:
            assert main(["check", str(locked), "--passive", "--slurm-drain", "--node", slurm.node]) == 1
        finally:
            reset_reader()
    assert "driver 550.54.15 -> 560.35.03" in slurm.reason()
    r = slurm.run(
        "scontrol", "update", f"nodename={slurm.node}", "state=drain", "reason=admin: fan", timeout=10
    )
    assert r.returncode == 0, r.stderr
    try:
        code, _ = _passive(slurm, locked, HEALTHY, capsys, monkeypatch)
        assert code == 0
        assert slurm.state() in ("drained", "draining") and slurm.reason() == "admin: fan"
    finally:
        slurm.run("scontrol", "update", f"nodename={slurm.node}", "state=resume", timeout=10)


def test_nvml_that_does_not_answer_fails_within_the_watchdog(locked, monkeypatch):
    """The watchdog: a reading that blocks (as a hung NVML call does) is a failure after watchdog_s,
    not a health check Slurm kills at 60 s."""
    import threading

    from aiworkbook.profile import load_profile, passive

    release = threading.Event()
    monkeypatch.setattr(passive, "_read", lambda profile, xid_wait_s: release.wait(30))
    try:
        rep = passive.passive_check(load_profile(locked), watchdog_s=0.5)
    finally:
        release.set()
    assert rep.exit_code == 1 and "watchdog" in rep.summary()
