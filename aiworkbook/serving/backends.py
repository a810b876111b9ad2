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

    def __init__(self, spec: Any, device: str = "cpu", dtype: str = "fp32", seed: int = 0) -> None:
        import torch

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
        out = []
        with self.torch.inference_mode():
            for s in seqs:
                cache, last = self.state[s.id]
                inp = self.torch.tensor([[last]], device=self.device)
                tok = int(self.model(inp, cache=cache, logits_to_keep=1)[0, -1].argmax())
                self.state[s.id] = (cache, tok)
                out.append(tok)
        return out

    def release(self, seq: Any) -> None:
        self.state.pop(seq.id, None)
