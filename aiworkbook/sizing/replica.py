"""Time to a useful replica: from the autoscaler's decision to the first token of a new model-server
replica (node provisioning, image pull, weight download, load into GPU memory, warm-up), beside the
autoscaler's own reaction time and the length of the load spike, so the sizing says whether scaling
out can follow the load at all or the fleet must keep warm capacity.

The seeds' example: a server pulls a 14 GB image and 140 GB of weights and is useful four minutes
later, after the traffic spike. Each phase is size / bandwidth (inputs, labelled as assumptions) or a
measured time: the coldstart proof (aiworkbook/proofs/coldstart.py) measures disk to first logits on
this node; its rate replaces the assumed load bandwidth when its result is given. Pure: no torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from aiworkbook.errors import SpecError
from aiworkbook.units import fmt_bytes, fmt_rate, fmt_seconds


def check_positive(name: str, v: Any, *, zero: bool = False, upper: float = math.inf) -> float:
    """`v` as a float when it is a finite number > 0 (>= 0 with `zero`) and <= `upper`, else a SpecError."""
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise SpecError(name, v, f"a finite number {'>= 0' if zero else '> 0'}")
    if (v < 0 if zero else v <= 0) or v > upper:
        bound = f" and <= {upper:g}" if math.isfinite(upper) else ""
        raise SpecError(name, v, f"a number {'>= 0' if zero else '> 0'}{bound}")
    return float(v)


@dataclass(frozen=True)
class ColdStart:
    """What the coldstart proof measured: `weights_bytes` from disk (page cache dropped) to the first
    forward pass in `measured_s` on `device`. Its rate is the node's load rate, weights to first logits."""

    weights_bytes: int
    measured_s: float
    device: str = "unknown device"

    def __post_init__(self) -> None:
        check_positive("coldstart.weights_bytes", self.weights_bytes)
        check_positive("coldstart.measured_s", self.measured_s)

    @property
    def bps(self) -> float:
        return self.weights_bytes / self.measured_s

    @classmethod
    def from_result(cls, d: Any, source: str | None = None) -> ColdStart:
        """From a coldstart ProofResult's JSON (`aiworkbook prove coldstart --json`/its saved file)."""
        if not isinstance(d, dict) or d.get("proof") != "coldstart":
            got = d.get("proof") if isinstance(d, dict) else type(d).__name__
            raise SpecError("proof", got, "a coldstart proof result", source=source)
        details: dict[str, Any] = d["details"] if isinstance(d.get("details"), dict) else {}
        if d.get("unit") != "s" or d.get("measured") is None:
            raise SpecError("measured", d.get("measured"), "a measured time in s", source=source)
        try:
            return cls(int(details.get("weights_bytes") or 0), float(d["measured"]), str(d.get("device", "")))
        except (TypeError, ValueError):
            raise SpecError(
                "details.weights_bytes", details.get("weights_bytes"), "a byte count", source=source
            ) from None


@dataclass(frozen=True)
class Phase:
    name: str
    seconds: float
    formula: str
    kind: str  # "assumed" (an input bandwidth or time), "measured" (a proof on a node), "skipped"


@dataclass(frozen=True)
class ReplicaTime:
    """The phases from scale-up to first token, their sum, and against the load spike."""

    phases: tuple[Phase, ...]
    reaction_s: float
    spike_s: float | None

    @property
    def to_first_token_s(self) -> float:
        """From the autoscaler's decision (a new pod requested) to the replica's first token."""
        return sum(p.seconds for p in self.phases)

    @property
    def from_load_rise_s(self) -> float:
        """From the rise in load to the replica's first token: the autoscaler's reaction first."""
        return self.reaction_s + self.to_first_token_s

    @property
    def follows(self) -> bool | None:
        """Whether the new replica is useful before the spike is over (None: no spike length given)."""
        return None if self.spike_s is None else self.from_load_rise_s <= self.spike_s

    def verdict(self) -> str:
        """One sentence a platform team acts on."""
        useful = fmt_seconds(self.from_load_rise_s)
        if self.spike_s is None:
            return f"a new replica is useful {useful} after the load rises (give --spike-s to compare)"
        if self.follows:
            spare = fmt_seconds(self.spike_s - self.from_load_rise_s)
            return (
                f"scaling out can follow: a new replica is useful {useful} after the load rises, "
                f"{spare} before a {fmt_seconds(self.spike_s)} spike ends"
            )
        return (
            f"scaling out cannot follow: a new replica is useful {useful} after the load rises, "
            f"after a {fmt_seconds(self.spike_s)} spike is over; keep warm capacity for the spike "
            f"(or cut the slowest phase: {self.slowest().name}, {fmt_seconds(self.slowest().seconds)})"
        )

    def slowest(self) -> Phase:
        return max(self.phases, key=lambda p: p.seconds)

    def to_dict(self) -> dict[str, Any]:
        return {
            "phases": [
                {"name": p.name, "seconds": p.seconds, "formula": p.formula, "kind": p.kind}
                for p in self.phases
            ],
            "to_first_token_s": self.to_first_token_s,
            "autoscaler_reaction_s": self.reaction_s,
            "from_load_rise_s": self.from_load_rise_s,
            "spike_s": self.spike_s,
            "follows": self.follows,
            "verdict": self.verdict(),
        }


def replica_time(
    *,
    image_bytes: float,
    weights_bytes: float,
    image_pull_bps: float,
    weights_download_bps: float,
    load_bps: float | None = None,
    coldstart: ColdStart | None = None,
    warmup_s: float = 0.0,
    provision_s: float = 0.0,
    reaction_s: float = 0.0,
    spike_s: float | None = None,
    image_cached: bool = False,
    weights_cached: bool = False,
) -> ReplicaTime:
    """The time from scale-up to first token of one new replica.

    image_bytes / image_pull_bps: the container image from the registry (0 s when cached on the node);
    weights_bytes / weights_download_bps: the weights from object storage to local disk (0 s when
    cached); load: weights from local disk to first logits, at `coldstart`'s measured rate when given,
    else at `load_bps`; warmup_s: the engine's warm-up (CUDA graph capture, compilation, a first
    request); provision_s: a new node when none is free (the cluster autoscaler); reaction_s: the
    autoscaler's metric window + decision, before any of this starts; spike_s: how long the load spike lasts.
    """
    image = check_positive("image_bytes", image_bytes, zero=True)
    weights = check_positive("weights_bytes", weights_bytes)
    pull = check_positive("image_pull_bps", image_pull_bps)
    download = check_positive("weights_download_bps", weights_download_bps)
    for name, v in (("warmup_s", warmup_s), ("provision_s", provision_s), ("reaction_s", reaction_s)):
        check_positive(name, v, zero=True, upper=7 * 86400)
    if spike_s is not None:
        check_positive("spike_s", spike_s, upper=7 * 86400)
    if coldstart is None and load_bps is None:
        raise SpecError("load_bps", None, "a disk-to-GPU load bandwidth in B/s, or a coldstart proof result")
    phases = [
        Phase("node provisioning", float(provision_s), f"{fmt_seconds(provision_s)} (input)", "assumed")
        if provision_s
        else Phase("node provisioning", 0.0, "a node with a free GPU is ready", "skipped"),
        Phase("image pull", 0.0, "image cached on the node", "skipped")
        if image_cached or not image
        else Phase(
            "image pull", image / pull, f"{fmt_bytes(image, 'GB')} / {fmt_rate(pull, 'auto')}", "assumed"
        ),
        Phase("weight download", 0.0, "weights cached on the node", "skipped")
        if weights_cached
        else Phase(
            "weight download",
            weights / download,
            f"{fmt_bytes(weights, 'GB')} / {fmt_rate(download, 'auto')}",
            "assumed",
        ),
    ]
    if coldstart is not None:
        phases.append(
            Phase(
                "load to first token",
                weights / coldstart.bps,
                f"{fmt_bytes(weights, 'GB')} at the coldstart proof's {fmt_rate(coldstart.bps, 'auto')} "
                f"({fmt_bytes(coldstart.weights_bytes, 'auto')} to first logits in "
                f"{fmt_seconds(coldstart.measured_s)} on {coldstart.device})",
                "measured",
            )
        )
    else:
        rate = check_positive("load_bps", load_bps)
        phases.append(
            Phase("load", weights / rate, f"{fmt_bytes(weights, 'GB')} / {fmt_rate(rate, 'auto')}", "assumed")
        )
    phases.append(
        Phase("warm-up", float(warmup_s), f"{fmt_seconds(warmup_s)} (input)", "assumed")
        if warmup_s
        else Phase("warm-up", 0.0, "no warm-up given", "skipped")
    )
    return ReplicaTime(phases=tuple(phases), reaction_s=float(reaction_s), spike_s=spike_s)


def _secs(s: float) -> str:
    return "0 s" if s == 0 else fmt_seconds(s)


def format_replica(r: ReplicaTime) -> str:
    """The plain-text table of `aiworkbook replica-time`."""
    width = max(len(p.name) for p in r.phases)
    lines = [f"{p.name.ljust(width)}  {_secs(p.seconds):>9}  {p.kind:8}  {p.formula}" for p in r.phases]
    lines += [
        f"{'to first token'.ljust(width)}  {_secs(r.to_first_token_s):>9}  (from the scale-up decision)",
        f"{'+ autoscaler'.ljust(width)}  {_secs(r.reaction_s):>9}  (its reaction: metric window + decision)",
        f"{'from load rise'.ljust(width)}  {_secs(r.from_load_rise_s):>9}",
        r.verdict(),
        "estimate: bandwidths and times are inputs (assumed) unless marked measured",
    ]
    return "\n".join(lines)
