"""The serving proof predicts the KV pool in the dtype the embedded server really allocates.

Found on a lent H200 (data/reference-runs/h200-2026-12-04): the server held its KV cache in bf16 while the
prediction sized it in fp32, so a correct pool read as half the estimate (ratio 0.500, a false fail).
The CPU server is fp32 on both sides, which is why no CPU run could show it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from aiworkbook.serving import embedded
from aiworkbook.serving.proof import _kv_comparison
from aiworkbook.specs import load_model


@pytest.mark.parametrize(("half", "want"), [(("bf16", None), "bf16"), (("fp16", "no native bf16"), "fp16")])
def test_gpu_server_dtype_is_the_gpus_half_dtype(monkeypatch, half, want):
    monkeypatch.setattr("aiworkbook.proofs.device.half_dtype", lambda device: half)
    assert embedded.serving_dtype("cuda") == want
    assert embedded.serving_dtype("cuda:1") == want
    assert embedded.serving_dtype("cpu") == "fp32"


def test_engine_records_the_dtype_its_pool_is_sized_in():
    eng = embedded.build_engine("tiny-llama", backend="synthetic", device="cpu", kv_budget_bytes=1 << 20)
    assert eng.kv_dtype == "fp32"
    assert eng.pool.bytes_per_block == embedded.kv_bytes_per_token(eng.spec, "fp32") * embedded.BLOCK_SIZE


@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
def test_kv_comparison_predicts_in_the_engines_dtype(dtype):
    spec = load_model("llama-3.2-1b")
    sequences, tokens = 16, 96
    # what the pool reserves: whole blocks for prompt + output per running sequence, in the server's dtype
    blocks = -(-tokens // embedded.BLOCK_SIZE)
    measured = sequences * blocks * embedded.BLOCK_SIZE * embedded.kv_bytes_per_token(spec, dtype)
    engine = SimpleNamespace(spec=spec, max_batch=16, kv_dtype=dtype)
    s = SimpleNamespace(kind="concurrency", loads=(1, 4, 16), prompt_tokens=64, output_tokens=32)
    sw = SimpleNamespace(kv_at={16: {"kv_bytes_peak": measured}})
    got_measured, predicted, _label = _kv_comparison(s, SimpleNamespace(engine=engine), sw)
    assert got_measured == measured
    assert predicted == measured, f"{dtype}: predicted {predicted} B for a pool of {measured} B"
