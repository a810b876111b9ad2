"""The four patterns: what each one sizes, which proofs it runs, what it tracks; texts per language."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiworkbook.errors import SpecError
from aiworkbook.patterns.i18n import text, texts
from aiworkbook.proofs.registry import PATTERN_PROOFS
from aiworkbook.specs.node import PATTERNS

#: Every target a pattern may track (labels under "target.<key>" in each language table).
TARGETS: tuple[str, ...] = (
    "cpu_utilisation",
    "ram_peak",
    "run_time_variance",
    "staging_time",
    "gpu_utilisation",
    "input_wait",
    "loader_throughput",
    "checkpoint_time",
    "checkpoint_frequency",
    "failure_restart",
    "peak_vram",
    "p95_p99",
    "ttft",
    "throughput_at_slo",
    "kv_headroom",
    "cold_start",
    "promotion_time",
    "restore_time",
    "pool_cost",
)


@dataclass(frozen=True)
class Pattern:
    """One pattern in one language: criteria, infrastructure, sizing questions, proofs, targets."""

    id: str
    lang: str
    title: str
    summary: str
    use_when: tuple[str, ...]
    infrastructure: tuple[str, ...]
    red_flags: tuple[str, ...]
    sizing_questions: tuple[str, ...]
    proofs: tuple[str, ...]
    targets: tuple[str, ...]

    def target_labels(self) -> dict[str, str]:
        return {t: text(f"target.{t}", self.lang) for t in self.targets}

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "lang": self.lang,
            "title": self.title,
            "summary": self.summary,
            "use_when": list(self.use_when),
            "infrastructure": list(self.infrastructure),
            "red_flags": list(self.red_flags),
            "sizing_questions": list(self.sizing_questions),
            "proofs": list(self.proofs),
            "targets": self.target_labels(),
        }


#: Language-independent facts per pattern: the targets to track. The proofs to run (in order) are
#: aiworkbook.proofs.registry.PATTERN_PROOFS, the one table the proof registry reads too.
_FACTS: dict[str, dict[str, tuple[str, ...]]] = {
    "classical-ml-cpu": {
        "targets": ("cpu_utilisation", "ram_peak", "run_time_variance", "staging_time", "restore_time"),
    },
    "dl-training": {
        "targets": (
            "gpu_utilisation",
            "input_wait",
            "loader_throughput",
            "peak_vram",
            "checkpoint_time",
            "checkpoint_frequency",
            "failure_restart",
        ),
    },
    "llm-inference": {
        "targets": ("p95_p99", "ttft", "throughput_at_slo", "kv_headroom", "cold_start"),
    },
    "hybrid": {
        "targets": (
            "gpu_utilisation",
            "checkpoint_time",
            "p95_p99",
            "ttft",
            "kv_headroom",
            "promotion_time",
            "restore_time",
            "pool_cost",
        ),
    },
}


def check_pattern(pattern_id: str) -> str:
    if pattern_id not in _FACTS:
        raise SpecError("pattern", pattern_id, ", ".join(PATTERNS))
    return pattern_id


def get_pattern(pattern_id: str, lang: str = "en") -> Pattern:
    """The pattern `pattern_id` (one of specs.PATTERNS) with its texts in `lang` (en, nl, de)."""
    check_pattern(pattern_id)
    k = f"pattern.{pattern_id}"
    return Pattern(
        id=pattern_id,
        lang=lang,
        title=text(f"{k}.title", lang),
        summary=text(f"{k}.summary", lang),
        use_when=texts(f"{k}.use_when", lang),
        infrastructure=texts(f"{k}.infrastructure", lang),
        red_flags=texts(f"{k}.red_flags", lang),
        sizing_questions=texts(f"{k}.sizing", lang),
        proofs=PATTERN_PROOFS[pattern_id],
        targets=_FACTS[pattern_id]["targets"],
    )


def patterns(lang: str = "en") -> list[Pattern]:
    """All four patterns in the order of specs.PATTERNS."""
    return [get_pattern(p, lang) for p in PATTERNS]


def proof_status(name: str) -> str:
    """'available' when the proof is in the registry on this install, 'planned' otherwise."""
    from aiworkbook.proofs import registry

    return "available" if name in registry.names() else "planned"
