"""The optimizer step's temporaries follow torch.optim's source (sizing/optimizer_step.py), checked against
torch itself on the CPU: foreach, fused and forloop AdamW/Adam run explicitly, their live temporaries counted
by the proofs' dispatch-level tracker (aiworkbook/proofs/memory_accounting.py)."""

import pytest

from aiworkbook.errors import SpecError
from aiworkbook.sizing import Workload
from aiworkbook.sizing import optimizer_step as ostep
from aiworkbook.sizing.memory import memory_breakdown
from aiworkbook.specs import load_model

LLAMA = load_model("llama-3-8b")


def _w(**kw):
    return Workload(mode="train", batch=1, seq_len=128, precision="fp32", **kw)


def test_default_is_foreach_on_cuda_forloop_on_cpu_and_fused_for_framework_recipes():
    assert ostep.resolve_impl(_w(), "cuda") == "foreach"
    assert ostep.resolve_impl(_w(), "cpu") == "forloop"
    assert ostep.resolve_impl(_w(optimizer_impl="fused"), "cuda") == "fused"
    mixed = Workload(mode="train", precision="bf16-mixed", recipe="megatron-bf16")
    assert ostep.resolve_impl(mixed, "cuda") == "fused"  # Megatron/DeepSpeed FusedAdam


def test_llama3_8b_fp32_adamw_needs_20_bytes_per_param_with_foreach_16_with_fused():
    foreach = memory_breakdown(LLAMA, _w())
    fused = memory_breakdown(LLAMA, _w(optimizer_impl="fused"))
    per_param = [(m.total - m.cuda_context - m.reserve) / LLAMA.params for m in (foreach, fused)]
    assert per_param[0] >= 20 > 16 <= per_param[1] < 16.1
    # the step is the peak, and its sqrt(exp_avg_sq) is the whole group at fp32
    assert foreach.formulas["total"].startswith("the step's peak, the optimizer step")
    assert f"{LLAMA.params:,} elements · 4 B" in foreach.formulas["workspace"]
    assert foreach.workspace - fused.workspace == 4 * LLAMA.params


def test_formula_is_built_from_the_number():
    t = ostep.temporaries(LLAMA, _w(zero=1, dp=4, optimizer_impl="foreach"))
    assert t.bytes == 4 * (LLAMA.params // 4)
    assert f"{LLAMA.params:,} elements / 4 (shard) · 4 B" in t.formula


def test_eight_bit_and_fused_make_none_and_refuse_other_impls():
    w = Workload(mode="train", precision="bf16", recipe="blockwise-adamw-8bit")
    assert ostep.temporaries(LLAMA, w).bytes == 0
    with pytest.raises(SpecError, match="optimizer_impl"):
        Workload(mode="train", precision="bf16", recipe="blockwise-adamw-8bit", optimizer_impl="foreach")
    with pytest.raises(SpecError, match="optimizer_impl"):
        Workload(mode="infer", optimizer_impl="fused")
    with pytest.raises(SpecError, match="optimizer_impl"):
        _w(optimizer_impl="vectorised")


def test_optimizer_in_backward_foreach_holds_one_tensor():
    w = Workload(mode="train", precision="bf16", recipe="pure-bf16", optimizer_in_backward=True)
    t = ostep.temporaries(LLAMA, w)
    assert t.bytes == 2 * LLAMA.vocab_size * LLAMA.hidden_size


def test_tensor_sizes_add_up_to_the_matrices_and_norms():
    sizes = ostep.tensor_sizes(LLAMA, _w())
    biasless = LLAMA.params  # Llama has no biases: every parameter is in the list
    assert sum(sizes) == biasless and max(sizes) == LLAMA.vocab_size * LLAMA.hidden_size


def _tiny():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    # a big first tensor, then smaller ones: the forloop's carried denom is visible
    return [torch.nn.Parameter(torch.randn(n)) for n in (4096, 1024, 3000, 512)]


def _measure(opt_cls, params, **kw):
    from aiworkbook.proofs.memory_accounting import StepTemporaryTracker

    for p in params:
        p.grad = p.detach().clone()
    opt = opt_cls(params, lr=1e-3, **kw)
    opt.step()  # the first step creates the state; the second is measured
    with StepTemporaryTracker() as tr:
        opt.step()
    return tr.peak


@pytest.mark.parametrize(
    "impl,l2,maximize",
    [
        ("foreach", False, False),
        ("foreach", True, False),
        ("foreach", True, True),
        ("forloop", False, False),
        ("forloop", True, False),
        ("forloop", False, True),
        ("forloop", True, True),
        ("fused", False, False),
    ],
)
def test_torch_adam_allocates_what_the_model_says(impl, l2, maximize):
    """torch's own Adam on the CPU, each implementation forced, against the model's count."""
    torch = pytest.importorskip("torch")
    params = _tiny()
    kw = {"foreach": impl == "foreach", "fused": impl == "fused", "maximize": maximize}
    cls = torch.optim.Adam if l2 else torch.optim.AdamW
    if l2:
        kw["weight_decay"] = 0.1
    measured = _measure(cls, params, **kw)
    sizes = [p.numel() for p in params]
    copy = int(l2 or maximize)
    if impl == "foreach":
        expected = sum(sizes)  # the copy comes and goes before sqrt(v), as large
    elif impl == "forloop":
        expected = ostep._forloop_peak(sizes, copy, maximize)
    else:
        expected = 0
    assert measured == 4 * expected, (measured, 4 * expected)
