"""The optimizer step's temporaries: what the step allocates beyond the states, per implementation.

Read from torch 2.13's source (torch/optim/adam.py; AdamW is Adam with decoupled weight decay, sgd.py,
_adafactor.py) and the 8-bit libraries':

- **foreach** (`_multi_tensor_adam`), torch's default on CUDA (`optimizer.py: _default_to_fused_or_foreach`:
  foreach when every parameter is on a foreach device, `_get_foreach_kernels_supported_devices`, which the
  CPU is not). Per parameter group (one `adam()` call each) and per (device, dtype) group
  (`Optimizer._group_tensors_by_device_and_dtype`): `maximize` makes `_foreach_neg(grads)` and Adam's L2
  weight decay `_foreach_add(grads, params)` (with both, the add runs in place on the negated copy): one
  grad-sized copy, deleted (`del device_grads`) before `exp_avg_sq_sqrt = _foreach_sqrt(exp_avg_sqs)`,
  which holds the whole group to the end of the loop body and is rebound only once the next group's
  list exists. So the peak is max over groups of (the previous group's sqrt + max(copy, sqrt)): one
  group-sized tensor list at the state's dtype for a model of one dtype (the copy, when there is one,
  comes and goes before the sqrt and is as large). AdamW's decoupled decay is `_foreach_mul_`: none.
- **fused** (`_fused_adam`, one kernel per device/dtype group): none. DeepSpeed's and Megatron's FusedAdam
  (multi_tensor_apply kernels) are the zero-mixed and megatron-bf16 recipes' default.
- **forloop** (`_single_tensor_adam`, torch's default on the CPU): per tensor
  `denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)`: the sqrt and the quotient exist for a
  moment, beside the previous tensor's `denom` (rebound after) and the grad copy of maximize / L2
  (`grad = -grads[i]`, `grad = grad.add(param)`). The largest tensors decide.
- **8-bit**: bitsandbytes runs one in-place kernel per tensor (`optimizer_update_8bit_blockwise`); torchao's
  AdamW8bit loops over the parameters and calls `torch.compile(single_param_adam)` per tensor, whose fp32
  dequantised m and v are inductor intermediates of that one tensor (docs/sizing.md: a CPU profile allocates
  none; torch on a GPU was not run). Modelled as fused: no temporaries.
- SGD with momentum (`_multi_tensor_sgd`): the momentum update is in place; only the maximize / L2 copy.
  Adafactor (`_multi_tensor_adafactor`): `var_estimates`, one group-sized list (the factored row x column
  product for matrices, `grads_squared` for vectors); forloop: the largest tensor's.

Temporaries take the dtype of the tensors the optimizer steps: the fp32 master when the recipe keeps one,
else the weights. `optimizer_in_backward` builds one optimizer per parameter (torchtune), so a group is
one tensor; ZeRO-1+ steps the local shard; FSDP CPU offload steps on the host (nothing on the GPU).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiworkbook.message import Joined, Msg
from aiworkbook.sizing.expr import Term
from aiworkbook.sizing.states import _lora_shapes, recipe_bytes, trainable_and_optimizer
from aiworkbook.sizing.workload import Workload

if TYPE_CHECKING:
    from aiworkbook.specs.protocol import ModelSpecLike

#: torch's own foreach devices (torch/utils/_foreach_utils.py); the CPU is not one.
FOREACH_DEVICES = ("cuda", "xpu", "mtia")
#: Recipes stepped by a framework's FusedAdam (DeepSpeed, Megatron/Apex/Transformer Engine).
FRAMEWORK_FUSED = ("zero-mixed", "megatron-bf16")
#: Recipes stepped by bitsandbytes' or torchao's 8-bit kernels (one implementation each: no foreach).
EIGHT_BIT = ("adamw-8bit", "blockwise-adamw-8bit", "paged-adamw-8bit")


def resolve_impl(w: Workload, device: str) -> str:
    """The implementation that runs: the Workload's, else what the recipe's optimizer picks on `device`."""
    if w.optimizer_impl is not None:
        return w.optimizer_impl
    if w.recipe in FRAMEWORK_FUSED or w.recipe in EIGHT_BIT:
        return "fused"
    return "foreach" if device in FOREACH_DEVICES else "forloop"


def tensor_sizes(spec: ModelSpecLike, w: Workload) -> list[int]:
    """Elements of each trainable tensor in `model.parameters()` order (a Llama-style decoder: embedding,
    per layer norm, q, k, v, o, norm, MLP, then the final norm and an untied head; LoRA: each adapter's A
    and B). Biases are left out: the forloop peak is decided by the largest tensors."""
    shapes = _lora_shapes(spec)
    h = spec.hidden_size
    if w.mode == "train":
        attn = [i * o for m in ("q_proj", "k_proj", "v_proj", "o_proj") for i, o, _ in [shapes[m]]]
        mlp = [
            i * o for m in ("gate_proj", "up_proj", "down_proj") for i, o, n in [shapes[m]] for _ in range(n)
        ]
        router = [h * spec.num_experts] if spec.num_experts > 1 else []
        layer = [h, *attn, h, *router, *mlp]
        head = [spec.vocab_size * h] if spec.params_head else []
        return [spec.vocab_size * h, *(layer * spec.num_layers), h, *head]
    r = w.lora_rank
    adapters = [x for m in w.lora_modules(spec) for i, o, n in [shapes[m]] for x in [r * i, o * r] * n]
    return adapters * spec.num_layers


def _forloop_peak(sizes: list[int], copy: int, neg: bool) -> int:
    """Largest elements alive at once in `_single_tensor_adam` (see the module docstring): at tensor i
    `denom`'s sqrt and quotient (2 n) beside the previous denom and `copy` grad copies; with maximize the
    new negated grad also meets the previous tensor's copy before it is rebound (with L2 too, the add's
    result meets the negated copy: prev + 2 n, below the sqrt's moment)."""
    peak = prev = prev_copy = 0
    for n in sizes:
        moments = [prev + copy * n + 2 * n]
        if neg:
            moments.append(prev + prev_copy + n)
        peak, prev, prev_copy = max(peak, *moments), n, copy * n
    return peak


@dataclass(frozen=True)
class StepTemporaries:
    """Bytes the optimizer step allocates beyond the states at its peak, the implementation and why."""

    bytes: int
    impl: str
    formula: Msg


def temporaries(
    spec: ModelSpecLike, w: Workload, device: str = "cuda", trainable: int | None = None
) -> StepTemporaries:
    """The step's temporaries per GPU (see the module docstring); the formula is built from the same
    terms as the number. `trainable`: the trainable parameters when the caller has them already."""
    impl = resolve_impl(w, device)
    if not w.training or w.fsdp_cpu_offload:
        return StepTemporaries(0, impl, Msg("term.step.none") if w.training else Joined())
    wb, _, _, mb = recipe_bytes(w.recipe, w.precision)
    width = 4 if mb else wb
    copy = int(w.maximize or w.l2_weight_decay)
    both = w.maximize and w.l2_weight_decay
    said = "term.step.maximize_l2" if both else ("term.step.maximize" if w.maximize else "term.step.l2")
    what = Msg(said)
    if impl == "fused" or w.recipe in EIGHT_BIT:
        lib = "term.step.eight_bit" if w.recipe in EIGHT_BIT else "term.step.fused"
        return StepTemporaries(0, impl, Msg(lib))
    sizes = tensor_sizes(spec, w)
    div = w.tp * (w.dp if w.zero >= 1 else 1)
    bytes_ = Term(width, "term.B")

    def per_gpu(elements: Term) -> Term:
        """elements over the shards (tp and ZeRO-1+ dp), at the stepped tensors' width."""
        return (elements // Term(div, "term.shard") if div > 1 else elements) * bytes_

    def answer(t: Term) -> StepTemporaries:
        return StepTemporaries(t.value, impl, t.text)

    sgd, adafactor = w.recipe == "sgd-momentum", w.recipe == "adafactor"
    if impl == "foreach" and not w.optimizer_in_backward:
        group = trainable_and_optimizer(spec, w)[0] if trainable is None else trainable
        lists = copy if sgd else 1  # SGD: only the grad copy; Adam: sqrt(v); Adafactor: var_estimates
        name = "grad_copy" if sgd else ("var_estimates" if adafactor else "sqrt")
        t = per_gpu(Term(lists) * Term(group, "term.elements")).introduced(
            Msg(f"term.step.foreach_{name}"), ", "
        )
        if copy and not sgd:
            t = t.said(Msg("term.step.copy_freed", what=what))
        return answer(t)
    if sgd or adafactor:  # forloop: one tensor's copy (SGD) or var_estimate (Adafactor) at a time
        lists = copy if sgd else 1
        why = "term.step.largest_grad_copy" if sgd else "term.step.largest_var_estimate"
        largest = Term(lists) * Term(max(sizes), why)
        return answer(per_gpu(largest).introduced(Msg("term.step.impl", impl=impl)))
    if w.optimizer_in_backward and impl == "foreach":  # one tensor per optimizer: its sqrt
        return answer(
            per_gpu(Term(max(sizes), "term.elements")).introduced(Msg("term.step.foreach_per_param"), ", ")
        )
    forloop = Msg("term.step.forloop_copy", what=what) if copy else Msg("term.step.forloop")
    peak = Term(_forloop_peak(sizes, copy, w.maximize), "term.elements_largest")
    return answer(per_gpu(peak).introduced(forloop, ", "))
