"""Accuracy bar: training activations + logits against what Hugging Face transformers saves for
backward (unique storages through saved_tensors_hooks, parameters excluded), and model states
against a real torch AdamW step. CPU, fp32, tiny configs."""

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from hf_tiny import V, hf_forward, saved_bytes, tiny_gpt2, tiny_llama  # noqa: E402

from aiworkbook.sizing import Workload, estimate  # noqa: E402
from aiworkbook.specs import spec_from_config  # noqa: E402

CASES = [
    ("llama", "eager", 2, 1, 128),
    ("llama", "sdpa", 2, 4, 512),
    ("llama", "sdpa", 4, 2, 256),
    ("llama", "eager", 4, 3, 384),
    ("gpt2", "eager", 0.1, 2, 128),
    ("gpt2", "sdpa", 0.0, 1, 512),
    ("gpt2", "eager", 0.0, 1, 256),
    ("gpt2", "sdpa", 0.1, 4, 128),
]


@pytest.mark.parametrize("family,attn,knob,b,s", CASES)
def test_activations_plus_logits_match_transformers(family, attn, knob, b, s):
    model = tiny_llama(attn, knob) if family == "llama" else tiny_gpt2(attn, knob)
    spec = spec_from_config(model.config.to_dict())
    w = Workload(
        precision="fp32",
        recipe="fp32-adamw",
        attention=attn,
        batch=b,
        seq_len=s,
        dropout=None if family == "llama" else knob,
    )
    est = estimate(spec, w, device="cpu")
    predicted = est.memory.activations + est.memory.logits
    measured = saved_bytes(model, hf_forward(model, b, s))["total"]
    assert predicted == pytest.approx(measured, rel=0.10), (predicted, measured)


def test_eager_scores_grow_quadratically_and_sdpa_has_none():
    spec = spec_from_config(tiny_llama("eager", 2).config.to_dict())
    eager = [
        estimate(
            spec, Workload(precision="fp32", recipe="fp32-adamw", attention="eager", seq_len=s), device="cpu"
        )
        for s in (256, 512)
    ]
    sdpa = [
        estimate(
            spec, Workload(precision="fp32", recipe="fp32-adamw", attention="sdpa", seq_len=s), device="cpu"
        )
        for s in (256, 512)
    ]
    # sdpa is linear in s (up to the per-position RoPE tables); eager adds an s² term
    assert sdpa[1].memory.activations / sdpa[0].memory.activations == pytest.approx(2.0, rel=0.01)
    assert eager[1].memory.activations / eager[0].memory.activations > 2.2


def test_model_states_match_a_real_adamw_step():
    model = tiny_llama("sdpa", 2)
    spec = spec_from_config(model.config.to_dict())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, V, (1, 16))
    model(input_ids=ids, labels=ids).loss.backward()
    opt.step()
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    grads = sum(p.grad.numel() * p.grad.element_size() for p in model.parameters())
    state = sum(
        t.numel() * t.element_size()
        for st in opt.state.values()
        for name, t in st.items()
        if name != "step" and torch.is_tensor(t)
    )
    est = estimate(spec, Workload(precision="fp32", recipe="fp32-adamw"), device="cpu")
    assert est.memory.weights == params
    assert est.memory.gradients == grads
    assert est.memory.optimizer == state
    assert est.memory.master_weights == 0
