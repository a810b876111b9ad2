"""Restore proof: the read side of the checkpoint proof, from a cold page cache, every tensor checked.

It saves the same state as the checkpoint proof (so a restore always reads a checkpoint it can verify),
then reports cold restore throughput against the assumed storage read speed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from aiworkbook.proofs import checkpoint as C
from aiworkbook.proofs.control import NULL, Control
from aiworkbook.proofs.registry import Plan
from aiworkbook.proofs.result import ProofResult
from aiworkbook.units import fmt_rate


def plan(**inputs: Any) -> Plan:
    p = C.plan(**inputs)
    est = C.estimate_storage(
        *C._inputs(inputs.get("model"), inputs.get("size_mb"), bool(inputs.get("quick")))
    )
    return replace(
        p,
        proof="restore",
        predicted=est["assumed_read_bps"],
        predicted_label="assumed storage read speed",
        notes=(*p.notes, f"restores read cold at the assumed {fmt_rate(est['assumed_read_bps'])}"),
    )


def run(
    *, control: Control = NULL, format: str = "safetensors", gpus: int = 1024, **inputs: Any
) -> ProofResult:
    fmt = C._check_format(format)
    fmts = C.parse_formats(inputs.pop("formats", fmt))
    if fmt not in fmts:
        fmts = (fmt, *fmts)
    m = C.measure(formats=",".join(fmts), control=control, **inputs)
    return C.result("restore", m, fmt, gpus, inputs, restore=True)
