"""The scaled-dot-product attention backend a proof runs, chosen explicitly and recorded.

Left to itself, torch picks SDPA's backend per call, and on Hopper with torch >= 2.10 built for CUDA
>= 12.9 it prefers cuDNN, which builds a graph for every new shape (0.26-0.45 s each, public torch
issues): a KV or serving proof that times many shapes would time those builds. The proofs therefore
run under `pinned()`: flash, then memory-efficient, then math, in that order, never cuDNN. `record()`
says which of them actually runs here for a representative call (the first of the policy that
accepts it), with the versions that make it, and goes into every ProofResult's environment.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: the order the proofs allow, by the names results use; cuDNN is left out on purpose (see above)
POLICY: tuple[str, ...] = ("flash", "efficient", "math")


def _backends() -> dict[str, Any]:
    from torch.nn.attention import SDPBackend

    return {
        "flash": SDPBackend.FLASH_ATTENTION,
        "efficient": SDPBackend.EFFICIENT_ATTENTION,
        "math": SDPBackend.MATH,
    }


@contextmanager
def pinned() -> Iterator[None]:
    """SDPA restricted to POLICY, tried in that order (torch's `sdpa_kernel(..., set_priority=True)`)."""
    from torch.nn.attention import sdpa_kernel

    by_name = _backends()
    with sdpa_kernel([by_name[n] for n in POLICY], set_priority=True):
        yield


def _runs(name: str, device: str, dtype: Any, head_dim: int, gqa: bool) -> bool:
    """Whether SDPA runs a small causal call on `name` alone, inside whatever is pinned now."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel

    kv_heads = 2 if gqa else 8
    q = torch.zeros(1, 8, 16, head_dim, device=device, dtype=dtype)
    k = torch.zeros(1, kv_heads, 16, head_dim, device=device, dtype=dtype)
    try:
        with sdpa_kernel([_backends()[name]]):
            F.scaled_dot_product_attention(q, k, k, is_causal=True, enable_gqa=gqa)
        return True
    except RuntimeError:  # "No available kernel": this backend does not take these inputs here
        return False


def record(device: str = "cpu", dtype: Any = None, head_dim: int = 64, gqa: bool = True) -> dict[str, Any]:
    """The backend the pinned policy runs here for a causal GQA call (bf16 on CUDA, fp32 on the CPU
    unless `dtype` says), and the versions behind it. Measured by running it, not read from a table."""
    import torch

    if dtype is None:
        dtype = torch.bfloat16 if device == "cuda" else torch.float32
    doc: dict[str, Any] = {
        "policy": list(POLICY),
        "probe": {"dtype": str(dtype).removeprefix("torch."), "head_dim": head_dim, "gqa": gqa},
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn_sdp_enabled": bool(torch.backends.cuda.cudnn_sdp_enabled()),
    }
    with pinned():
        doc["cudnn_sdp_enabled_pinned"] = bool(torch.backends.cuda.cudnn_sdp_enabled())
        doc["backend"] = next((n for n in POLICY if _runs(n, device, dtype, head_dim, gqa)), "none")
    if device == "cuda" and torch.cuda.is_available():
        p = torch.cuda.get_device_properties(torch.cuda.current_device())
        doc["capability"] = f"{p.major}.{p.minor}"
    # flash and memory-efficient are the kernels compiled into this torch build: its version is theirs
    doc["version"] = f"torch {torch.__version__} built-in" if doc["backend"] != "none" else None
    return doc


def attention_check(device: str) -> dict[str, Any]:
    """record() with a one-line detail (a message: its str the English), for benchmarks/gpu_checks.py."""
    from aiworkbook.message import Msg

    doc = record(device)
    built_in = Msg("attention.built_in", torch=doc["torch"]) if doc["version"] else Msg("value.na")
    cudnn = Msg("attention.cudnn_on") if doc["cudnn_sdp_enabled_pinned"] else Msg("attention.cudnn_off")
    probe = doc["probe"]
    doc["detail"] = Msg(
        "attention.detail",
        dtype=probe["dtype"],
        head_dim=probe["head_dim"],
        device=device,
        version=built_in,
        cudnn=cudnn,
    )
    return doc
