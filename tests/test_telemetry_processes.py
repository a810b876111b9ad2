"""GPU process names: NVML lists host PIDs, so inside a container's own PID namespace no name is looked
up ("?" rather than the name of whichever local process has that number)."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from aiworkbook.telemetry import processes as P


@pytest.fixture(autouse=True)
def _fresh():
    P._here_is_own_namespace.cache_clear()
    P._names.clear()
    yield
    P._here_is_own_namespace.cache_clear()
    P._names.clear()


def test_on_the_host_a_pid_is_named(monkeypatch):
    """In the initial PID namespace (here: whatever namespace this test runs in, taken as the host's)
    NVML's PID names the local process."""
    monkeypatch.setattr(P, "PROC_PID_INIT_INO", os.stat("/proc/self/ns/pid").st_ino)
    assert not P.own_pid_namespace()
    rec = SimpleNamespace(pid=os.getpid(), usedGpuMemory=2**30)
    (d,) = P.describe([rec])
    assert d["pid"] == os.getpid() and d["name"].startswith("python") and d["used_bytes"] == 2**30


def test_in_a_containers_pid_namespace_no_host_pid_is_looked_up(monkeypatch):
    """The namespace's inode is not the initial one (as inside Docker or a Kubernetes pod): this very
    process's PID, listed by NVML, must not be named from the local /proc."""
    monkeypatch.setattr(P, "PROC_PID_INIT_INO", os.stat("/proc/self/ns/pid").st_ino + 1)
    assert P.own_pid_namespace()
    (d,) = P.describe([SimpleNamespace(pid=os.getpid(), usedGpuMemory=None)])
    assert d["name"] == "?" and d["used_bytes"] is None


def test_a_host_proc_mounted_in_a_container_shows_nested_pids(tmp_path):
    (tmp_path / "self").mkdir()
    (tmp_path / "self" / "status").write_text("Name:\tpython\nNSpid:\t81234\t7\n")
    assert P.own_pid_namespace(tmp_path)
    (tmp_path / "self" / "status").write_text("Name:\tpython\nNSpid:\t81234\n")
    assert not P.own_pid_namespace(tmp_path)
