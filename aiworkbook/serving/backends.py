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
    """The plain-torch decoder (aiworkbook.proofs.model.DecoderModel) with one KVCache per sequence;
    prompt token ids come from the request's words, so the same prompt prefills the same ids."""

    name = "torch"

    def __init__(
        self, spec: Any, device: str = "cpu", dtype: str = "fp32", seed: int = 0, threads: int | None = 1
    ) -> None:
        import torch

        if device == "cpu" and threads:  # proxy-sized matmuls gain nothing from more threads, and the
            torch.set_num_threads(threads)  # server's event loop needs a core (the proof lock restores it)

        from aiworkbook.proofs.model import TORCH_DTYPES, DecoderModel

        torch.manual_seed(seed)
        self.torch = torch
        self.spec = spec
        self.device = device
        self.model = DecoderModel(spec, device=device, dtype=TORCH_DTYPES[dtype]).eval()
        self.state: dict[int, Any] = {}

    def _ids(self, seq: Any):
        ids = [hash(w) % self.spec.vocab_size for w in seq.prompt_words[: seq.prompt_len]]
        ids += [0] * (seq.prompt_len - len(ids))
        return self.torch.tensor([ids], device=self.device)

    def prefill(self, seqs: list[Any]) -> list[int]:
        from aiworkbook.proofs.model import KVCache

        out = []
        with self.torch.inference_mode():
            for s in seqs:
                cache = KVCache(self.spec.num_layers)
                tok = int(self.model(self._ids(s), cache=cache, logits_to_keep=1)[0, -1].argmax())
                self.state[s.id] = (cache, tok)
                out.append(tok)
        return out

    def decode(self, seqs: list[Any]) -> list[int]:
        """One token for every sequence in one batched forward: each sequence's cache is padded to the
        longest and masked, so one weight read serves the whole batch (why continuous batching pays)."""
        torch = self.torch
        m = self.model
        caches = [self.state[s.id][0] for s in seqs]
        lens = torch.tensor([c.length for c in caches], device=self.device)
        inp = torch.tensor([[self.state[s.id][1]] for s in seqs], device=self.device)
        with torch.inference_mode():
            x = m.embed_tokens(inp)
            pos = lens[:, None]
            rope = None
            if m.embed_positions is not None:
                x = x + m.embed_positions(pos)
            else:
                rope = m._rope(pos, x.dtype)
            longest = int(lens.max()) + 1
            mask = (torch.arange(longest, device=self.device)[None, :] <= lens[:, None])[:, None, None, :]
            for i, layer in enumerate(m.layers):
                a = _batched_attention(layer.attn, layer.input_norm(x), rope, caches, i, longest, mask)
                if layer.four_norms:
                    a = layer.post_attn_out_norm(a)
                x = x + a
                h = layer.mlp(layer.post_attention_norm(x))
                if layer.four_norms:
                    h = layer.post_mlp_out_norm(h)
                x = x + h
            x = m.norm(x)
            w = m.embed_tokens.weight if m.lm_head is None else m.lm_head.weight
            toks = torch.nn.functional.linear(x, w)[:, -1].argmax(-1).tolist()
        for s, t in zip(seqs, toks, strict=True):
            self.state[s.id] = (self.state[s.id][0], int(t))
        return [int(t) for t in toks]

    def kv_bytes(self) -> int:
        """Bytes the live caches hold (the tensors, not a formula)."""
        return sum(c.nbytes() for c, _ in self.state.values())

    def release(self, seq: Any) -> None:
        self.state.pop(seq.id, None)


def _batched_attention(attn: Any, x: Any, rope: Any, caches: list[Any], layer: int, longest: int, mask: Any):
    """Attention of one new token per sequence against each sequence's own cache (padded, masked)."""
    import torch.nn.functional as F

    from aiworkbook.proofs.model import _rotate_half

    b = x.shape[0]
    if attn.fused:
        q, k, v = attn.qkv_proj(x).split([attn.a * attn.d, attn.k * attn.d, attn.k * attn.d], dim=-1)
    else:
        q, k, v = attn.q_proj(x), attn.k_proj(x), attn.v_proj(x)
    q = q.view(b, 1, attn.a, attn.d).transpose(1, 2)
    k = k.view(b, 1, attn.k, attn.d).transpose(1, 2)
    v = v.view(b, 1, attn.k, attn.d).transpose(1, 2)
    if rope is not None:
        cos, sin = rope
        q = (q * cos) + (_rotate_half(q) * sin)
        k = (k * cos) + (_rotate_half(k) * sin)
    kp = k.new_zeros(b, attn.k, longest, attn.d)
    vp = v.new_zeros(b, attn.k, longest, attn.d)
    for j, c in enumerate(caches):
        kj, vj = c.update(layer, k[j : j + 1], v[j : j + 1])
        n = kj.shape[2]
        kp[j, :, :n], vp[j, :, :n] = kj[0], vj[0]
    out = F.scaled_dot_product_attention(
        q, kp, vp, attn_mask=mask, scale=attn.scaling, enable_gqa=attn.a != attn.k
    )
    return attn.o_proj(out.transpose(1, 2).reshape(b, 1, attn.a * attn.d))
