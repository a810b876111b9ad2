"""Tiny transformers models and an independent saved-bytes counter, shared by the sizing accuracy tests.

The models are built from the proof kit's small configs (aiworkbook.proofs.activation_truth), the one
place those configs live. The counter is written here, not borrowed from the proof kit, so the sizing tests do not check the
engine against code from the same project that they would also have to trust.
"""

from __future__ import annotations

import contextlib
import logging

import torch

from aiworkbook.proofs import activation_truth as truth

logging.getLogger("transformers").setLevel(logging.ERROR)
V = truth.VOCAB


def tiny_llama(attn: str, k: int = 2, layers: int = 2):
    """The proof kit's small Llama (aiworkbook.proofs.activation_truth: one source of the small configs)
    with `k` KV heads and `layers` layers, untied head."""
    over = dict(num_key_value_heads=k, num_hidden_layers=layers, tie_word_embeddings=False)
    return truth.build("llama", "fp32", attn, **over)


def tiny_gpt2(attn: str, drop: float = 0.0, layers: int = 2):
    """The proof kit's small GPT-2 with every dropout at `drop` and `layers` layers."""
    over = dict(num_hidden_layers=layers, resid_pdrop=drop, embd_pdrop=drop, attn_pdrop=drop)
    return truth.build("gpt2", "fp32", attn, **over)


def saved_bytes(model, forward, params=None, autocast: bool = False) -> dict[str, int]:
    """Unique storages autograd saves inside `forward()` (parameters excluded), by dtype and in total."""
    params = {p.untyped_storage().data_ptr() for p in (params or model.parameters())}
    seen: dict[int, tuple[int, str]] = {}

    def pack(t):
        st = t.untyped_storage()
        if st.data_ptr() not in params:
            seen[st.data_ptr()] = (st.nbytes(), str(t.dtype).replace("torch.", ""))
        return t

    torch.manual_seed(0)
    amp = torch.autocast("cpu", dtype=torch.bfloat16) if autocast else contextlib.nullcontext()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), amp:
        loss = forward()
    assert loss.requires_grad
    out: dict[str, int] = {}
    for n, dt in seen.values():
        out[dt] = out.get(dt, 0) + n
    out["total"] = sum(n for n, _ in seen.values())
    return out


def hf_forward(model, b: int, s: int):
    """One training forward with loss, without a KV cache (a training step needs none)."""
    model.train()
    ids = torch.randint(0, V, (b, s), generator=torch.Generator().manual_seed(1))
    return lambda: model(input_ids=ids, labels=ids, use_cache=False).loss
