"""Fingerprint: the parts of a node that change a measurement (GPU, driver, CUDA, torch, CPU), read
from a detected NodeProfile or from a ProofResult's environment, and which of them differ."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from aiworkbook.message import Joined, Msg

#: Fingerprint parts in the order a warning names them.
PARTS: tuple[str, ...] = ("gpu", "gpu_count", "driver", "cuda", "torch", "cpu")


class Fingerprint(BaseModel):
    """What a golden proof ran on. None: not known (no GPU, no NVML, no torch)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    gpu: str | None = None
    gpu_count: int = Field(default=0, ge=0)
    driver: str | None = None
    cuda: str | None = None
    torch: str | None = None
    cpu: str | None = None

    @classmethod
    def from_node(cls, node: Any) -> Fingerprint:
        """From a NodeProfile (best a detected one: a declared one knows no driver or torch)."""
        gpus = list(getattr(node, "gpus_detected", []) or [])
        return cls(
            gpu=gpus[0].name if gpus else (node.gpu if node.gpu_count else None),
            gpu_count=len(gpus) if gpus else int(node.gpu_count),
            driver=node.driver_version,
            cuda=node.cuda_version,
            torch=node.torch_version,
            cpu=node.cpu_model or None,
        )

    @classmethod
    def from_environment(cls, env: dict[str, Any]) -> Fingerprint:
        """From a ProofResult.environment (aiworkbook.proofs.environment.capture)."""
        gpus, host, tor = env_parts(env)
        first = gpus[0] if gpus else {}
        return cls(
            gpu=_known(first.get("name")),
            gpu_count=len(gpus),
            driver=_known(first.get("driver")),
            cuda=_known(tor.get("cuda")) or _known(host.get("torch_cuda")),
            torch=_known(tor.get("version")) or _known(host.get("torch_version")),
            cpu=_known(host.get("cpu_model")),
        )

    def diff(self, other: Fingerprint) -> dict[str, tuple[Any, Any]]:
        """{part: (this, other)} for every part that differs; empty when they match."""
        return {
            p: (getattr(self, p), getattr(other, p)) for p in PARTS if getattr(self, p) != getattr(other, p)
        }

    def describe(self) -> Msg:
        """'1 x NVIDIA L40S, driver 550.54.15, CUDA 12.4, torch 2.5.1, CPU AMD EPYC 9354' (a message)."""
        gpu = (
            Msg("fingerprint.gpus", count=self.gpu_count, gpu=self.gpu)
            if self.gpu
            else Msg("cli.nodes.no_gpu")
        )
        na = Msg("value.na")
        parts = {"driver": self.driver or na, "cuda": self.cuda or na, "torch": self.torch or na}
        return Msg("fingerprint.describe", gpu=gpu, **parts, cpu=self.cpu or na)


def env_parts(env: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """(GPUs, host, torch) of a ProofResult.environment, each empty where missing or not available."""
    gpus = [g for g in env.get("gpus", []) or [] if isinstance(g, dict)]
    host, tor = env.get("host"), env.get("torch")
    return gpus, host if isinstance(host, dict) else {}, tor if isinstance(tor, dict) else {}


def part_words(part: str) -> Msg:
    """A fingerprint part in words (gpu, gpu_count, driver, cuda, torch, cpu)."""
    return Msg(f"passive.what.{part}")


def said_changes(changes: dict[str, tuple[Any, Any]]) -> Msg:
    """'driver 550.54 -> 560.35, torch 2.4.0 -> 2.5.1' (locked -> now) as a message: each part in words,
    a value not recorded "unknown", in the reader's language."""
    pieces: list[Any] = []
    for p, (a, b) in changes.items():
        was, now = (Msg("passive.value.unknown") if v is None else _show(v) for v in (a, b))
        pieces += [", "] if pieces else []
        pieces.append(Msg("check.change", part=part_words(p), was=was, now=now))
    return Joined(*pieces)


def _show(v: Any, limit: int = 80) -> str:
    """A part for a one-line message: a GPU name or version, control characters escaped and cut at
    `limit` characters (a hand-edited profile or result may hold anything)."""
    from aiworkbook.errors import printable

    return "unknown" if v is None else printable(str(v), limit)


def _known(v: Any) -> str | None:
    """A telemetry value, or None for a missing or {"na": reason} one."""
    if v is None or isinstance(v, dict):
        return None
    return str(v)
