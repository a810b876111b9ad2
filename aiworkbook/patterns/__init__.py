"""The four workload patterns (classical ML on CPU, deep-learning training, LLM inference, hybrid) in
English, Dutch and German, and the questionnaire that recommends one.

    from aiworkbook.patterns import recommend
    rec = recommend({"model_kind": "llm", "phase": "serving", "latency_slo_ms": 500}, lang="nl")
    rec.pattern.title, rec.reasons, rec.nodes, rec.proofs, rec.targets
"""

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
