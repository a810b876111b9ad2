"""Model states: weights, gradients, optimizer state and master weights, per training recipe.

The recipe is a setting, not a constant (REFERENCE.md table). Bytes per trainable parameter:

| recipe        | weights | grads | optimizer        | master |
|---------------|---------|-------|------------------|--------|
| fp32-adamw    | 4       | 4     | 8 (m, v fp32)    | 0      |
| zero-mixed    | 2       | 2     | 8                | 4      |
| megatron-bf16 | 2       | 4     | 8                | 4      |
| pure-bf16     | 2       | 2     | 4 (m, v bf16)    | 0      |
| adamw-8bit    | 2       | 2     | 2 (m, v int8)    | 4      |
| sgd-momentum  | w       | w     | 4 (momentum)     | 4 if mixed |
| adafactor     | w       | w     | 4·(rows + cols) per matrix, 4 per vector | 4 if mixed |

w is the precision's width (4 at fp32, else 2). ZeRO-1 shards optimizer + master, ZeRO-2 also
gradients, ZeRO-3 also weights, over dp ranks; tensor parallel divides all of them by tp. Per GPU,
megatron-bf16 is therefore 2 + 4 + 12/N (ZeRO-1), 2 + 16/N (ZeRO-2) and 18/N (ZeRO-3) bytes per
parameter. ZeRO-3 (FSDP full shard) also gathers one unit's full weights and gradients at a time: see
`zero3_gather_bytes` (DeepSpeed's estimator counts the largest layer the same way).
"""

from __future__ import annotations

from dataclasses import dataclass

from aiworkbook.sizing.workload import Workload

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


def recipe_bytes(recipe: str, precision: str) -> tuple[int, int, int, int]:
    """(weights, grads, optimizer, master) bytes per trainable parameter; adafactor's optimizer is 0 here."""
    if recipe in _FIXED:
        return _FIXED[recipe]
    w = width(precision)
    master = 4 if precision.endswith("-mixed") else 0
    return (w, w, 4 if recipe == "sgd-momentum" else 0, master)


def adafactor_state(spec) -> int:
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


def lora_params(spec, w: Workload) -> int:
    """Trainable adapter parameters: rank · (in + out) for each targeted projection in each layer."""
    h, a, k, d, i = spec.hidden_size, spec.num_heads, spec.num_kv_heads, spec.head_dim, spec.intermediate_size
    experts = max(1, spec.num_experts)
    shapes = {
        "q_proj": (h, a * d, 1),
        "k_proj": (h, k * d, 1),
        "v_proj": (h, k * d, 1),
        "o_proj": (a * d, h, 1),
        "gate_proj": (h, i, experts if spec.gated_mlp else 0),
        "up_proj": (h, i, experts),
        "down_proj": (i, h, experts),
    }
    per_layer = sum(w.lora_rank * (shapes[t][0] + shapes[t][1]) * shapes[t][2] for t in w.lora_targets)
    return spec.num_layers * per_layer


def trainable_and_optimizer(spec, w: Workload) -> tuple[int, int, str]:
    """(trainable parameters, their optimizer-state bytes before sharding, the formula): every parameter
    for full training, the adapters for LoRA/QLoRA, (0, 0, "") for inference. Adafactor's factored state
    replaces trainable · the recipe's optimizer bytes. Model states, the checkpoint and the estimate's
    params all read it here."""
    if w.mode == "infer":
        return 0, 0, ""
    ob = recipe_bytes(w.recipe, w.precision)[2]
    trainable = spec.params if w.mode == "train" else lora_params(spec, w)
    if w.recipe == "adafactor":
        opt = adafactor_state(spec) if w.mode == "train" else 4 * trainable
        return trainable, opt, "4 B · (rows + cols) per matrix + 4 B per vector (factored second moment)"
    return trainable, trainable * ob, f"{trainable:,} trainable · {ob} B"


def frozen_base_bytes(spec, w: Workload) -> tuple[int, str]:
    """Weights of a frozen base: LoRA at the precision's width; QLoRA NF4 linears, bf16 for the rest."""
    if w.mode == "qlora":
        lin = spec.params_linear
        rest = spec.params - lin
        n = int(lin * NF4_BITS / 8) + 2 * rest
        return n, f"{lin:,} linear params · {NF4_BITS:.3f} bits NF4 + {rest:,} others · 2 B"
    b = width(w.precision)
    return spec.params * b, f"{spec.params:,} params · {b} B (frozen base)"


def inference_weight_bytes(spec, weights_dtype: str) -> tuple[int, str]:
    """Quantised linears at their bits (with scale overhead); embeddings, head and norms stay 16-bit.

    A checkpoint quantised in its config (spec.quant) is sized at its own bytes unless another
    weights dtype than the default bf16 is asked for."""
    q = getattr(spec, "quant", None)
    if q is not None and weights_dtype == "bf16":
        return q.weight_bytes(spec), f"{q.label}, as the checkpoint's quantization_config stores it"
    lin = spec.params_linear
    rest = spec.params - lin
    bits = QUANT_BITS[weights_dtype]
    rest_b = 4 if weights_dtype == "fp32" else 2
    n = int(lin * bits / 8) + rest * rest_b
    if weights_dtype in ("fp32", "bf16", "fp16"):
        return n, f"{spec.params:,} params · {rest_b} B"
    return n, f"{lin:,} linear params · {bits:.3f} bits + {rest:,} embedding/head/norm params · {rest_b} B"


@dataclass(frozen=True)
class States:
    weights: int
    gradients: int
    optimizer: int
    master_weights: int
    trainable: int
    formulas: dict[str, str]


def model_states(spec, w: Workload) -> States:
    """Weights, gradients, optimizer and master bytes per GPU after ZeRO and tensor-parallel sharding."""
    t, dp = w.tp, w.dp
    f: dict[str, str] = {}
    if w.mode == "infer":
        n, txt = inference_weight_bytes(spec, w.weights_dtype)
        f["weights"] = txt + (f" / {t} tp" if t > 1 else "")
        return States(n // t, 0, 0, 0, 0, f)

    wb, gb, _, mb = recipe_bytes(w.recipe, w.precision)
    trainable, opt, opt_txt = trainable_and_optimizer(spec, w)
    base, base_txt = (0, "") if w.mode == "train" else frozen_base_bytes(spec, w)

    def shard(n: int, stage: int) -> tuple[int, str]:
        div = dp if w.zero >= stage else 1
        return n // (div * t), (f" / {dp} ZeRO-{w.zero}" if div > 1 else "") + (f" / {t} tp" if t > 1 else "")

    weights, sw = shard(trainable * wb, 3)
    f["weights"] = f"{trainable:,} params · {wb} B{sw}"
    if base:
        bw, sb = shard(base, 3)
        weights += bw
        f["weights"] = f"{base_txt}{sb} + {trainable:,} adapter params · {wb} B{sw}"
    grads, sg = shard(trainable * gb, 2)
    f["gradients"] = f"{trainable:,} trainable · {gb} B{sg}"
    optimizer, so = shard(opt, 1)
    f["optimizer"] = opt_txt + so
    master, sm = shard(trainable * mb, 1)
    f["master_weights"] = f"{trainable:,} trainable · {mb} B{sm}"
    return States(weights, grads, optimizer, master, trainable, f)


def zero3_unit_params(spec) -> int:
    """Parameters of the largest unit ZeRO-3/FSDP gathers whole: a transformer block or the vocabulary table."""
    return max(spec.params_per_layer, spec.vocab_size * spec.hidden_size)


def zero3_gather_bytes(spec, w: Workload) -> int:
    """ZeRO-3's working set beyond the shards: one unit's gathered weights and its unsharded gradients
    before the reduce-scatter, (weights + grads bytes) · unit parameters / tp. 0 below ZeRO-3."""
    if w.zero < 3 or not w.training:
        return 0
    wb, gb, _, _ = recipe_bytes(w.recipe, w.precision)
    if w.mode == "train":
        return (wb + gb) * zero3_unit_params(spec) // w.tp
    # LoRA/QLoRA: the frozen base unit is gathered at its dtype, no gradients for it
    base, _ = frozen_base_bytes(spec, w)
    return base * zero3_unit_params(spec) // max(spec.params, 1) // w.tp
