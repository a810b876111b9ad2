"""A short questionnaire that recommends one of the four patterns, with its reasons, the reference
nodes that suit it, the sizing questions, the proofs to run and the targets to track."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

from aiworkbook.errors import SpecError
from aiworkbook.message import render
from aiworkbook.patterns.catalog import Pattern, get_pattern, proof_status
from aiworkbook.patterns.i18n import check_lang, text

QuestionKind = Literal["choice", "float", "bool"]


@dataclass(frozen=True)
class Question:
    """One question: its key, the kind of answer, the allowed choices, and whether it may stay empty."""

    key: str
    kind: QuestionKind
    choices: tuple[str, ...] = ()
    default: Any = None
    optional: bool = False

    def label(self, lang: str = "en") -> str:
        return text(f"question.{self.key}", lang)

    def choice_labels(self, lang: str = "en") -> dict[str, str]:
        return {c: text(f"answer.{self.key}.{c}", lang) for c in self.choices}

    def allowed(self) -> str:
        if self.kind == "choice":
            return ", ".join(self.choices)
        if self.kind == "bool":
            return "true or false"
        return "a number > 0" + (" or empty (none)" if self.optional else "")

    def parse(self, value: Any) -> Any:
        """The typed answer, or a SpecError naming the question and the allowed answers."""
        if value is None or (isinstance(value, str) and not value.strip()):
            if self.optional or self.default is not None:
                return self.default
            raise SpecError(self.key, value, self.allowed())
        if self.kind == "choice":
            if value not in self.choices:
                raise SpecError(self.key, value, self.allowed())
            return value
        if self.kind == "bool":
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.strip().lower() in ("true", "yes", "1", "false", "no", "0"):
                return value.strip().lower() in ("true", "yes", "1")
            raise SpecError(self.key, value, self.allowed())
        if isinstance(value, bool):
            raise SpecError(self.key, value, self.allowed())
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise SpecError(self.key, value, self.allowed()) from None
        if not math.isfinite(number) or number <= 0:
            raise SpecError(self.key, value, self.allowed())
        return number


QUESTIONS: tuple[Question, ...] = (
    Question("model_kind", "choice", ("tabular", "neural", "llm")),
    Question("phase", "choice", ("training", "serving", "both")),
    Question("latency_slo_ms", "float", optional=True),
    Question("separate_pools", "bool", default=False),
    Question("multi_node", "bool", default=False),
)


@dataclass(frozen=True)
class Answers:
    """Typed answers to QUESTIONS; build them with `Answers.parse(mapping)` to validate."""

    model_kind: str
    phase: str
    latency_slo_ms: float | None = None
    separate_pools: bool = False
    multi_node: bool = False

    @classmethod
    def parse(cls, answers: Answers | Mapping[str, Any]) -> Answers:
        if isinstance(answers, Answers):
            answers = asdict(answers)
        if not isinstance(answers, Mapping):
            raise SpecError("answers", type(answers).__name__, "a mapping of question key to answer")
        known = {q.key for q in QUESTIONS}
        for k in answers:
            if k not in known:
                raise SpecError("question", k, ", ".join(sorted(known)))
        return cls(**{q.key: q.parse(answers.get(q.key)) for q in QUESTIONS})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Recommendation:
    """The recommended pattern, why, which reference nodes suit it, and what to size, prove and track."""

    pattern: Pattern
    answers: Answers
    reasons: tuple[str, ...]
    nodes: tuple[str, ...]
    sizing_questions: tuple[str, ...]
    proofs: tuple[str, ...]
    planned_proofs: tuple[str, ...]
    targets: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "pattern": self.pattern.id,
            "title": self.pattern.title,
            "lang": self.pattern.lang,
            "answers": self.answers.to_dict(),
            "reasons": list(self.reasons),
            "nodes": list(self.nodes),
            "sizing_questions": list(self.sizing_questions),
            "proofs": list(self.proofs),
            "planned_proofs": list(self.planned_proofs),
            "targets": dict(self.targets),
        }


def choose(a: Answers) -> tuple[str, tuple[str, ...]]:
    """(pattern id, reason keys): the decision, without texts."""
    if a.model_kind == "tabular":
        extra = ("reason.tabular_serving",) if a.phase != "training" else ()
        return "classical-ml-cpu", ("reason.tabular", *extra)
    if a.phase == "training":
        return "dl-training", ("reason.training",)
    if a.phase == "serving":
        return "llm-inference", ("reason.serving",)
    if a.separate_pools:
        return "hybrid", ("reason.both_separate",)
    if a.latency_slo_ms is not None:
        return "hybrid", ("reason.both_slo",)
    return "dl-training", ("reason.both_shared",)


def suitable_nodes(pattern_id: str) -> tuple[str, ...]:
    """Reference node profiles (data/nodes) made for this pattern, or holding a pool that is."""
    from aiworkbook.specs import list_nodes

    out = []
    for node in list_nodes():
        if node.pattern == pattern_id or any(p.pattern == pattern_id for p in node.pools):
            out.append(node.name)
    return tuple(out)


def recommend(answers: Answers | Mapping[str, Any], lang: str = "en") -> Recommendation:
    """Recommend a pattern from the answers to QUESTIONS, with texts in `lang` (en, nl, de)."""
    check_lang(lang)
    a = Answers.parse(answers)
    pid, reason_keys = choose(a)
    pattern = get_pattern(pid, lang)
    reasons = [text(k, lang) for k in reason_keys]
    proofs = list(pattern.proofs)
    targets = list(pattern.targets)
    if a.latency_slo_ms is not None and a.phase != "training" and pid != "classical-ml-cpu":
        reasons.append(render("reason.slo", {"slo_ms": a.latency_slo_ms}, lang))
        targets += [t for t in ("p95_p99", "ttft") if t not in targets]
    if a.multi_node and pid != "classical-ml-cpu":
        reasons.append(text("reason.multi_node", lang))
        if "allreduce" not in proofs:
            proofs.append("allreduce")
    return Recommendation(
        pattern=pattern,
        answers=a,
        reasons=tuple(reasons),
        nodes=suitable_nodes(pid),
        sizing_questions=pattern.sizing_questions,
        proofs=tuple(proofs),
        planned_proofs=tuple(p for p in proofs if proof_status(p) == "planned"),
        targets={t: text(f"target.{t}", lang) for t in targets},
    )
