"""The four workload patterns (classical ML on CPU, deep-learning training, LLM inference, hybrid) in
English, Dutch and German, and the questionnaire that recommends one.

    from aiworkbook.patterns import recommend
    rec = recommend({"model_kind": "llm", "phase": "serving", "latency_slo_ms": 500}, lang="nl")
    rec.pattern.title, rec.reasons, rec.nodes, rec.proofs, rec.targets

Each name loads its module on first use (aiworkbook.lazy_exports): a dashboard kernel that needs a
sentence of the catalogue (`text`, for the charts' words and the "measured where" line) does not load
the patterns' catalogue, the questionnaire and the proofs' registry they read (start-up, issue 33).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiworkbook.lazy_exports import lazy_exports

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

lazy_exports(
    __name__,
    {
        **dict.fromkeys(
            ("TARGETS", "Pattern", "get_pattern", "patterns", "proof_status"), f"{__name__}.catalog"
        ),
        **dict.fromkeys(("LANGS", "TABLES", "text", "texts"), f"{__name__}.i18n"),
        **dict.fromkeys(
            ("QUESTIONS", "Answers", "Question", "Recommendation", "recommend", "suitable_nodes"),
            f"{__name__}.questionnaire",
        ),
        "PATTERNS": "aiworkbook.specs.node",
    },
)
