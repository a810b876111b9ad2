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
from aiworkbook.message import Msg, words
from aiworkbook.units import fmt_seconds


def check_positive(name: str, v: Any, *, zero: bool = False, upper: float = math.inf) -> float:
    """`v` as a float when it is a finite number > 0 (>= 0 with `zero`) and <= `upper`, else a SpecError."""
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        finite = "allowed.finite_min" if zero else "allowed.finite_above"
        raise SpecError(name, v, Msg(finite, low=0))
    if (v < 0 if zero else v <= 0) or v > upper:
        bounded = math.isfinite(upper)
        rule = {
            (True, False): "allowed.number_min",
            (False, False): "allowed.number_above",
            (True, True): "allowed.number_min_max",
            (False, True): "allowed.number_above_max",
        }[zero, bounded]
        raise SpecError(name, v, Msg(rule, low=0, high=upper))
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
            raise SpecError("proof", got, Msg("allowed.coldstart_result"), source=source)
        details: dict[str, Any] = d["details"] if isinstance(d.get("details"), dict) else {}
        if d.get("unit") != "s" or d.get("measured") is None:
            raise SpecError("measured", d.get("measured"), Msg("allowed.measured_seconds"), source=source)
        try:
            return cls(int(details.get("weights_bytes") or 0), float(d["measured"]), str(d.get("device", "")))
        except (TypeError, ValueError):
            raise SpecError(
                "details.weights_bytes",
                details.get("weights_bytes"),
                Msg("allowed.byte_count"),
                source=source,
            ) from None


@dataclass(frozen=True)
class Phase:
    """One phase: its name and formula are messages (their str the English text, said in a language
    when shown), `kind` the data: "assumed" (an input bandwidth or time), "measured" (a proof on a
    node), "skipped"."""

    name: Msg
    seconds: float
    formula: Msg
    kind: str


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

    def verdict(self) -> Msg:
        """One sentence a platform team acts on."""
        useful = self.from_load_rise_s
        if self.spike_s is None:
            return Msg("replica.verdict.no_spike", useful=useful)
        if self.follows:
            return Msg(
                "replica.verdict.follows", useful=useful, spare=self.spike_s - useful, spike=self.spike_s
            )
        slow = self.slowest()
        return Msg(
            "replica.verdict.cannot", useful=useful, spike=self.spike_s, phase=slow.name, s=slow.seconds
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
        raise SpecError("load_bps", None, Msg("allowed.load_bps"))
    phases = [
        _phase("provision", provision_s, Msg("replica.formula.input", s=provision_s))
        if provision_s
        else _skipped("provision", "replica.formula.node_ready"),
        _skipped("image_pull", "replica.formula.image_cached")
        if image_cached or not image
        else _phase("image_pull", image / pull, Msg("replica.formula.transfer", size=image, rate=pull)),
        _skipped("download", "replica.formula.weights_cached")
        if weights_cached
        else _phase(
            "download", weights / download, Msg("replica.formula.transfer", size=weights, rate=download)
        ),
    ]
    if coldstart is not None:
        said = Msg(
            "replica.formula.coldstart",
            size=weights,
            rate=coldstart.bps,
            measured=coldstart.weights_bytes,
            s=coldstart.measured_s,
            device=coldstart.device,
        )
        phases.append(_phase("load_first_token", weights / coldstart.bps, said, "measured"))
    else:
        rate = check_positive("load_bps", load_bps)
        phases.append(
            _phase("load", weights / rate, Msg("replica.formula.transfer", size=weights, rate=rate))
        )
    phases.append(
        _phase("warmup", warmup_s, Msg("replica.formula.input", s=warmup_s))
        if warmup_s
        else _skipped("warmup", "replica.formula.no_warmup")
    )
    return ReplicaTime(phases=tuple(phases), reaction_s=float(reaction_s), spike_s=spike_s)


def _phase(name: str, seconds: float, formula: Msg, kind: str = "assumed") -> Phase:
    """A phase named by its message `replica.phase.<name>`."""
    return Phase(Msg(f"replica.phase.{name}"), float(seconds), formula, kind)


def _skipped(name: str, why: str) -> Phase:
    return Phase(Msg(f"replica.phase.{name}"), 0.0, Msg(why), "skipped")


def _secs(s: float, lang: str) -> str:
    return "0 s" if s == 0 else fmt_seconds(s, lang)


def format_replica(r: ReplicaTime, lang: str = "en") -> str:
    """The plain-text table of `aiworkbook replica-time`, in `lang`."""
    rows = [
        (words(p.name, lang), p.seconds, words(Msg(f"replica.kind.{p.kind}"), lang), words(p.formula, lang))
        for p in r.phases
    ]
    total = [
        (
            words(Msg("replica.row.to_first_token"), lang),
            r.to_first_token_s,
            words(Msg("replica.row.to_first_token_note"), lang),
        ),
        (
            words(Msg("replica.row.autoscaler"), lang),
            r.reaction_s,
            words(Msg("replica.row.autoscaler_note"), lang),
        ),
        (words(Msg("replica.row.from_load_rise"), lang), r.from_load_rise_s, ""),
    ]
    width = max(len(x[0]) for x in rows + total)
    kind_width = max(8, *(len(x[2]) for x in rows))
    lines = [f"{n.ljust(width)}  {_secs(s, lang):>9}  {k:{kind_width}}  {f}" for n, s, k, f in rows]
    lines += [f"{n.ljust(width)}  {_secs(s, lang):>9}  {note}".rstrip() for n, s, note in total]
    lines += [words(r.verdict(), lang), words(Msg("replica.estimate"), lang)]
    return "\n".join(lines)
