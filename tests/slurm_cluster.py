"""A real one-node Slurm cluster on loopback for the Slurm tests: Debian's munged, slurmctld and slurmd
(slurm-wlm), configured in a temporary folder (slurm.conf, a munge key, state and spool), on loopback
ports chosen free, root as SlurmUser, ProctrackType=proctrack/linuxproc, TaskPlugin=task/none,
SelectType=select/cons_tres. Every daemon runs in the foreground as a child of the test, every wait is
bounded and `close()` stops each daemon by its PID. Clients (sbatch, srun, sinfo, scontrol) find the
cluster through SLURM_CONF in `Cluster.env`, never the machine's /etc/slurm."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from prometheus_fleet import free_port, stop, wait_for

PACKAGES = ("slurm-wlm", "munge", "shellcheck")
BINARIES = ("munged", "slurmctld", "slurmd", "sinfo", "sbatch", "srun", "scontrol", "scancel", "shellcheck")
NODE = "aiwb-node1"
CPUS = 2  # set here, not read from the machine: slurmd takes the configured figures (config_overrides)
WAIT_S = 60.0
RUN_S = 120  # the most one client command may take


def missing() -> list[str]:
    return [b for b in BINARIES if shutil.which(b) is None and not Path("/usr/sbin", b).exists()]


def install() -> str | None:
    """None when slurm-wlm, munge and shellcheck are here (installed with apt-get when missing and this
    is root, as `make test` does); else why they are not."""
    if not missing():
        return None
    if not (hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get")):
        return f"{', '.join(missing())} missing and not root with apt-get to install {' '.join(PACKAGES)}"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    try:
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", *PACKAGES], env=env, timeout=600, capture_output=True
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"apt-get install {' '.join(PACKAGES)} failed: {exc}"
    still = missing()
    return f"apt-get could not install {', '.join(still)}" if still else None


def _binary(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


@dataclass
class Cluster:
    tmp: Path
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    node: str = NODE
    partition: str = "debug"

    @property
    def conf(self) -> Path:
        return self.tmp / "slurm.conf"

    def run(self, *argv: str, timeout: float = RUN_S, check: bool = False) -> subprocess.CompletedProcess:
        """A Slurm client command against this cluster, bounded by `timeout`."""
        return subprocess.run(
            [_binary(argv[0]), *argv[1:]],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=check,
        )

    def _start(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = open(self.tmp / f"{name}.out", "wb")  # noqa: SIM115 (closed with the process)
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self.env, cwd=self.tmp)
        log.close()
        self.procs[name] = proc
        return proc

    def _log(self, name: str) -> str:
        parts = []
        for p in (self.tmp / f"{name}.out", self.tmp / f"{name}.log"):
            if p.exists():
                parts.append(p.read_text(errors="replace")[-3000:])
        return "\n".join(parts)

    def start(self) -> Cluster:
        t = self.tmp
        for d in ("state", "spool", "munge"):
            (t / d).mkdir(mode=0o700)
        key = t / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        sock = t / "munge" / "munge.socket"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        for var in [v for v in self.env if v.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_"))]:
            if var != "SLURM_CONF":  # a test run inside an allocation must not leak its own job's settings
                del self.env[var]
        munged = [_binary("munged"), "--foreground", "--force", f"--key-file={key}", f"--socket={sock}"]
        munged += [f"--pid-file={t / 'munge' / 'munged.pid'}", f"--log-file={t / 'munged.log'}"]
        munged += [f"--seed-file={t / 'munge' / 'munged.seed'}", "--num-threads=2"]
        m = self._start("munged", munged)
        wait_for(lambda: sock.exists() or m.poll() is not None, "munged's socket", WAIT_S, 0.1)
        assert m.poll() is None, self._log("munged")
        ctld_port, slurmd_port = free_port(), free_port()
        self.conf.write_text(
            "\n".join(
                [
                    "ClusterName=aiwbtest",
                    "SlurmctldHost=localhost(127.0.0.1)",
                    "SlurmUser=root",
                    "SlurmdUser=root",
                    f"SlurmctldPort={ctld_port}",
                    f"SlurmdPort={slurmd_port}",
                    "AuthType=auth/munge",
                    "CredType=cred/munge",
                    f"AuthInfo=socket={sock}",
                    f"StateSaveLocation={t / 'state'}",
                    f"SlurmdSpoolDir={t / 'spool'}",
                    f"SlurmctldPidFile={t / 'slurmctld.pid'}",
                    f"SlurmdPidFile={t / 'slurmd.pid'}",
                    f"SlurmctldLogFile={t / 'slurmctld.log'}",
                    f"SlurmdLogFile={t / 'slurmd.log'}",
                    "ProctrackType=proctrack/linuxproc",
                    "TaskPlugin=task/none",
                    "SelectType=select/cons_tres",
                    "SelectTypeParameters=CR_Core",
                    "SlurmdParameters=config_overrides",
                    "SwitchType=switch/none",
                    "MpiDefault=none",
                    "ReturnToService=2",
                    "JobCompType=jobcomp/none",
                    "AccountingStorageType=accounting_storage/none",
                    "JobAcctGatherType=jobacct_gather/none",
                    "SchedulerType=sched/builtin",
                    "SlurmctldTimeout=30",
                    "SlurmdTimeout=60",
                    "InactiveLimit=0",
                    "KillWait=2",
                    "MinJobAge=300",
                    f"NodeName={self.node} NodeHostname=localhost NodeAddr=127.0.0.1 CPUs={CPUS} State=UNKNOWN",
                    f"PartitionName={self.partition} Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
                    "",
                ]
            )
        )
        ctld = self._start("slurmctld", [_binary("slurmctld"), "-D", "-i", "-f", str(self.conf)])
        wait_for(
            lambda: self.run("scontrol", "ping", timeout=10).returncode == 0 or ctld.poll() is not None,
            "slurmctld answering",
            WAIT_S,
        )
        assert ctld.poll() is None, self._log("slurmctld")
        slurmd = self._start("slurmd", [_binary("slurmd"), "-D", "-N", self.node, "-f", str(self.conf)])
        wait_for(
            lambda: self.state() == "idle" or slurmd.poll() is not None, "the node idle in sinfo", WAIT_S
        )
        assert slurmd.poll() is None, self._log("slurmd")
        return self

    def state(self) -> str:
        """The node's state as sinfo prints it ("idle", "drain", "alloc", ...)."""
        try:
            r = self.run("sinfo", "-h", "-n", self.node, "-o", "%T", timeout=10)
        except subprocess.TimeoutExpired:
            return ""
        return r.stdout.strip().split("\n")[0] if r.returncode == 0 else ""

    def reason(self) -> str:
        r = self.run("sinfo", "-h", "-n", self.node, "-o", "%E", timeout=10)
        return r.stdout.strip()

    def close(self) -> None:
        for name in ("slurmd", "slurmctld", "munged"):
            proc = self.procs.get(name)
            if proc is not None:
                stop(proc)


def wait_gone(cluster: Cluster, job: str, timeout: float = WAIT_S) -> None:
    """Wait (bounded) until squeue no longer lists `job`."""

    def gone() -> bool:
        r = cluster.run("squeue", "-h", "-j", job, "-o", "%T", timeout=10)
        return r.returncode != 0 or r.stdout.strip() == ""

    wait_for(gone, f"job {job} to leave the queue", timeout)


def wait_state(cluster: Cluster, states: tuple[str, ...], timeout: float = WAIT_S) -> str:
    return wait_for(lambda: (s := cluster.state()) in states and s, f"the node in {states}", timeout)


@pytest.fixture(scope="module")
def slurm(tmp_path_factory) -> Iterator[Cluster]:
    """A started one-node cluster for a test module; skipped, saying why, only where the packages
    cannot be installed."""
    why = install()
    if why:
        pytest.skip(f"no Slurm here: {why}")
    cluster = Cluster(tmp_path_factory.mktemp("slurm"))
    try:
        yield cluster.start()
    finally:
        cluster.close()
