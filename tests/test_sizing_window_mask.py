"""A sliding layer under SDPA keeps a mask once the sequence reaches its window (transformers'
_ignore_causal_mask_sdpa: kv_length >= window), and with a mask k and v are repeated to every query head;
FlashAttention takes the window and the grouped heads itself. Held to transformers' own Gemma 3 in
tests/test_sizing_truth.py; here the boundary and the attention kinds, on a real config (gemma-3-1b-it)."""

from __future__ import annotations

import pytest

from aiworkbook.sizing import Workload
from aiworkbook.sizing.activations import activation_bytes
from aiworkbook.specs.catalog import load_model


def _bytes(attention: str, s: int) -> int:
    spec = load_model("gemma-3-1b-it")
    w = Workload(mode="train", precision="bf16", recipe="pure-bf16", attention=attention, batch=2, seq_len=s)
    return int(activation_bytes(spec, w, 2, s))


@pytest.mark.parametrize("s", [256, 511, 512, 1024])
def test_sdpa_keeps_the_window_mask_and_repeated_kv_from_the_window_on(s):
    spec = load_model("gemma-3-1b-it")
    window, layers = spec.sliding_window, spec.sliding_window_layers
    assert window == 512 and 0 < layers < spec.num_layers
    a, k, d, e = spec.num_heads, spec.num_kv_heads, spec.head_dim, 2
    extra = _bytes("sdpa", s) - _bytes("flash", s)
    per_layer = 2 * s * s * e + 2 * s * 2 * (a - k) * d * e  # the mask, the repeated k and v
    assert extra == (layers * per_layer if s >= window else 0)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("family", ["phi3", "gemma3_text"])
def test_a_sliding_window_under_sdpa_as_transformers_saves_it(family):
    """Phi-3 with a window (fused q/k/v: the repeated k and v replace RoPE'd k and the fused output) and
    Gemma 3 (separate projections: the copies come on top), below, at and past the window, within
    tests/test_sizing_truth.py's 5 % (Phi-3's cases are within 0.01 %)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from aiworkbook.proofs import activation_truth as truth

    cfg = {**truth.config(family), "sliding_window": 32}
    with truth.one_thread():
        model = truth.build(family, "bf16", "sdpa", sliding_window=32)
        for b, s in ((1, 16), (2, 32), (1, 64)):
            measured = truth.saved(model, b, s, False)
            est = truth.estimated(family, "bf16", "sdpa", False, b, s, cfg)
            assert abs(est / measured - 1) <= 0.05, (family, b, s, f"{est / measured - 1:+.1%}")
