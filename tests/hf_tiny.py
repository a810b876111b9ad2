"""Tiny transformers models and an independent saved-bytes counter, shared by the sizing accuracy tests.

The counter is written here, not borrowed from the proof kit, so the sizing tests do not check the
engine against code from the same project that they would also have to trust.
"""

from __future__ import annotations

import contextlib
import logging

import torch
import transformers

logging.getLogger("transformers").setLevel(logging.ERROR)
V = 1024


def tiny_llama(attn: str, k: int = 2, layers: int = 2):
    cfg = transformers.LlamaConfig(
        hidden_size=128,
        intermediate_size=344,
        num_attention_heads=4,
        num_key_value_heads=k,
        num_hidden_layers=layers,
        vocab_size=V,
        max_position_embeddings=1024,
        tie_word_embeddings=False,
        attn_implementation=attn,
    )
    return transformers.LlamaForCausalLM(cfg)


def tiny_gpt2(attn: str, drop: float = 0.0, layers: int = 2):
    cfg = transformers.GPT2Config(
        n_embd=128,
        n_head=4,
        n_layer=layers,
        vocab_size=V,
        n_positions=1024,
        attn_implementation=attn,
        resid_pdrop=drop,
        embd_pdrop=drop,
        attn_pdrop=drop,
        bos_token_id=0,
        eos_token_id=0,
    )
    return transformers.GPT2LMHeadModel(cfg)


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
