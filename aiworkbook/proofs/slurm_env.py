"""A rank's place in a Slurm job step, read the way torchrun users read it under `srun`: RANK from
SLURM_PROCID, WORLD_SIZE from SLURM_NTASKS, LOCAL_RANK from SLURM_LOCALID, and the rendezvous host
from the first node of SLURM_NODELIST (expanded by `scontrol show hostnames`; its address is the
NodeAddr Slurm itself uses to reach it, from `scontrol show node`). The port is derived from the job
id, so every task of the step agrees on it without talking first."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass

from aiworkbook.errors import SpecError

PORT_BASE, PORT_SPAN = 20000, 20000  # MASTER_PORT = 20000 + job id mod 20000 (below the ephemeral range)
TIMEOUT_S = 30


@dataclass(frozen=True)
class SlurmRank:
    rank: int
    world: int
    local: int
    master_addr: str
    master_port: int
    nodes: tuple[str, ...]

    def torch_env(self) -> dict[str, str]:
        """The variables torch.distributed's env:// rendezvous reads."""
        return {
            "RANK": str(self.rank),
            "WORLD_SIZE": str(self.world),
            "LOCAL_RANK": str(self.local),
            "MASTER_ADDR": self.master_addr,
            "MASTER_PORT": str(self.master_port),
        }


def _int(env: Mapping[str, str], name: str) -> int:
    value = env.get(name)
    if value is None or not value.isdigit():
        raise SpecError(name, value, "set by srun to a whole number (run this under srun)")
    return int(value)


def _scontrol(*args: str) -> str:
    try:
        r = subprocess.run(["scontrol", *args], capture_output=True, text=True, timeout=TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SpecError("scontrol", " ".join(args), f"Slurm's scontrol on PATH, answering ({exc})") from None
    if r.returncode != 0:
        raise SpecError("scontrol", " ".join(args), f"a working Slurm client ({r.stderr.strip()[:200]})")
    return r.stdout


def node_addr(node: str) -> str:
    """The address Slurm reaches `node` at (NodeAddr; the node's name where Slurm has none)."""
    for field in _scontrol("show", "node", "-o", node).split():
        if field.startswith("NodeAddr="):
            return field.split("=", 1)[1] or node
    return node


def from_env(env: Mapping[str, str] | None = None) -> SlurmRank:
    """This task's rank and the step's rendezvous; SpecError naming the variable when not under srun."""
    env = os.environ if env is None else env
    rank, world, local = _int(env, "SLURM_PROCID"), _int(env, "SLURM_NTASKS"), _int(env, "SLURM_LOCALID")
    if not rank < world:
        raise SpecError("SLURM_PROCID", rank, f"< SLURM_NTASKS ({world})")
    nodelist = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST")
    if not nodelist:
        raise SpecError("SLURM_NODELIST", None, "set by srun (run this under srun)")
    nodes = tuple(_scontrol("show", "hostnames", nodelist).split())
    if not nodes:
        raise SpecError("SLURM_NODELIST", nodelist, "a host list naming at least one node")
    job = _int(env, "SLURM_JOB_ID")
    return SlurmRank(rank, world, local, node_addr(nodes[0]), PORT_BASE + job % PORT_SPAN, nodes)
