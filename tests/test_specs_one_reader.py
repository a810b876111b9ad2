"""One config reader (every family through the parser registry) and one KV-bytes formula
(aiworkbook/specs/kv.py) that specs, sizing and the vLLM arithmetic all go through."""

from __future__ import annotations

import json

import numpy as np
import pytest

from aiworkbook.paths import data_dir
from aiworkbook.sizing.memory import kv_bytes as sizing_kv_bytes
from aiworkbook.sizing.vllm import VllmSettings, _kv_layout
from aiworkbook.sizing.workload import Workload
from aiworkbook.specs import FAMILIES, families, list_presets, load_model, spec_from_config
from aiworkbook.specs.kv import KVGroup, kv_bytes
from aiworkbook.units import DTYPE_BITS


def test_every_family_is_a_registered_parser_and_the_reader_uses_the_registry(monkeypatch):
    assert set(families.PARSERS) == set(FAMILIES) | set(families.FAMILY_PARSERS)
    assert families.names() == FAMILIES + families.known()
    seen = []
    real = families.PARSERS["llama"]

    def spy(c, mt, name):
        seen.append(mt)
        return real(c, mt, name)

    monkeypatch.setitem(families.PARSERS, "llama", spy)
    load = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4}
    spec = spec_from_config({**load, "vocab_size": 100, "intermediate_size": 128})
    assert seen == ["llama"] and spec.num_layers == 2


def _presets():
    return [n for n in list_presets() if load_model(n).is_decoder]


@pytest.mark.parametrize("name", _presets())
def test_specs_sizing_and_vllm_agree_on_kv_bytes(name):
    spec = load_model(name)
    groups = spec.kv_layer_groups()
    assert groups and sum(g.layers for g in groups) >= 1
    for tp in (1, 2, 8):
        for dtype in ("bf16", "fp8"):
            bits = DTYPE_BITS[dtype]
            w = Workload(mode="infer", batch=3, seq_len=1000, kv_dtype=dtype, tp=tp, block_size=16)
            tokens = 1008  # 1000 rounded up to whole 16-token blocks
            one = kv_bytes(groups, tokens, bits, tp)
            assert sizing_kv_bytes(spec, w, 3, 1000) == 3 * one
            assert spec.kv_cache_bytes(tokens, dtype, tp) == one
            assert spec.kv_bytes_per_token(dtype, tp) == kv_bytes(groups, 1, bits, tp, windowed=False)
    layout = _kv_layout(spec, VllmSettings(block_size=16, dtype="bfloat16"))
    assert [(k, w) for k, _, _, w in layout] == [(g.kind, g.window) for g in groups]
    for (_, _, page, _), g in zip(layout, groups, strict=True):
        assert page == 16 * g.heads_per_rank(1) * g.width * 2  # bf16: 2 B an element


def test_an_encoder_caches_nothing_and_arrays_keep_their_shape():
    bert = load_model("bert-base-uncased")
    assert bert.kv_layer_groups() == () and bert.kv_bytes_per_token() == 0
    w = Workload(mode="infer", batch=1, seq_len=8)
    out = sizing_kv_bytes(bert, w, np.array([[1], [2]]), np.array([16, 32, 48]))
    assert out.shape == (2, 3) and not out.any()


def test_windowed_groups_cap_tokens_and_arrays_vectorise():
    g = (KVGroup("full", 2, 4, 16), KVGroup("sliding", 3, 4, 16, window=100))
    assert kv_bytes(g, 50, 16) == (2 * 50 + 3 * 50) * 4 * 16 * 2
    assert kv_bytes(g, 1000, 16) == (2 * 1000 + 3 * 100) * 4 * 16 * 2
    arr = kv_bytes(g, np.array([50, 1000]), 16)
    assert arr.tolist() == [kv_bytes(g, 50, 16), kv_bytes(g, 1000, 16)]
    assert kv_bytes(g, 1000, 16, windowed=False) == 5 * 1000 * 4 * 16 * 2


def test_base_family_groups_match_its_fields():
    cfg = json.loads((data_dir() / "models" / "gemma-2-9b" / "config.json").read_text())
    spec = spec_from_config(cfg)
    full, sliding = spec.kv_layer_groups()
    assert (full.kind, sliding.kind) == ("full", "sliding")
    assert full.layers + sliding.layers == spec.num_layers
    assert sliding.window == spec.sliding_window and sliding.layers == spec.sliding_window_layers
