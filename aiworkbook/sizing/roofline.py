"""Rooflines: FLOPs and bytes per step against a GPU's ceilings (datasheet peaks, or measured ones
through `GPUSpec.calibrated`). Times are lower bounds: efficiency factors scale the ceilings.

- Training: 6·N FLOPs per token plus attention 12·L·a·d·s (PaLM appendix B), N the parameters that
  multiply per token: the layers' (active ones for MoE) plus the output projection, tied or not (the
  input lookup does no arithmetic); these are model FLOPs (MFU's convention): recomputation's extra
  forward is hardware work the assumed MFU absorbs.
- Decode step: max((weight bytes + KV bytes read) / BW, FLOPs / peak); batch 1 is BW / weight bytes.
  Weight bytes are all stored weights and FLOPs 2 per active parameter (the convention of docs/architecture.md:
  Llama-3-8B bf16 on an H100 SXM, 209 tokens/s at an empty cache; crossover peak/BW·(bytes per
  parameter / 2) = 295). An untied input-embedding lookup really gathers B rows instead of streaming
  V·h, so the true ceiling is a little higher (Llama-3-8B: 15.01 GB read, 223 tokens/s).
- Prefill (TTFT): (2·N·s + 2·L·a·d·s²) per sequence over the peak, the output head on the last
  position only (what generation needs), at least one weight read.
- LoRA/QLoRA training: the frozen base needs no weight gradients: 4·N + 6·N_adapters (+ attention).
- MoE: a decode step at batch B touches E·(1 − (1 − k/E)^B) experts per layer (uniform routing).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiworkbook.message import Msg
from aiworkbook.sizing.memory import kv_bytes
from aiworkbook.sizing.states import inference_weight_bytes
from aiworkbook.sizing.workload import Workload

if TYPE_CHECKING:
    from aiworkbook.sizing.expr import Num
    from aiworkbook.specs.gpu import GPUSpec
    from aiworkbook.specs.protocol import ModelSpecLike

# float weights compute at their own dtype; integer ones (int8/int4/nf4) dequantise to bf16
_COMPUTE_DTYPE = {d: d for d in ("fp32", "bf16", "fp16", "fp8")} | dict.fromkeys(
    ("int8", "int4", "nf4"), "bf16"
)
DEFAULT_TRAIN_MFU = 0.4


def compute_dtype(weights_dtype: str) -> str:
    """The dtype whose peak bounds serving at these weights (int8/int4/nf4 dequantise to bf16)."""
    return _COMPUTE_DTYPE[weights_dtype]


def experts_touched(num_experts: int, top_k: int, batch: Num) -> Num:
    """Expected distinct experts per MoE layer for `batch` tokens routed uniformly to top_k of E."""
    if not num_experts:
        return 0 * batch
    return num_experts * (1 - (1 - top_k / num_experts) ** batch)


def matmul_params(spec: ModelSpecLike) -> int:
    """Parameters that take part in a matmul per token: active layer weights plus the output head."""
    head = spec.vocab_size * spec.hidden_size if spec.is_decoder else 0
    return spec.params_active - spec.params_embedding - spec.params_head + head


def training_flops_per_token(spec: ModelSpecLike, seq_len: int, adapter_params: int | None = None) -> float:
    """Model FLOPs per token, 6·N + 12·L·a·d·s (MFU's numerator: recomputation is not counted).

    With `adapter_params` (LoRA/QLoRA) the frozen base skips its weight gradients: 4·N + 6·N_adapters.
    """
    n = matmul_params(spec)
    attn = 12 * spec.num_layers * spec.num_heads * spec.head_dim * seq_len
    f = 6 * n + attn if adapter_params is None else 4 * n + 6 * adapter_params + attn
    return float(f)


def train_step(
    spec: ModelSpecLike,
    w: Workload,
    gpu: GPUSpec | None,
    mfu: float = DEFAULT_TRAIN_MFU,
    trainable: int | None = None,
) -> dict[str, Any]:
    """Step time at an assumed MFU, tokens/s over the data-parallel group, FLOPs per GPU.
    `trainable`: the trainable parameters (the adapters for LoRA) when the caller has them."""
    if not 0 < mfu <= 1:
        from aiworkbook.errors import SpecError

        raise SpecError("mfu", mfu, Msg("allowed.fraction_above_0"))
    adapters = None
    if w.mode in ("lora", "qlora"):
        from aiworkbook.sizing.states import lora_params

        adapters = lora_params(spec, w) if trainable is None else trainable
    per_token = training_flops_per_token(spec, w.seq_len, adapter_params=adapters)
    tokens = w.batch * w.seq_len
    model_flops = per_token * tokens / w.tp
    peak = gpu.peak_flops(w.precision, field="precision") if gpu else None
    out = {
        "flops_per_token": per_token,
        "model_flops_per_gpu_step": model_flops,
        "assumed_mfu": mfu,
        "peak_flops": peak,
        "step_time_s": None,
        "tokens_per_s": None,
    }
    if peak:
        from aiworkbook.sizing.comm import tp_allreduce

        comm = tp_allreduce(spec, w, gpu, tokens, 2, w.precision)  # forward and backward
        t = model_flops / (peak * mfu) + (comm["tp_comm_s"] or 0.0)
        out.update(comm)
        out["step_time_s"] = t
        out["tokens_per_s"] = tokens * w.dp / t
    return out


def mfu(model_flops_per_step: float, step_time_s: float, peak_flops: float) -> float:
    """Model FLOPs utilisation: achieved model FLOP/s over the peak (recomputation not counted)."""
    return model_flops_per_step / step_time_s / peak_flops


def weight_bytes_read(spec: ModelSpecLike, w: Workload, batch: Num = 1, stored: int | None = None) -> Num:
    """Weight bytes one decode step streams on one GPU: every matrix the step multiplies by, over tp.

    Lookup-only tables (an untied input embedding, learned positions, token types) are not streamed:
    a step reads one row per sequence. A tied embedding is read whole, as the output head. Counting
    the whole untied table instead (the common rule of thumb) under-states Llama-3-8B's batch-1
    ceiling on H100 SXM by 7 % (209 vs 223 tokens/s). `stored`: inference_weight_bytes when known.
    """
    total = inference_weight_bytes(spec, w.weights_dtype)[0] if stored is None else stored
    table_b = 4 if w.weights_dtype == "fp32" else 2  # embeddings stay at 16 bits (fp32 when fp32)
    lookup = spec.params_embedding - (spec.vocab_size * spec.hidden_size if spec.tie_word_embeddings else 0)
    tables = 1 + bool(spec.learned_positions) + bool(spec.type_vocab_size)
    rows = batch * tables * spec.hidden_size
    return (total - lookup * table_b + rows * table_b) / w.tp


def decode_flops_bytes(
    spec: ModelSpecLike,
    w: Workload,
    batch: Num | None = None,
    context: Num | None = None,
    stored: int | None = None,
) -> dict[str, Any]:
    """One decode step's work per GPU at `batch` sequences of `context` tokens (arrays allowed):
    FLOPs 2·N_matmul·b + 4·L·a·d·ctx·b, the weight bytes it streams (MoE: only the experts the batch
    touches) and the KV bytes it reads. The one derivation behind `decode` and the proofs' chart point."""
    from aiworkbook.sizing.states import QUANT_BITS

    batch = w.concurrency if batch is None else batch
    context = w.context_len if context is None else context
    wbytes = weight_bytes_read(spec, w, batch, stored)
    if spec.num_experts:
        # one expert across all layers, at the linear layers' width (experts are quantised linears)
        expert_bytes = spec.num_layers * spec.expert_params * QUANT_BITS[w.weights_dtype] / 8 / w.tp
        idle = spec.num_experts - experts_touched(spec.num_experts, spec.experts_per_token, batch)
        wbytes = wbytes - idle * expert_bytes
    kv = kv_bytes(spec, w, batch, context)
    flops = (
        (2 * matmul_params(spec) + 4 * spec.num_layers * spec.num_heads * spec.head_dim * context)
        * batch
        / w.tp
    )
    return {
        "flops": flops,
        "weight_bytes_read": wbytes,
        "kv_bytes_read": kv,
        "batch": batch,
        "context": context,
    }


def decode(
    spec: ModelSpecLike,
    w: Workload,
    gpu: GPUSpec,
    batch: Num | None = None,
    context: Num | None = None,
    mem_efficiency: float = 1.0,
    compute_efficiency: float = 1.0,
    stored: int | None = None,
) -> dict[str, Any]:
    """Decode step time, tokens/s and the bound at `batch` sequences of `context` tokens (arrays allowed)."""
    import numpy as np

    work = decode_flops_bytes(spec, w, batch, context, stored)
    batch, wbytes, kv, flops = work["batch"], work["weight_bytes_read"], work["kv_bytes_read"], work["flops"]
    bw = gpu.memory_bandwidth_bps * mem_efficiency
    peak = gpu.peak_flops(_COMPUTE_DTYPE[w.weights_dtype], field="weights_dtype") * compute_efficiency
    t_mem = (wbytes + kv) / bw
    t_cmp = flops / peak
    t = np.maximum(t_mem, t_cmp)
    bound = np.where(t_cmp > t_mem, "compute", "memory")
    return {
        "step_time_s": t,
        "tokens_per_s": batch / t,
        "bound": bound if np.ndim(bound) else str(bound),
        "weight_bytes_read": wbytes,
        "kv_bytes_read": kv,
        "flops": flops,
    }


def crossover_batch(spec: ModelSpecLike, w: Workload, gpu: GPUSpec, stored: int | None = None) -> float:
    """Batch above which decode is compute-bound (KV reads ignored): weight bytes·peak / (BW·2·N)."""
    peak = gpu.peak_flops(_COMPUTE_DTYPE[w.weights_dtype], field="weights_dtype")
    wbytes = weight_bytes_read(spec, w.replace(tp=1), stored=stored)
    crossover: float = wbytes * peak / (gpu.memory_bandwidth_bps * 2 * matmul_params(spec))
    return crossover


def prefill_time(
    spec: ModelSpecLike,
    w: Workload,
    gpu: GPUSpec,
    prompt: int | None = None,
    batch: int = 1,
    compute_efficiency: float = 1.0,
    stored: int | None = None,
) -> float:
    """TTFT lower bound without queueing: prefill FLOPs over the peak, at least one read of the weights.

    FLOPs per sequence: 2·(N − V·h)·s for the layers, 2·V·h for the head on the last position, and
    2·L·a·d·s² for causal attention.
    """
    s = w.seq_len if prompt is None else prompt
    L, a, d = spec.num_layers, spec.num_heads, spec.head_dim
    head = spec.vocab_size * spec.hidden_size if spec.is_decoder else 0
    n = matmul_params(spec)
    flops = batch * (2 * (n - head) * s + 2 * head + 2 * L * a * d * s * s) / w.tp
    peak = gpu.peak_flops(_COMPUTE_DTYPE[w.weights_dtype], field="weights_dtype") * compute_efficiency
    seconds: float = max(flops / peak, weight_bytes_read(spec, w, stored=stored) / gpu.memory_bandwidth_bps)
    return seconds


def inference_roofline(
    spec: ModelSpecLike, w: Workload, gpu: GPUSpec, stored: int | None = None
) -> dict[str, Any]:
    """TTFT, TPOT and decode throughput at the workload's concurrency, with the crossover batch. An
    encoder-only model does not decode: its TTFT is the forward pass, every decode figure None.
    `stored`: the served weight bytes (inference_weight_bytes) when the caller has them."""
    if stored is None:
        stored = inference_weight_bytes(spec, w.weights_dtype)[0]
    if not spec.is_decoder:
        return {
            "ttft_s": prefill_time(spec, w, gpu, batch=w.concurrency, stored=stored),
            "tpot_s": None,
            "decode_tokens_per_s": None,
            "decode_bound": None,
            "batch1_tokens_per_s": None,
            "crossover_batch": None,
            "experts_touched_per_layer": None,
            "compute_dtype": compute_dtype(w.weights_dtype),
        }
    from aiworkbook.sizing.comm import tp_allreduce

    dt = compute_dtype(w.weights_dtype)
    step = tp_allreduce(spec, w, gpu, w.concurrency, 1, dt)  # one decode step: one token per sequence
    c_step, c_one = step["tp_comm_s"] or 0.0, tp_allreduce(spec, w, gpu, 1, 1, dt)["tp_comm_s"] or 0.0
    c_pre = tp_allreduce(spec, w, gpu, w.concurrency * w.seq_len, 1, dt)["tp_comm_s"] or 0.0
    dec = decode(spec, w, gpu, stored=stored)
    tpot = float(dec["step_time_s"]) + c_step
    one = float(decode(spec, w, gpu, batch=1, stored=stored)["step_time_s"]) + c_one
    return {
        "ttft_s": prefill_time(spec, w, gpu, batch=w.concurrency, stored=stored) + c_pre,
        "tpot_s": tpot,
        "decode_tokens_per_s": w.concurrency / tpot,
        "decode_bound": Msg(f"roofline.bound.{dec['bound']}"),  # memory | compute, said in the language
        "batch1_tokens_per_s": 1 / one,
        **step,
        "crossover_batch": crossover_batch(spec, w, gpu, stored),
        "experts_touched_per_layer": float(
            experts_touched(spec.num_experts, spec.experts_per_token, w.concurrency)
        ),
        "compute_dtype": compute_dtype(w.weights_dtype),
    }


def of_workload(
    spec: ModelSpecLike, w: Workload, gpu: GPUSpec | None, trainable: int | None, stored: int | None
) -> dict[str, Any] | None:
    """The roofline an estimate shows for `w` on `gpu`: the training step, or the serving figures (None
    without a GPU). `trainable`, `stored`: the sizing pass's trainable parameters and served weight
    bytes. One function, so the estimate and the catalogue's cost ranking (capacity) read the same."""
    if w.training:
        return train_step(spec, w, gpu, trainable=trainable)
    if gpu is None:
        return None
    return inference_roofline(spec, w, gpu, stored)
