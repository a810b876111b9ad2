"""The attention backend the proofs run (issue 36, item 3): chosen explicitly (flash, then memory-
efficient, then math, never cuDNN, whose per-shape graph builds a timed proof would time), recorded with
its version in each attention proof's environment, and every shape the KV proof times warmed first."""

from __future__ import annotations

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from aiworkbook.proofs.attention import POLICY, pinned, record


def _flags() -> tuple[bool, bool, bool, bool]:
    b = torch.backends.cuda
    return b.flash_sdp_enabled(), b.mem_efficient_sdp_enabled(), b.math_sdp_enabled(), b.cudnn_sdp_enabled()


def test_pinned_allows_the_policy_only_and_puts_back_what_was_there():
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION, SDPBackend.MATH]):  # what a caller had set
        before = _flags()
        with pinned():
            assert _flags() == (True, True, True, False)  # never cuDNN
        assert _flags() == before


def test_the_record_names_the_backend_that_runs_here_and_its_version():
    doc = record("cpu")
    assert doc["policy"] == list(POLICY) == ["flash", "efficient", "math"]
    assert doc["backend"] in POLICY and doc["cudnn_sdp_enabled_pinned"] is False
    assert torch.__version__ in doc["version"]
    # the first of the policy that takes the probe alone is the one recorded
    q = torch.zeros(1, 8, 16, 64)
    k = torch.zeros(1, 2, 16, 64)
    names = {
        "flash": SDPBackend.FLASH_ATTENTION,
        "efficient": SDPBackend.EFFICIENT_ATTENTION,
        "math": SDPBackend.MATH,
    }
    runs = []
    for name in POLICY:
        try:
            with sdpa_kernel([names[name]]):
                torch.nn.functional.scaled_dot_product_attention(q, k, k, is_causal=True, enable_gqa=True)
            runs.append(name)
        except RuntimeError:
            pass
    assert doc["backend"] == runs[0]


def test_the_kv_proof_records_the_backend_and_warms_every_shape_it_times(monkeypatch):
    from aiworkbook.proofs import kv
    from aiworkbook.proofs.model import DecoderModel

    calls: list[tuple[tuple[int, ...], int, bool]] = []
    forward = DecoderModel.forward

    def logged(self, input_ids, *a, cache=None, **kw):
        calls.append((tuple(input_ids.shape), cache.length if cache is not None else -1, _flags()[3]))
        return forward(self, input_ids, *a, cache=cache, **kw)

    monkeypatch.setattr(DecoderModel, "forward", logged)
    r = kv.prove_kv("tiny-llama", device="cpu", quick=True, batches=(1, 2), contexts=(16, 32), new_tokens=3)
    att = r.environment["attention"]
    assert att["backend"] in POLICY and att["policy"] == list(POLICY)
    assert not any(cudnn for _, _, cudnn in calls)  # every forward ran with cuDNN attention off
    for b in (1, 2):
        for ctx in (16, 32):
            prefills = [i for i, (shape, past, _) in enumerate(calls) if shape == (b, ctx) and past == 0]
            first_decode = [i for i, (shape, past, _) in enumerate(calls) if shape == (b, 1) and past == ctx]
            # a warm prefill and decode before the timed ones (the grid's warm-up point adds one more)
            assert len(prefills) >= 2 and len(first_decode) >= 2
            assert first_decode[0] < prefills[-1]  # the warm decode came before the timed prefill
