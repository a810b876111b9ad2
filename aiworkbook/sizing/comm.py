"""Tensor-parallel communication: the all-reduces a tensor-parallel group runs over the GPUs' scale-up
link (the catalogue's `scale_up`, `scale_up_bps`), as a time added to the roofline's step.

Megatron-style tensor parallelism all-reduces the layer output twice per layer per pass (after attention
and after the MLP): tokens × hidden activations each. A ring all-reduce sends 2(t−1)/t of those bytes from
every GPU; each direction gets half of the link's bidirectional figure. No overlap with compute is
assumed, and latency per message is left out: the term is a floor on the communication time, added to
a compute floor, so the step stays a lower bound with the link in it.
"""

from __future__ import annotations

from typing import Any

from aiworkbook.message import Msg
from aiworkbook.sizing.workload import Workload


def activation_bytes(dtype: str) -> int:
    """Bytes per activation element the all-reduce moves: 4 in fp32, 2 otherwise (bf16/fp16 compute)."""
    return 4 if dtype == "fp32" else 2


def tp_allreduce(spec: Any, w: Workload, gpu: Any, tokens: Any, passes: int, dtype: str) -> dict[str, Any]:
    """Time of one step's tensor-parallel all-reduces for `tokens` tokens over `passes` passes (1 forward;
    2 forward and backward), with the formula it came from. tp 1: no term (None: nothing to say). A GPU
    without a recorded link (`scale_up_bps` 0): time None, the formula says why."""
    t = w.tp
    if t <= 1:
        return {"tp_comm_s": None, "tp_comm_formula": None}
    link = gpu.scale_up_bps
    name = gpu.scale_up or "link"
    if not link:
        return {"tp_comm_s": None, "tp_comm_formula": Msg("term.comm.no_link", tp=t, gpu=gpu.name)}
    b = activation_bytes(dtype)
    moved = passes * 2 * spec.num_layers * 2 * (t - 1) / t * tokens * spec.hidden_size * b
    formula = Msg(
        "term.comm.tp",
        passes=passes,
        layers=spec.num_layers,
        tp=t,
        tokens=tokens,
        hidden=spec.hidden_size,
        b=b,
        link=name,
        gbps=link / 1e9,
    )
    return {"tp_comm_s": moved / (link / 2), "tp_comm_formula": formula}
