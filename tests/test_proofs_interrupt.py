"""Ctrl-C during a proof: memory is released even while a notebook keeps the traceback."""

import gc
import weakref

import pytest
import torch

from aiworkbook.proofs.vram import prove_vram


def test_ctrl_c_mid_training_frees_the_model_even_while_the_traceback_lives(monkeypatch):
    refs = []
    calls = {"n": 0}
    real_step = torch.optim.AdamW.step

    def step(self, *a, **k):
        calls["n"] += 1
        refs.extend(weakref.ref(p) for g in self.param_groups for p in g["params"])
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real_step(self, *a, **k)

    monkeypatch.setattr(torch.optim.AdamW, "step", step)
    with pytest.raises(
        KeyboardInterrupt, match="vram proof of tiny-llama interrupted; memory released"
    ) as info:
        prove_vram("tiny-llama", device="cpu", quick=True)
    assert info.value.__traceback__ is not None  # Jupyter keeps this alive (sys.last_traceback)
    gc.collect()
    alive = [r for r in refs if r() is not None]
    assert refs and not alive


def test_ctrl_c_in_kv_proof_releases_the_cache(monkeypatch):
    import aiworkbook.proofs.kv as kv

    refs = []
    real_point = kv._point

    def point(model, *a, **k):
        refs.extend(weakref.ref(p) for p in model.parameters())
        if len(refs) > 0 and point.calls == 1:
            raise KeyboardInterrupt
        point.calls += 1
        return real_point(model, *a, **k)

    point.calls = 0
    monkeypatch.setattr(kv, "_point", point)
    with pytest.raises(KeyboardInterrupt, match="kv proof of tiny-llama interrupted; memory released"):
        kv.prove_kv("tiny-llama", device="cpu", quick=True)
    gc.collect()
    assert refs and not [r for r in refs if r() is not None]
