"""The training step's peak is its largest phase (sizing.timeline), checked against the bytes a real step
holds over time: every storage created during one step of a transformers Llama on the CPU, counted live
(a TorchDispatchMode sees each op's outputs, weakref finalizers see them freed)."""

from __future__ import annotations

import weakref

import pytest

from aiworkbook.sizing import Workload, timeline
from aiworkbook.sizing import activations as act
from aiworkbook.sizing.memory import components

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")


def live_peak(model, opt, ids) -> tuple[int, str]:
    """(peak bytes of the step's own tensors, the phase it came in): weights and optimizer state exist
    before the step and are not counted; gradients are None at its start (zero_grad(set_to_none))."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    before = {p.untyped_storage().data_ptr() for p in model.parameters()}
    before |= {
        t.untyped_storage().data_ptr() for s in opt.state.values() for t in s.values() if torch.is_tensor(t)
    }

    class Live(TorchDispatchMode):
        refs: dict[int, int] = {}
        size: dict[int, int] = {}
        live = peak = 0
        phase = at = ""

        def _gone(self, k):
            self.refs[k] -= 1
            if not self.refs[k]:
                self.live -= self.size.pop(k)
                del self.refs[k]

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for t in tree_flatten(out)[0]:
                if isinstance(t, torch.Tensor) and (k := t.untyped_storage().data_ptr()) and k not in before:
                    if k not in self.refs:
                        self.refs[k], self.size[k] = 0, t.untyped_storage().nbytes()
                        self.live += self.size[k]
                    self.refs[k] += 1
                    weakref.finalize(t, self._gone, k)
            if self.live > self.peak:
                self.peak, self.at = self.live, self.phase
            return out

    m = Live()
    with m:
        m.phase = "forward"
        loss = model(input_ids=ids, labels=ids).loss
        m.phase = "backward"
        loss.backward()
        del loss
        m.phase = "optimizer"
        opt.step()
        opt.zero_grad(set_to_none=True)
    return m.peak, m.at


@pytest.mark.parametrize(
    "ckpt,layers,b,s,tol",
    [(False, 4, 4, 256, 0.01), (True, 4, 8, 512, 0.01), (True, 8, 4, 256, 0.10), (True, 16, 1, 64, 0.10)],
)
def test_step_peak_is_the_largest_phase_as_measured(ckpt, layers, b, s, tol):
    from hf_tiny import tiny_llama

    from aiworkbook.specs import spec_from_config

    torch.manual_seed(0)
    model = tiny_llama("sdpa", layers=layers)
    if ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=False)
    ids = torch.randint(0, model.config.vocab_size, (b, s))
    model(input_ids=ids, labels=ids).loss.backward()  # a first step: the optimizer state exists
    opt.step()
    opt.zero_grad(set_to_none=True)
    measured, _ = live_peak(model, opt, ids)

    spec = spec_from_config(model.config.to_dict())
    w = Workload(
        mode="train",
        precision="fp32",
        recipe="fp32-adamw",
        batch=b,
        seq_len=s,
        checkpointing="full" if ckpt else "none",
    )
    c = components(spec, w, b, s, device="cpu")
    loss = act.loss_transient_bytes(spec, w, b, s)
    peak, phase = timeline.step_peak(timeline.phase_bytes(spec, w, b, s, c, loss))
    summed = c["gradients"] + c["activations"] + c["logits"] + loss
    print(f"ckpt={ckpt} L={layers} b={b} s={s}: measured {measured:,} peak {peak:,} ({phase}) sum {summed:,}")
    assert abs(peak / measured - 1) <= tol
    assert abs(peak / measured - 1) < abs(summed / measured - 1)  # the phases, not the sum


def test_gradients_are_resident_only_where_a_framework_keeps_a_buffer():
    from aiworkbook.specs import load_model

    l8 = load_model("llama-3.1-8b")
    plain = Workload(recipe="pure-bf16", precision="bf16", checkpointing="full")
    assert not timeline.gradients_resident(plain)
    assert timeline.gradients_resident(plain.replace(dp=2))  # DDP's buckets
    assert not timeline.gradients_resident(plain.replace(dp=8, zero=3))  # FSDP frees its shards' grads
    assert timeline.gradients_resident(Workload())  # megatron-bf16's main_grad buffer
    c = components(l8, plain, 2, 2048)
    ph = timeline.phase_bytes(l8, plain, 2, 2048, c, 0)
    # no gradient at the loss, nor the recomputed layer (it is rebuilt in that layer's backward)
    _, once = act._layer_split(l8, plain, 2 * 2048, 2048, act.terms(l8, plain))
    assert ph["loss backward"] == c["activations"] - once + c["logits"]
    assert ph["top layer backward"] == c["activations"] + 2 * l8.vocab_size * l8.hidden_size  # + head grad
    assert ph["optimizer step"] == c["gradients"] == 2 * l8.params
    assert ph["bottom layer backward"] > c["gradients"] > ph["loss backward"]
