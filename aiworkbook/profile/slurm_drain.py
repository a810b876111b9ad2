"""`check --slurm-drain`: a failing health check drains its Slurm node with a one-line reason
(`scontrol update nodename=... state=drain reason=...`), and a passing one resumes the node only
when the drain was its own (the reason starts with REASON_PREFIX): a node an admin drained for
something else stays drained."""

from __future__ import annotations

import os
import socket
import subprocess

from aiworkbook.errors import SpecError, printable

REASON_PREFIX = "aiworkbook check"
TIMEOUT_S = 10
REASON_MAX = 200


def this_node() -> str:
    """The Slurm node name: SLURMD_NODENAME where slurmd set it, else the short host name."""
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def _scontrol(*args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["scontrol", *args], capture_output=True, text=True, timeout=TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SpecError(
            "slurm_drain", " ".join(args[:2]), f"Slurm's scontrol on PATH, answering ({exc})"
        ) from None


def node_reason(node: str) -> tuple[str, str]:
    """(State, Reason) of `node` as scontrol shows it."""
    r = _scontrol("show", "node", "-o", node)
    if r.returncode != 0:
        raise SpecError("node", node, f"a node scontrol knows ({r.stderr.strip()[:200]})")
    text = r.stdout.strip()
    state = next((f.split("=", 1)[1] for f in text.split() if f.startswith("State=")), "")
    reason = text.split(" Reason=", 1)[1] if " Reason=" in text else ""
    return state, reason


def drain(node: str, reason: str) -> None:
    line = printable(" ".join(reason.split()), REASON_MAX)
    if not line.startswith(REASON_PREFIX):
        line = f"{REASON_PREFIX}: {line}"
    r = _scontrol("update", f"nodename={node}", "state=drain", f"reason={line}")
    if r.returncode != 0:
        raise SpecError("slurm_drain", node, f"a node this user may drain ({r.stderr.strip()[:200]})")


def resume_if_ours(node: str) -> bool:
    """Resume `node` when it is drained with our reason; True when it was."""
    state, reason = node_reason(node)
    if "DRAIN" not in state.upper() or not reason.startswith(REASON_PREFIX):
        return False
    r = _scontrol("update", f"nodename={node}", "state=resume")
    if r.returncode != 0:
        raise SpecError("slurm_drain", node, f"a node this user may resume ({r.stderr.strip()[:200]})")
    return True
