"""What the embedded server's scheduler drives: a model that prefills some sequences and decodes one
token for a batch of sequences. `SyntheticBackend` sleeps a planted time per step (a stand-in whose
cost is known exactly: tests, the harness-overhead benchmark); `TorchBackend` runs the plain-torch
DecoderModel built from a ModelSpec with a KV cache per sequence."""

from __future__ import annotations

import time
from typing import Any, Protocol


class Backend(Protocol):
    name: str

    def prefill(self, seqs: list[Any]) -> list[int]: ...
    def decode(self, seqs: list[Any]) -> list[int]: ...
    def release(self, seq: Any) -> None: ...


class SyntheticBackend:
    """A stand-in model: a prefill costs `prefill_s + prefill_s_per_token * prompt tokens`, a decode
    step `step_s + per_seq_s * batch` (decode is memory-bound: one weight read serves the batch)."""

    name = "synthetic"

    def __init__(
        self,
        step_s: float = 0.01,
        per_seq_s: float = 0.0,
        prefill_s: float = 0.01,
        prefill_s_per_token: float = 0.0,
    ) -> None:
        self.step_s, self.per_seq_s = step_s, per_seq_s
        self.prefill_s, self.prefill_s_per_token = prefill_s, prefill_s_per_token

    def prefill(self, seqs: list[Any]) -> list[int]:
        time.sleep(self.prefill_s + self.prefill_s_per_token * sum(s.prompt_len for s in seqs))
        return [1] * len(seqs)

    def decode(self, seqs: list[Any]) -> list[int]:
        time.sleep(self.step_s + self.per_seq_s * len(seqs))
        return [1] * len(seqs)

    def release(self, seq: Any) -> None:
        pass


class TorchBackend:
    """The plain-torch decoder (aiworkbook.proofs.model.DecoderModel) over a paged KV pool: per layer
    one K and one V tensor of `num_blocks x block_size` token slots (the whole budget, allocated up
    front, so the pool cannot grow into an OOM); each sequence's tokens live in the blocks the engine
    reserved for it. Prefill runs one sequence at a time; decode runs the whole batch in one forward,
    gathering each sequence's slots through its block table (one index per layer, no per-sequence loop).
    Prompt token ids come from the request's words."""

    name = "torch"

    def __init__(
        self,
        spec: Any,
        pool: Any,
        device: str = "cpu",
        dtype: str = "fp32",
        seed: int = 0,
        threads: int | None = 1,
    ) -> None:
        import torch

        from aiworkbook.proofs.model import TORCH_DTYPES, DecoderModel

        if device == "cpu" and threads:  # proxy-sized matmuls gain nothing from more threads, and the
            torch.set_num_threads(threads)  # server's event loop needs a core (the proof lock restores it)
        torch.manual_seed(seed)
        self.torch, self.spec, self.device, self.bs = torch, spec, device, pool.block_size
        dt = TORCH_DTYPES[dtype]
        self.model = DecoderModel(spec, device=device, dtype=dt).eval()
        slots = pool.num_blocks * pool.block_size
        shape = (slots, spec.num_kv_heads, spec.head_dim)
        self.k = [torch.zeros(shape, dtype=dt, device=device) for _ in range(spec.num_layers)]
        self.v = [torch.zeros(shape, dtype=dt, device=device) for _ in range(spec.num_layers)]
        self.state: dict[int, list[int]] = {}  # seq id -> [tokens cached, last token]

    def pool_bytes(self) -> int:
        """Bytes of the KV pool's tensors (what the budget bought)."""
        return sum(t.numel() * t.element_size() for t in (*self.k, *self.v))

    def _slots(self, blocks: list[int], n: int):
        pos = self.torch.arange(n, device=self.device)
        tab = self.torch.tensor(blocks, device=self.device)
        return tab[pos // self.bs] * self.bs + pos % self.bs

    def prefill(self, seqs: list[Any]) -> list[int]:
        """Prompts of equal length go through one forward together; each row's K/V then lands in its
        sequence's blocks."""
        from aiworkbook.proofs.model import KVCache

        torch = self.torch
        first: dict[int, int] = {}
        groups: dict[int, list[Any]] = {}
        for s in seqs:
            groups.setdefault(s.prompt_len, []).append(s)
        with torch.inference_mode():
            for n, group in groups.items():
                ids = []
                for s in group:
                    row = [hash(w) % self.spec.vocab_size for w in s.prompt_words[:n]]
                    ids.append(row + [0] * (n - len(row)))
                cache: Any = KVCache(self.spec.num_layers)
                logits = self.model(torch.tensor(ids, device=self.device), cache=cache, logits_to_keep=1)
                toks = logits[:, -1].argmax(-1).tolist()
                for j, s in enumerate(group):
                    slots = self._slots(s.blocks, n)
                    for i in range(self.spec.num_layers):
                        self.k[i][slots] = cache.k[i][j].transpose(0, 1)
                        self.v[i][slots] = cache.v[i][j].transpose(0, 1)
                    self.state[s.id] = [n, int(toks[j])]
                    first[s.id] = int(toks[j])
        return [first[s.id] for s in seqs]

    def decode(self, seqs: list[Any]) -> list[int]:
        """One token for every sequence in one batched forward over the paged pool."""
        torch, b = self.torch, len(seqs)
        m: Any = self.model
        lens = torch.tensor([self.state[s.id][0] for s in seqs], device=self.device)
        longest = int(lens.max()) + 1
        width = max(len(s.blocks) for s in seqs)
        tab = torch.tensor([s.blocks + [0] * (width - len(s.blocks)) for s in seqs], device=self.device)
        pos = torch.arange(longest, device=self.device)
        slot_idx = tab[:, pos // self.bs] * self.bs + pos % self.bs  # [b, longest]
        new = slot_idx[torch.arange(b, device=self.device), lens]
        mask = (pos[None, :] <= lens[:, None])[:, None, None, :]
        with torch.inference_mode():
            x = m.embed_tokens(torch.tensor([[self.state[s.id][1]] for s in seqs], device=self.device))
            rope = None
            if m.embed_positions is not None:
                x = x + m.embed_positions(lens[:, None])
            else:
                rope = m._rope(lens[:, None], x.dtype)
            layer: Any
            for i, layer in enumerate(m.layers):
                a = _paged_attention(
                    layer.attn, layer.input_norm(x), rope, self.k[i], self.v[i], new, slot_idx, mask
                )
                if layer.four_norms:
                    a = layer.post_attn_out_norm(a)
                x = x + a
                h = layer.mlp(layer.post_attention_norm(x))
                if layer.four_norms:
                    h = layer.post_mlp_out_norm(h)
                x = x + h
            w = m.embed_tokens.weight if m.lm_head is None else m.lm_head.weight
            toks = torch.nn.functional.linear(m.norm(x), w)[:, -1].argmax(-1).tolist()
        for s, t in zip(seqs, toks, strict=True):
            st = self.state[s.id]
            st[0], st[1] = st[0] + 1, int(t)
        return [int(t) for t in toks]

    def release(self, seq: Any) -> None:
        self.state.pop(seq.id, None)


def _paged_attention(
    attn: Any, x: Any, rope: Any, kpool: Any, vpool: Any, new: Any, slot_idx: Any, mask: Any
):
    """One new token per sequence: write its K/V into its slot, gather each sequence's slots, attend."""
    import torch.nn.functional as F

    from aiworkbook.proofs.model import _rotate_half

    b = x.shape[0]
    if attn.fused:
        q, k, v = attn.qkv_proj(x).split([attn.a * attn.d, attn.k * attn.d, attn.k * attn.d], dim=-1)
    else:
        q, k, v = attn.q_proj(x), attn.k_proj(x), attn.v_proj(x)
    q = q.view(b, 1, attn.a, attn.d).transpose(1, 2)
    k = k.view(b, 1, attn.k, attn.d).transpose(1, 2)
    if rope is not None:
        cos, sin = rope
        q = (q * cos) + (_rotate_half(q) * sin)
        k = (k * cos) + (_rotate_half(k) * sin)
    kpool[new] = k[:, :, 0]
    vpool[new] = v.view(b, attn.k, attn.d)
    keys = kpool[slot_idx].transpose(1, 2)  # [b, kv heads, longest, d]
    vals = vpool[slot_idx].transpose(1, 2)
    out = F.scaled_dot_product_attention(
        q, keys, vals, attn_mask=mask, scale=attn.scaling, enable_gqa=attn.a != attn.k
    )
    return attn.o_proj(out.transpose(1, 2).reshape(b, 1, attn.a * attn.d))
