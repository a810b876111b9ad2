"""ProofResult: one measurement next to the estimate it tests, with its statistics, flags and environment.

Persisted through aiworkbook.persist (atomic, kind + schema_version), so a locked profile can hold it
and a later check can read it back.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any

from aiworkbook.errors import SpecError
from aiworkbook.persist import read_json, write_json
from aiworkbook.proofs.flags import check_flags
from aiworkbook.proofs.stats import Stats
from aiworkbook.proofs.verdict import verdict_words

KIND = "aiworkbook.proof-result"
SCHEMA_VERSION = 1
# error: measured nothing; invalid: a load point failed too often or measured too few to trust
VERDICTS = ("pass", "fail", "info", "does-not-fit", "interrupted", "error", "invalid")


def verdict_for(measured: float | None, predicted: float | None, tolerance: float) -> str:
    """'pass' when |measured/predicted - 1| <= tolerance, 'fail' otherwise, 'info' when nothing to compare."""
    if measured is None or not predicted:
        return "info"
    return "pass" if abs(measured / predicted - 1) <= tolerance else "fail"


@dataclass
class ProofResult:
    """What a proof ran, what it predicted, what it measured, and how far to trust it.

    `predicted` is the Estimate figure under test (named by `predicted_label`), `measured` the same
    quantity measured; `ratio` = measured / predicted. `details` holds the side-by-side tables.
    """

    proof: str
    device: str
    inputs: dict[str, Any]
    measured: float | None
    unit: str
    predicted: float | None = None
    predicted_label: str = ""
    tolerance: float = 0.10
    verdict: str = ""
    samples: list[float] = field(default_factory=list)
    stats: Stats | None = None
    flags: list[str] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    #: typed for roofline, vram and kv (proofs.details: `r.details.components`); a dict for other proofs;
    #: `r.details["key"]` reads either
    details: Any = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    created: str = ""

    def __post_init__(self) -> None:
        self.flags = check_flags(self.flags)
        from aiworkbook.proofs.details import typed

        self.details = typed(self.proof, self.details)
        if self.tolerance < 0:
            raise SpecError("tolerance", self.tolerance, ">= 0")
        if not self.verdict:
            self.verdict = verdict_for(self.measured, self.predicted, self.tolerance)
        if self.verdict not in VERDICTS:
            raise SpecError("verdict", self.verdict, ", ".join(VERDICTS))
        if not self.created:
            self.created = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")

    @property
    def ratio(self) -> float | None:
        if self.measured is None or not self.predicted:
            return None
        return self.measured / self.predicted

    def to_dict(self) -> dict[str, Any]:
        return {
            "proof": self.proof,
            "device": self.device,
            "inputs": self.inputs,
            "predicted_label": self.predicted_label,
            "predicted": self.predicted,
            "measured": self.measured,
            "unit": self.unit,
            "ratio": self.ratio,
            "tolerance": self.tolerance,
            "verdict": self.verdict,
            "samples": list(self.samples),
            "stats": self.stats.to_dict() if self.stats else None,
            "flags": list(self.flags),
            "environment": self.environment,
            "details": self.details.to_dict() if hasattr(self.details, "to_dict") else self.details,
            "notes": list(self.notes),
            "created": self.created,
            **_messages(self.predicted_label, self.notes),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ProofResult:
        try:
            return cls(
                proof=d["proof"],
                device=d["device"],
                inputs=d.get("inputs", {}),
                measured=d.get("measured"),
                unit=d.get("unit", ""),
                predicted=d.get("predicted"),
                predicted_label=said_label(d),
                tolerance=d.get("tolerance", 0.10),
                verdict=d.get("verdict", ""),
                samples=list(d.get("samples", [])),
                stats=Stats.from_dict(d["stats"]) if d.get("stats") else None,
                flags=list(d.get("flags", [])),
                environment=d.get("environment", {}),
                details=d.get("details", {}),
                notes=said_notes(d),
                created=d.get("created", ""),
            )
        except KeyError as exc:
            raise SpecError(str(exc.args[0]), "missing", "a proof result field") from None

    def save(self, path) -> None:
        write_json(path, self.to_dict(), kind=KIND, schema_version=SCHEMA_VERSION)

    @classmethod
    def load(cls, path) -> ProofResult:
        doc = read_json(path, kind=KIND, max_version=SCHEMA_VERSION)
        doc.pop("kind", None)
        doc.pop("schema_version", None)
        return cls.from_dict(doc)

    def headline(self, lang: str = "en") -> str:
        """One line for people, in `lang`: verdict, measured vs predicted, ratio and flags (the flags
        by their names)."""
        from aiworkbook.catalogue import catalogue
        from aiworkbook.message import Msg

        said = verdict_words({"verdict": self.verdict, "flags": self.flags})  # a CPU fallback says so
        versus: Msg | str = ""
        if self.predicted:
            versus = Msg(
                "proof.headline.versus",
                label=self.predicted_label or Msg("proof.headline.predicted"),
                predicted=_fmt(self.predicted, self.unit, lang),
                ratio=self.ratio,
                tolerance=self.tolerance,
            )
        return Msg(
            "proof.headline",
            verdict=catalogue(lang).get(f"verdict.{said}", said) if lang != "en" else said,
            proof=self.proof,
            # "remote": measured by another tool on a server elsewhere (an imported result), said in words
            device=Msg("device.remote") if self.device == "remote" else self.device,
            measured=_fmt(self.measured, self.unit, lang),
            versus=versus,
            flags=Msg("proof.headline.flags", flags=", ".join(self.flags)) if self.flags else "",
        ).render(lang)


def _messages(label: str, notes: list[str]) -> dict[str, Any]:
    """{"messages": ...}: the records (aiworkbook.message.record) of the label and the notes that are
    messages, so a stored result is said in another language after it is read back; {} when none is."""
    from aiworkbook.message import record

    recs = [record(n) for n in notes]
    out: dict[str, Any] = {}
    if record(label) is not None:
        out["predicted_label"] = record(label)
    if any(r is not None for r in recs):
        out["notes"] = recs
    return {"messages": out} if out else {}


def said_notes(d: dict[str, Any]) -> list[str]:
    """A stored result's notes (ProofResult.to_dict()), each a message again where the file recorded one."""
    from aiworkbook.message import restore

    notes = d.get("notes") or []
    msgs = d.get("messages")
    recs = msgs.get("notes") if isinstance(msgs, dict) else None
    recs = recs if isinstance(recs, list) and len(recs) == len(notes) else [None] * len(notes)
    return [restore(n, r) for n, r in zip(notes, recs, strict=True)]


def said_label(d: dict[str, Any]) -> str:
    """A stored result's predicted_label, a message again where the file recorded one."""
    from aiworkbook.message import restore

    msgs = d.get("messages")
    return restore(
        d.get("predicted_label", ""), msgs.get("predicted_label") if isinstance(msgs, dict) else None
    )


def _fmt(value: float | None, unit: str, lang: str = "en") -> str:
    from aiworkbook.units import fmt_value

    return fmt_value(value, unit, lang)
