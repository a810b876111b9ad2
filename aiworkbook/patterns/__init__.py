"""The four workload patterns (classical ML on CPU, deep-learning training, LLM inference, hybrid) in
English, Dutch and German, and the questionnaire that recommends one.

    from aiworkbook.patterns import recommend
    rec = recommend({"model_kind": "llm", "phase": "serving", "latency_slo_ms": 500}, lang="nl")
    rec.pattern.title, rec.reasons, rec.nodes, rec.proofs, rec.targets

Each name loads its module on first use: a dashboard kernel that needs a sentence of the catalogue
(`text`, for the charts' words and the "measured where" line) does not load the patterns' catalogue,
the questionnaire and the proofs' registry they read (start-up, issue 33).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aiworkbook.patterns.catalog import TARGETS, Pattern, get_pattern, patterns, proof_status
    from aiworkbook.patterns.i18n import LANGS, TABLES, text, texts
    from aiworkbook.patterns.questionnaire import (
        QUESTIONS,
        Answers,
        Question,
        Recommendation,
        recommend,
        suitable_nodes,
    )
    from aiworkbook.specs.node import PATTERNS

#: each public name -> the module that defines it
_WHERE = {
    **dict.fromkeys(
        ("TARGETS", "Pattern", "get_pattern", "patterns", "proof_status"), "aiworkbook.patterns.catalog"
    ),
    **dict.fromkeys(("LANGS", "TABLES", "text", "texts"), "aiworkbook.patterns.i18n"),
    **dict.fromkeys(
        ("QUESTIONS", "Answers", "Question", "Recommendation", "recommend", "suitable_nodes"),
        "aiworkbook.patterns.questionnaire",
    ),
    "PATTERNS": "aiworkbook.specs.node",
}

__all__ = [
    "LANGS",
    "PATTERNS",
    "QUESTIONS",
    "TABLES",
    "TARGETS",
    "Answers",
    "Pattern",
    "Question",
    "Recommendation",
    "get_pattern",
    "patterns",
    "proof_status",
    "recommend",
    "suitable_nodes",
    "text",
    "texts",
]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(import_module(_WHERE[name]), name)
        globals()[name] = value  # looked up once
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
