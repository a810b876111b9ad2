"""Which devices CUDA shows this process, read from the environment as CUDA reads it (no NVML here).

CUDA_VISIBLE_DEVICES, when set, is the list: entries split on commas, each an index, a GPU-/MIG- UUID
or a unique prefix of one; CUDA stops at the first entry it cannot use, and an empty value means no
device at all. When it is unset, a container's NVIDIA_VISIBLE_DEVICES (the NVIDIA container runtime's:
"all", "none"/"void", or the same kinds of entries) decides which devices exist in the container, so
CUDA sees those; when neither is set, every device. Slurm's SLURM_STEP_GPUS/SLURM_JOB_GPUS are reported,
not used: Slurm also sets CUDA_VISIBLE_DEVICES, which is what CUDA reads. vLLM puts rank i of
tensor x pipeline parallel on the i-th visible device, so a pre-flight reads the first tp x pp of them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

CUDA = "CUDA_VISIBLE_DEVICES"
CONTAINER = "NVIDIA_VISIBLE_DEVICES"
SLURM = ("SLURM_STEP_GPUS", "SLURM_JOB_GPUS")
_ENTRY = re.compile(r"\d+|(?:GPU|MIG)-[0-9A-Za-z-/]*")


def entries(value: str) -> list[str]:
    """CUDA's reading of a device list: up to (not including) the first entry it cannot use."""
    out: list[str] = []
    for item in (x.strip() for x in value.split(",")):
        if not _ENTRY.fullmatch(item):
            break
        out.append(item)
    return out


@dataclass(frozen=True)
class Visibility:
    """What the environment says CUDA sees: `entries` None means every device."""

    variable: str | None  # the variable that decided (CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES) or None
    value: str | None
    entries: tuple[str, ...] | None
    slurm: dict[str, str] = field(default_factory=dict)

    @property
    def none(self) -> bool:
        return self.entries == ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "variable": self.variable,
            "value": self.value,
            "entries": None if self.entries is None else list(self.entries),
            "slurm": self.slurm,
        }


def read(environ: Mapping[str, str] | None = None) -> Visibility:
    env = os.environ if environ is None else environ
    slurm = {k: env[k] for k in SLURM if k in env}
    if CUDA in env:
        return Visibility(CUDA, env[CUDA], tuple(entries(env[CUDA])), slurm)
    if CONTAINER in env:
        value = env[CONTAINER].strip()
        if value.lower() == "all":
            return Visibility(CONTAINER, env[CONTAINER], None, slurm)
        if value.lower() in ("none", "void", ""):
            return Visibility(CONTAINER, env[CONTAINER], (), slurm)
        return Visibility(CONTAINER, env[CONTAINER], tuple(entries(value)), slurm)
    return Visibility(None, None, None, slurm)


def match(entry: str, indices: Sequence[int | None], uuids: Sequence[str]) -> int | None:
    """The position of the device an entry names among CUDA's candidates (their NVML `indices` and
    `uuids`, "GPU-..." or "MIG-..."): the index, the UUID or its unique prefix; None when none or many."""
    if entry.isdigit():
        return indices.index(int(entry)) if int(entry) in indices else None
    hits = [i for i, u in enumerate(uuids) if u.startswith(entry)]
    return hits[0] if len(hits) == 1 else None
