"""What the embedded server's scheduler drives: a model that runs one forward over a batch of work items
(sequence, n): n prompt tokens of a sequence still in its prompt (a whole prompt or a chunk of it), or
its one next token once the prompt is in the KV cache. One call is one forward pass, so a scheduler can
mix decode tokens and prompt chunks in one iteration (vLLM V1 / Sarathi-Serve) instead of a separate
prefill forward beside the decode step. `SyntheticBackend` sleeps a planted time per forward (a stand-in
whose cost is known exactly: tests, the harness-overhead benchmark); `TorchBackend` runs the plain-torch
DecoderModel built from a ModelSpec over a paged KV pool."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from aiworkbook.specs.protocol import ModelSpecLike


class Backend(Protocol):
    name: str

    def step(self, work: list[tuple[Any, int]]) -> list[int | None]:
        """One forward over the work items; per item the next token once its prompt is complete, else
        None (a prompt chunk that does not reach the prompt's end yields no token)."""
        ...

    def release(self, seq: Any) -> None: ...


class SyntheticBackend:
    """A stand-in model: one forward costs `step_s + per_seq_s * decode rows + prefill_s_per_token *
    prompt tokens` (decode is memory-bound: one weight read serves the batch; prompt tokens add compute).
    A prompt item is one whose sequence has `prefilled < prompt_len` (the engine's Sequence); a padding
    row (n == 0, a static batch's finished sequence) costs a decode row and yields nothing."""

    name = "synthetic"

    def __init__(
        self, step_s: float = 0.01, per_seq_s: float = 0.0, prefill_s_per_token: float = 0.0
    ) -> None:
        self.step_s, self.per_seq_s, self.prefill_s_per_token = step_s, per_seq_s, prefill_s_per_token

    def step(self, work: list[tuple[Any, int]]) -> list[int | None]:
        prompt = sum(n for s, n in work if s.prefilled < s.prompt_len)
        rows = sum(1 for s, _ in work if s.prefilled >= s.prompt_len)
        time.sleep(self.step_s + self.per_seq_s * rows + self.prefill_s_per_token * prompt)
        return [1 if n and s.prefilled + n >= s.prompt_len else None for s, n in work]

    def release(self, seq: Any) -> None:
        pass


class TorchBackend:
    """The plain-torch decoder (aiworkbook.proofs.model.DecoderModel) over a paged KV pool: per layer
    one K and one V tensor of `num_blocks x block_size` token slots (the whole budget, allocated up
    front, so the pool cannot grow into an OOM); each sequence's tokens live in the blocks the engine
    reserved for it. `step` runs ONE forward over the concatenated new tokens of every work item (decode
    tokens and prompt chunks alike: the linears, norms and MLP see one flat batch of tokens); each new
    token's K/V is written to its sequence's slots, then attention reads each sequence's own slots through
    its block table with a per-sequence causal mask (the varlen attention of vLLM's paged kernels, here
    two padded SDPA calls per layer: one-token items together, multi-token chunks together).
    Prompt token ids come from the request's words. An item with n == 0 is a static batch's padding
    row (a finished sequence the rectangular batch still carries, as a static batcher such as HF
    `generate` computes finished rows until the longest ends): it is computed like a decode token of its
    last token, written to the same slot each time (its sequence advances no further), and yields nothing."""

    name = "torch"

    def __init__(
        self,
        spec: ModelSpecLike,
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

    def _token_ids(self, s: Any, n: int) -> list[int]:
        """The ids of the sequence's next n tokens: prompt words while in the prompt, else its last token."""
        cached, last = self.state.setdefault(s.id, [0, 0])
        if n == 0:  # a padding row: the finished sequence's last token again
            return [last]
        if cached >= s.prompt_len:
            if n != 1:
                raise ValueError(f"sequence {s.id} is decoding: one token per step, not {n}")
            return [last]
        if cached + n > s.prompt_len:
            raise ValueError(f"sequence {s.id}: a chunk of {n} runs past its {s.prompt_len}-token prompt")
        words = s.prompt_words[cached : cached + n]
        return [hash(w) % self.spec.vocab_size for w in words] + [0] * (n - len(words))

    def step(self, work: list[tuple[Any, int]]) -> list[int | None]:
        """One forward over every item's new tokens; one-token items first, then multi-token chunks, each
        group laid out contiguously in the flat token batch."""
        torch, m = self.torch, self.model
        order = [i for i, (_, n) in enumerate(work) if n <= 1] + [i for i, (_, n) in enumerate(work) if n > 1]
        pad = {id(work[i][0]) for i in order if work[i][1] == 0}
        ids: list[int] = []
        for i in order:
            ids += self._token_ids(*work[i])
        items = [(s, max(n, 1)) for s, n in (work[i] for i in order)]
        # a padding row writes its last token at the next position without advancing: that slot lies
        # inside the sequence's reservation (prompt + max_tokens; the last token is never cached)
        starts = [self.state[s.id][0] for s, _ in items]
        ndec = sum(1 for _, n in items if n == 1)
        width = max(len(s.blocks) for s, _ in items)
        tab = torch.tensor([s.blocks + [0] * (width - len(s.blocks)) for s, _ in items], device=self.device)
        groups = [
            g
            for g in (
                self._group(items[:ndec], starts[:ndec], tab[:ndec], 0),
                self._group(items[ndec:], starts[ndec:], tab[ndec:], ndec),
            )
            if g is not None
        ]
        tok_seq = torch.repeat_interleave(
            torch.arange(len(items), device=self.device),
            torch.tensor([n for _, n in items], device=self.device),
        )
        pos = torch.tensor([c + j for (_, n), c in zip(items, starts, strict=True) for j in range(n)])
        pos = pos.to(self.device)
        new_slots = tab[tok_seq, pos // self.bs] * self.bs + pos % self.bs
        # the row whose logits give each item's token: the last of its tokens
        ends, row = [], 0
        for _, n in items:
            row += n
            ends.append(row - 1)
        with torch.inference_mode():
            x = m.embed_tokens(torch.tensor([ids], device=self.device))  # [1, T, h]
            rope = None
            if m.embed_positions is not None:
                x = x + m.embed_positions(pos[None])
            else:
                cos, sin = m._rope(pos[None], x.dtype)  # [1, 1, T, d]
                rope = (cos[0, 0][:, None], sin[0, 0][:, None])  # [T, 1, d] against [T, heads, d]
            layer: Any
            for i, layer in enumerate(m.layers):
                a = _varlen_paged_attention(
                    layer.attn, layer.input_norm(x), rope, self.k[i], self.v[i], new_slots, groups
                )
                x = layer.after_attention(x, a)
            w = m.embed_tokens.weight if m.lm_head is None else m.lm_head.weight
            last = x[0, torch.tensor(ends, device=self.device)]
            toks = torch.nn.functional.linear(m.norm(last), w).argmax(-1).tolist()
        out: list[int | None] = [None] * len(work)
        for k, ((s, n), c, t) in enumerate(zip(items, starts, toks, strict=True)):
            if id(s) in pad:  # nothing cached anew, no token
                continue
            st = self.state[s.id]
            st[0] = c + n
            if st[0] >= s.prompt_len:  # the prompt is complete (or this was a decode token): a token
                st[1] = int(t)
                out[order[k]] = int(t)
        return out

    def _group(
        self, items: list[tuple[Any, int]], starts: list[int], tab: Any, first_row: int
    ) -> dict[str, Any] | None:
        """The padded attention layout of consecutive items: per item its query rows (padded to the
        longest chunk by repeating its last row), its slots 0..start+n-1 through its rows of the
        forward's block table `tab` and a causal mask (query at position p sees keys 0..p of its own
        sequence, nothing else)."""
        if not items:
            return None
        torch, dev = self.torch, self.device
        ns = torch.tensor([n for _, n in items], device=dev)
        cs = torch.tensor(starts, device=dev)
        q_len, k_len = int(ns.max()), int((cs + ns).max())
        j = torch.arange(q_len, device=dev)
        clamp = torch.minimum(j[None, :], ns[:, None] - 1)  # [G, Q]: padded rows repeat the last one
        offsets = torch.cumsum(ns, 0) - ns + first_row
        kpos = torch.arange(k_len, device=dev)
        return {
            "rows": offsets[:, None] + clamp,  # [G, Q] rows of the flat batch
            "valid": (j[None, :] < ns[:, None]).reshape(-1),
            "slots": tab[:, kpos // self.bs] * self.bs + kpos % self.bs,  # [G, K]
            "mask": (kpos[None, None, :] <= (cs[:, None] + clamp)[:, :, None])[:, None],  # [G, 1, Q, K]
            "n_rows": int(ns.sum()),
        }

    def release(self, seq: Any) -> None:
        self.state.pop(seq.id, None)


def _varlen_paged_attention(
    attn: Any, x: Any, rope: Any, kpool: Any, vpool: Any, new_slots: Any, groups: list[dict[str, Any]]
):
    """Attention over a flat batch of T tokens from several sequences: write every new token's K/V into
    its slot, then per group gather each sequence's slots and attend under its causal mask."""
    import torch
    import torch.nn.functional as F

    from aiworkbook.proofs.model import _rotate_half

    t = x.shape[1]
    if attn.fused:
        q, k, v = attn.qkv_proj(x).split([attn.a * attn.d, attn.k * attn.d, attn.k * attn.d], dim=-1)
    else:
        q, k, v = attn.q_proj(x), attn.k_proj(x), attn.v_proj(x)
    q = q.view(t, attn.a, attn.d)
    k = k.view(t, attn.k, attn.d)
    if rope is not None:
        cos, sin = rope
        q = (q * cos) + (_rotate_half(q) * sin)
        k = (k * cos) + (_rotate_half(k) * sin)
    kpool[new_slots] = k
    vpool[new_slots] = v.view(t, attn.k, attn.d)
    outs = []
    for g in groups:
        rows = g["rows"]
        qg = q[rows].permute(0, 2, 1, 3)  # [G, heads, Q, d]
        keys = kpool[g["slots"]].transpose(1, 2)  # [G, kv heads, K, d]
        vals = vpool[g["slots"]].transpose(1, 2)
        o = F.scaled_dot_product_attention(
            qg, keys, vals, attn_mask=g["mask"], scale=attn.scaling, enable_gqa=attn.a != attn.k
        )
        o = o.permute(0, 2, 1, 3).reshape(-1, attn.a * attn.d)  # [G * Q, heads * d]
        outs.append(o if rows.shape[1] == 1 else o[g["valid"]])
    out = outs[0] if len(outs) == 1 else torch.cat(outs)
    return attn.o_proj(out[None])
