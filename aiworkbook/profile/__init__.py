"""LockedProfile: the decision written down (lock), checked again after every driver, firmware or
framework change (check) and shown to stakeholders (report), with deployment snippets.

    from aiworkbook.profile import lock, load_profile, check
    prof = lock("llm-inference", node="inference-4xl40s", workloads=[...], results=["kv.json"])
    prof.save("profile.json")
    report = check(load_profile("profile.json"))       # re-runs the golden proofs here
    report.exit_code, [c.line() for c in report.checks]

Each name loads its module on first use (aiworkbook.lazy_exports): a dashboard kernel that needs the
deployment snippets (the KV planner's `vllm serve` line) does not load the profile model, its pydantic
schema and the check (start-up, issue 33).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiworkbook.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from aiworkbook.profile.check import CheckReport, ProofCheck, check, classify
    from aiworkbook.profile.fingerprint import PARTS, Fingerprint
    from aiworkbook.profile.lock import lock
    from aiworkbook.profile.model import (
        KIND,
        SCHEMA_VERSION,
        GoldenProof,
        LockedProfile,
        NodeSection,
        Tolerance,
        WorkloadEntry,
        load_profile,
        profile_from_dict,
    )

__all__ = [
    "KIND",
    "PARTS",
    "SCHEMA_VERSION",
    "CheckReport",
    "Fingerprint",
    "GoldenProof",
    "LockedProfile",
    "NodeSection",
    "ProofCheck",
    "Tolerance",
    "WorkloadEntry",
    "check",
    "classify",
    "load_profile",
    "lock",
    "profile_from_dict",
]

lazy_exports(
    __name__,
    {
        **dict.fromkeys(("CheckReport", "ProofCheck", "check", "classify"), f"{__name__}.check"),
        **dict.fromkeys(("PARTS", "Fingerprint"), f"{__name__}.fingerprint"),
        "lock": f"{__name__}.lock",
        **dict.fromkeys(
            (
                "KIND",
                "SCHEMA_VERSION",
                "GoldenProof",
                "LockedProfile",
                "NodeSection",
                "Tolerance",
                "WorkloadEntry",
                "load_profile",
                "profile_from_dict",
            ),
            f"{__name__}.model",
        ),
    },
)
