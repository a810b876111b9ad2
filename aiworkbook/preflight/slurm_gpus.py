"""Inside a Slurm allocation, which GPUs Slurm gave this job and step (SLURM_JOB_GPUS, SLURM_STEP_GPUS:
the nodes' GPU indices) beside what CUDA will see (CUDA_VISIBLE_DEVICES, which Slurm sets for the
step), so the pre-flight says which GPUs it checked and whose they were."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from aiworkbook.message import Msg

VARIABLES = ("SLURM_JOB_ID", "SLURM_JOB_GPUS", "SLURM_STEP_GPUS", "CUDA_VISIBLE_DEVICES")


def allocation(env: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """The Slurm variables that are set ({name: value}); None outside a Slurm job."""
    env = os.environ if env is None else env
    if "SLURM_JOB_ID" not in env:
        return None
    return {v: env[v] for v in VARIABLES if v in env}


def line(alloc: dict[str, Any], checked: list[str]) -> Msg:
    """One line for the pre-flight's report: the allocation and the devices checked."""
    from aiworkbook.errors import printable

    given = ", ".join(f"{k}={printable(str(v), 80)}" for k, v in alloc.items())
    return Msg("preflight.cli.slurm", given=given, checked=", ".join(checked) or Msg("size.none"))
