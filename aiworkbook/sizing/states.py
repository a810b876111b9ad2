"""Model states: weights, gradients, optimizer state and master weights, per training recipe.

The recipe is a setting, not a constant (ZeRO, https://arxiv.org/abs/1910.02054; docs/architecture.md). Bytes per trainable parameter:

| recipe        | weights | grads | optimizer        | master |
|---------------|---------|-------|------------------|--------|
| fp32-adamw    | 4       | 4     | 8 (m, v fp32)    | 0      |
| zero-mixed    | 2       | 2     | 8                | 4      |
| megatron-bf16 | 2       | 4     | 8                | 4      |
| pure-bf16     | 2       | 2     | 4 (m, v bf16)    | 0      |
| adamw-8bit    | 2       | 2     | 2 (m, v int8)    | 4      |
| sgd-momentum  | w       | w     | 4 (momentum)     | 4 if mixed |
| adafactor     | w       | w     | 4·(rows + cols) per matrix, 4 per vector | 4 if mixed |
| blockwise-adamw-8bit | w | w     | 2 + 8/256 (int8 m, v + fp32 absmax per 256) | 4 if mixed |
| paged-adamw-8bit | w    | w     | as blockwise-adamw-8bit, in unified memory | 4 if mixed |

blockwise-adamw-8bit is torchao's AdamW8bit or bitsandbytes' AdamW8bit on the model's own weights (no
master copy at a 16-bit precision, unlike the adamw-8bit recipe's fixed fp32 master).

paged-adamw-8bit is bitsandbytes' PagedAdamW8bit: its state lives in CUDA unified memory
(cudaMallocManaged), outside PyTorch's caching allocator, so the driver pages it to the host when the
GPU is full and PyTorch's peak figures never count it. It is reported apart (`paged_optimizer` in the
host figures), not in the GPU total. Tensors under 4,096 elements (norm vectors) keep 32-bit state.

Frozen base weights (LoRA, QLoRA) keep no gradient and no optimizer state: gradients, optimizer and
master bytes count the adapters only. `optimizer_in_backward` steps each parameter as its gradient is
ready and frees it, so one parameter's gradient is alive at a time (the largest tensor), not all.
`fsdp_cpu_offload` keeps weights, gradients and optimizer state on the host (`host_states`); the GPU
holds the gathered unit(s) (the workspace's ZeRO-3 term).

w is the precision's width (4 at fp32, else 2). ZeRO-1 shards optimizer + master, ZeRO-2 also
gradients, ZeRO-3 also weights, over dp ranks; tensor parallel divides all of them by tp. Per GPU,
megatron-bf16 is therefore 2 + 4 + 12/N (ZeRO-1), 2 + 16/N (ZeRO-2) and 18/N (ZeRO-3) bytes per
parameter. ZeRO-3 (FSDP full shard) also gathers one unit's full weights and gradients at a time: see
`zero3_gather_bytes` (DeepSpeed's estimator counts the largest layer the same way).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiworkbook.message import Joined, Msg
from aiworkbook.sizing.expr import Term
from aiworkbook.sizing.workload import Workload

if TYPE_CHECKING:
    from aiworkbook.specs.protocol import ModelSpecLike

_FIXED = {  # weights, grads, optimizer, master
    "fp32-adamw": (4, 4, 8, 0),
    "zero-mixed": (2, 2, 8, 4),
    "megatron-bf16": (2, 4, 8, 4),
    "pure-bf16": (2, 2, 4, 0),
    "adamw-8bit": (2, 2, 2, 4),
}

#: QLoRA NF4 with double quantisation: 4 bits + 8-bit absmax per 64 + fp32 per 256 absmax.
NF4_BITS = 4 + 8 / 64 + 32 / (64 * 256)
#: Weight-only quantisation widths with their scale overheads (bits per linear-layer parameter).
QUANT_BITS = {
    "fp32": 32.0,
    "bf16": 16.0,
    "fp16": 16.0,
    "fp8": 8.0 + 32 / 4096,  # per-row fp32 scale (4096-wide rows)
    "int8": 8.0 + 16 / 4096,  # per-channel fp16 scale
    "int4": 4.0 + (16 + 4) / 128,  # GPTQ/AWQ: group 128, an fp16 scale + a packed 4-bit zero per group
    "nf4": NF4_BITS,
}


def width(precision: str) -> int:
    """Bytes of one value at a compute precision: 4 at fp32, 2 for every 16-bit or mixed mode."""
    return 4 if precision == "fp32" else 2


#: bitsandbytes' 8-bit optimizers: block-wise quantisation, one fp32 absmax per 256 values per state.
BNB_BLOCK = 256
#: Parameters with fewer elements keep 32-bit state in bitsandbytes (min_8bit_size).
BNB_MIN_8BIT_SIZE = 4096


def recipe_bytes(recipe: str, precision: str) -> tuple[int, int, int, int]:
    """(weights, grads, optimizer, master) bytes per trainable parameter; adafactor's optimizer is 0 here
    and paged-adamw-8bit's block state is added by `trainable_and_optimizer`."""
    if recipe in _FIXED:
        return _FIXED[recipe]
    w = width(precision)
    master = 4 if precision.endswith("-mixed") else 0
    opt = {"sgd-momentum": 4, "blockwise-adamw-8bit": 2, "paged-adamw-8bit": 2}.get(recipe, 0)
    return (w, w, opt, master)


def adafactor_state(spec: ModelSpecLike) -> int:
    """Adafactor's factored second moment: 4·(rows + cols) per matrix, 4 per vector parameter (fp32)."""
    h, a, k, d, i = spec.hidden_size, spec.num_heads, spec.num_kv_heads, spec.head_dim, spec.intermediate_size
    mats = [(h, a * d), (h, k * d), (h, k * d), (a * d, h)]
    mats += [(h, i)] * ((3 if spec.gated_mlp else 2) * max(1, spec.num_experts))
    per_layer_matrix_params = sum(r * c for r, c in mats)
    per_layer_factored = sum(r + c for r, c in mats)
    vector_params = spec.params_per_layer - per_layer_matrix_params
    tables = (spec.vocab_size + h) * (1 + (1 if spec.params_head else 0))
    other = spec.params - spec.params_embedding - spec.params_head - spec.num_layers * spec.params_per_layer
    return 4 * (spec.num_layers * (per_layer_factored + vector_params) + tables + other)


def _lora_shapes(spec: ModelSpecLike) -> dict[str, tuple[int, int, int]]:
    """(in, out, copies per layer) of each projection LoRA can adapt."""
    h, a, k, d, i = spec.hidden_size, spec.num_heads, spec.num_kv_heads, spec.head_dim, spec.intermediate_size
    experts = max(1, spec.num_experts)
    return {
        "q_proj": (h, a * d, 1),
        "k_proj": (h, k * d, 1),
        "v_proj": (h, k * d, 1),
        "o_proj": (a * d, h, 1),
        "gate_proj": (h, i, experts if spec.gated_mlp else 0),
        "up_proj": (h, i, experts),
        "down_proj": (i, h, experts),
    }


def lora_params(spec: ModelSpecLike, w: Workload) -> int:
    """Trainable adapter parameters: rank · (in + out) for each targeted projection in each layer
    (all-linear: every projection of the block, attention and MLP, not the LM head, as PEFT does)."""
    shapes = _lora_shapes(spec)
    per_layer = sum(w.lora_rank * (shapes[m][0] + shapes[m][1]) * shapes[m][2] for m in w.lora_modules(spec))
    return spec.num_layers * per_layer


def largest_trainable_tensor(spec: ModelSpecLike, w: Workload) -> int:
    """Elements of the largest trainable tensor: the one gradient optimizer-in-backward holds at a time
    (the vocabulary table or the widest matrix for full training; the widest adapter matrix for LoRA)."""
    shapes = _lora_shapes(spec)
    if w.mode == "train":
        return max([spec.vocab_size * spec.hidden_size] + [i * o for i, o, n in shapes.values() if n])
    return max(w.lora_rank * max(shapes[m][0], shapes[m][1]) for m in w.lora_modules(spec))


def _small_tensor_params(spec: ModelSpecLike, w: Workload) -> int:
    """Trainable parameters in tensors under bitsandbytes' min_8bit_size (norm vectors): 32-bit state."""
    if w.mode != "train" or spec.hidden_size >= BNB_MIN_8BIT_SIZE:
        return 0
    return (spec.num_layers * spec.norms_per_layer + 1) * spec.hidden_size


def trainable_and_optimizer(spec: ModelSpecLike, w: Workload) -> tuple[int, int, Term]:
    """(trainable parameters, their optimizer-state bytes before sharding, the Term they come from):
    every parameter for full training, the adapters for LoRA/QLoRA, (0, 0, an empty Term) for inference.
    Adafactor's factored state replaces trainable · the recipe's optimizer bytes. Model states, the
    checkpoint and the estimate's params all read it here."""
    if w.mode == "infer":
        return 0, 0, Term(0, render=Joined)
    ob = recipe_bytes(w.recipe, w.precision)[2]
    trainable = spec.params if w.mode == "train" else lora_params(spec, w)
    if w.recipe == "adafactor":
        opt = adafactor_state(spec) if w.mode == "train" else 4 * trainable
        return (
            trainable,
            opt,
            Term(opt, "term.adafactor"),
        )
    if w.recipe in ("blockwise-adamw-8bit", "paged-adamw-8bit"):
        small = _small_tensor_params(spec, w)
        state = blockwise_8bit_term(Term(trainable - small, "term.trainable"), Term(ob, "term.int8_mv"))
        if small:
            state = state + Term(small, "term.small_tensors") * Term(8, "term.B")
        return trainable, state.value, state
    opt_term = Term(trainable, "term.trainable") * Term(ob, "term.B")
    return trainable, opt_term.value, opt_term


def blockwise_8bit_term(n: Term, quantised: Term) -> Term:
    """n parameters' block-wise 8-bit state: the quantised m and v plus two fp32 absmax per block of
    BNB_BLOCK (the last block of a tensor rounded up). The text factors n out, per parameter: "n · (2 B
    int8 m, v + 2 · 4 B absmax / 256)"; the value counts whole blocks, so the two differ by less than 8 B
    when n is not a multiple of the block."""
    absmax = Term(2) * Term(4, "term.absmax")
    block = Term(BNB_BLOCK)
    value = n.value * quantised.value + absmax.value * -(-n.value // block.value)
    return Term(
        value,
        render=lambda: Joined(n.text, " · (", quantised.text, " + ", absmax.text, " / ", block.text, ")"),
    )


def frozen_base_bytes(spec: ModelSpecLike, w: Workload) -> tuple[int, Msg]:
    """Weights of a frozen base: LoRA at the precision's width; QLoRA NF4 linears, bf16 for the rest."""
    base = frozen_base_term(spec, w)
    return base.value, base.text


def frozen_base_term(spec: ModelSpecLike, w: Workload) -> Term:
    """`frozen_base_bytes` as a Term (a sum for QLoRA, so a division puts it in parentheses)."""
    if w.mode == "qlora":
        lin = spec.params_linear
        nf4 = bits_term(Term(lin, "term.linear_params"), Term(NF4_BITS, "term.bits_nf4"))
        return nf4 + Term(spec.params - lin, "term.others") * Term(2, "term.B")
    weights = Term(spec.params, "term.params") * Term(width(w.precision), "term.B")
    return weights.said(Msg("term.frozen_base"))


def bits_term(n: Term, bits: Term) -> Term:
    """n values of `bits` bits each, in whole bytes: int(n · bits / 8) (the text's unit says bits)."""
    t = n * bits
    return Term(int(t.value / 8), render=lambda: t.text)


def inference_weight_bytes(spec: ModelSpecLike, weights_dtype: str) -> tuple[int, Msg]:
    """Quantised linears at their bits (with scale overhead); embeddings, head and norms stay 16-bit.

    A checkpoint quantised in its config (spec.quant) is sized at its own bytes unless another
    weights dtype than the default bf16 is asked for."""
    t = inference_weight_term(spec, weights_dtype)
    return t.value, t.text


def inference_weight_term(spec: ModelSpecLike, weights_dtype: str) -> Term:
    """`inference_weight_bytes` as a Term (a sum for quantised linears: a division groups it)."""
    q = getattr(spec, "quant", None)
    if q is not None and weights_dtype == "bf16":
        return Term(q.weight_bytes(spec), "term.quant_config", label=q.label)
    lin = spec.params_linear
    rest_b = Term(4 if weights_dtype == "fp32" else 2, "term.B")
    if weights_dtype in ("fp32", "bf16", "fp16"):  # linears at the same width as the rest
        return Term(spec.params, "term.params") * rest_b
    linears = bits_term(Term(lin, "term.linear_params"), Term(QUANT_BITS[weights_dtype], "term.bits"))
    return linears + Term(spec.params - lin, "term.rest_params") * rest_b


@dataclass(frozen=True)
class States:
    """Per-GPU bytes on the device; `host` holds what an option keeps in host memory instead
    (fsdp_cpu_offload's states) and `paged` the unified-memory optimizer state (paged-adamw-8bit)."""

    weights: int
    gradients: int
    optimizer: int
    master_weights: int
    trainable: int
    formulas: dict[str, str]
    host: int = 0
    paged: int = 0


def model_states(
    spec: ModelSpecLike,
    w: Workload,
    trainable_opt: tuple[int, int, Term] | None = None,
    served: Term | None = None,
) -> States:
    """Weights, gradients, optimizer and master bytes per GPU after ZeRO and tensor-parallel sharding.

    `trainable_opt` (`trainable_and_optimizer`'s answer) and `served` (`inference_weight_term`'s) when
    the caller has them already (onepass.sizing_pass)."""
    t, dp = w.tp, w.dp
    f: dict[str, str] = {}
    tp = Term(t, "term.tp")
    if w.mode == "infer":
        stored = inference_weight_term(spec, w.weights_dtype) if served is None else served
        n = stored // tp if t > 1 else stored
        f["weights"] = n.text
        return States(n.value, 0, 0, 0, 0, f)

    wb, gb, _, mb = recipe_bytes(w.recipe, w.precision)
    trainable, _, opt_term = trainable_and_optimizer(spec, w) if trainable_opt is None else trainable_opt
    base = None if w.mode == "train" else frozen_base_term(spec, w)

    def shard(x: Term, stage: int) -> Term:
        """x over the ZeRO ranks that shard it at this stage and over tp: its text says each division."""
        if w.zero >= stage and dp > 1:
            x = x // Term(dp, "term.zero", stage=w.zero)
        return x // tp if t > 1 else x

    def per(n: int, what: str, nbytes: int) -> Term:
        return Term(n, what) * Term(nbytes, "term.B")

    weights = shard(per(trainable, "term.params", wb), 3)
    if base is not None and base.value:
        weights = shard(base, 3) + shard(per(trainable, "term.adapter_params", wb), 3)
    grads = shard(per(trainable, "term.trainable", gb), 2)
    if w.mode != "train":
        grads = grads.said(Msg("term.frozen_no_grads"))
    if w.optimizer_in_backward:
        big = largest_trainable_tensor(spec, w)
        one = Term(big, "term.largest_elements") * Term(gb, "term.B")
        grads = (one // tp if t > 1 else one).said(Msg("term.in_backward"))
    optimizer = shard(opt_term, 1)
    master = shard(per(trainable, "term.trainable", mb), 1)
    f["weights"], f["gradients"] = weights.text, grads.text
    f["optimizer"], f["master_weights"] = optimizer.text, master.text
    paged = 0
    if w.paged_optimizer:
        paged = optimizer.value
        optimizer = Term(0, "term.paged", formula=optimizer.text)
        f["optimizer"] = optimizer.text
    states = (weights.value, grads.value, optimizer.value, master.value)
    if w.fsdp_cpu_offload:
        for k in ("weights", "gradients", "optimizer", "master_weights"):
            f[k] = Msg("term.offloaded", formula=f[k])
        return States(0, 0, 0, 0, trainable, f, host=sum(states), paged=paged)
    return States(*states, trainable, f, paged=paged)


def zero3_unit_params(spec: ModelSpecLike) -> int:
    """Parameters of the largest unit ZeRO-3/FSDP gathers whole: a transformer block or the vocabulary table."""
    return max(spec.params_per_layer, spec.vocab_size * spec.hidden_size)


#: Units FSDP holds gathered at once: the one computing and the next, prefetched (forward and backward
#: prefetch, FSDP's defaults); their gradients are reduced one unit at a time.
GATHERED_UNITS = 2


def zero3_gather_bytes(spec: ModelSpecLike, w: Workload) -> int:
    """ZeRO-3's working set beyond the shards: one unit's gathered weights and its unsharded gradients
    before the reduce-scatter, (weights + grads bytes) · unit parameters / tp. 0 below ZeRO-3 unless
    FSDP offloads to the CPU: then the gathered units are all the GPU holds of the model, even on one
    GPU, and the prefetched next unit is counted too (GATHERED_UNITS; the existing ZeRO-3 term without
    offload keeps its one unit, as DeepSpeed's estimator does)."""
    if (w.zero < 3 and not w.fsdp_cpu_offload) or not w.training:
        return 0
    wb, gb, _, _ = recipe_bytes(w.recipe, w.precision)
    units = GATHERED_UNITS if w.fsdp_cpu_offload else 1
    if w.mode == "train":
        return (units * wb + gb) * zero3_unit_params(spec) // w.tp
    # LoRA/QLoRA: the frozen base unit is gathered at its dtype, no gradients for it
    base, _ = frozen_base_bytes(spec, w)
    return units * base * zero3_unit_params(spec) // max(spec.params, 1) // w.tp
