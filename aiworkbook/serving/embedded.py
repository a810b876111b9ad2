"""Build the embedded server: a ModelSpec's decoder (or the synthetic stand-in) behind an Engine whose
KV pool is sized from the sizing engine's KV bytes per token, on a free loopback port."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.serving.pool import BlockPool
from aiworkbook.units import MiB

if TYPE_CHECKING:
    from aiworkbook.specs.protocol import ModelSpecLike

BACKENDS = ("torch", "synthetic")
BLOCK_SIZE = 16
CPU_KV_BUDGET = 64 * MiB
CUDA_KV_CAP = 8 * 1024 * MiB  # the pool is allocated up front: a proxy model needs no 100 GB of slots


def infer_workload(concurrency: int = 1, context: int = 1, dtype: Any = "fp32"):
    """An inference Workload for the pool (dtype: one of Workload's precisions; Workload validates it)."""
    from aiworkbook.sizing import Workload

    return Workload.decoding(concurrency, context, dtype, block_size=BLOCK_SIZE)


def kv_bytes_per_token(spec: ModelSpecLike, dtype: str = "fp32") -> int:
    """The sizing engine's KV bytes for one token of one sequence (all layers, K and V)."""
    from aiworkbook.sizing.memory import kv_bytes

    return int(kv_bytes(spec, infer_workload(1, BLOCK_SIZE, dtype), 1, BLOCK_SIZE)) // BLOCK_SIZE


def predicted_capacity(spec: ModelSpecLike, budget_bytes: int, context: int, dtype: str = "fp32") -> int:
    """Sequences of `context` tokens whose KV cache (sizing's kv_bytes, whole blocks) fits the budget."""
    from aiworkbook.sizing.memory import kv_bytes

    one = int(kv_bytes(spec, infer_workload(1, context, dtype), 1, context))
    return int(budget_bytes) // one if one else 0


def default_kv_budget(device: str, spec: ModelSpecLike | None = None, dtype: str = "fp32") -> int:
    """CPU: 64 MiB. CUDA: the free memory less the safety margin (serving.limits, vLLM's 10 %) less the
    weights (the sizing library's), at most 8 GiB (pass kv_budget_bytes for more)."""
    if not device.startswith("cuda"):
        return CPU_KV_BUDGET
    from aiworkbook.serving.limits import free_bytes, usable_bytes, weights_bytes

    free = free_bytes(device)[0]
    weights = weights_bytes(spec, dtype) if spec is not None else 0
    return min(CUDA_KV_CAP, max(0, usable_bytes(free) - weights))


def build_engine(
    model: Any = "tiny-llama",
    *,
    backend: str = "torch",
    scheduler: str = "continuous",
    max_batch: int = 16,
    max_queue: int = 256,
    kv_budget_bytes: int | None = None,
    device: str = "cpu",
    step_s: float = 0.01,
    batch_timeout_s: float = 0.05,
    max_batched_tokens: int | None = None,
    free_bytes: int | None = None,
):
    """An Engine for `model` (preset name, config path or ModelSpec) with its KV pool; the synthetic
    backend keeps the model's KV bytes per token but sleeps `step_s` per forward instead of computing.
    max_batched_tokens: tokens per continuous-batching forward (default: the engine's, vLLM V1's 2048).
    device: auto, cpu, cuda or cuda:N. The torch backend is refused before it allocates (WouldNotFit)
    when its weights and KV pool do not fit the free memory less a margin (serving.limits.check_memory;
    `free_bytes` injects the free figure)."""
    from aiworkbook.serving.backends import SyntheticBackend, TorchBackend
    from aiworkbook.serving.engine import MAX_BATCHED_TOKENS, Engine
    from aiworkbook.serving.limits import check_memory, serve_device, weights_bytes
    from aiworkbook.specs import load_model

    if backend not in BACKENDS:
        raise SpecError("backend", backend, ", ".join(BACKENDS))
    spec = load_model(model) if isinstance(model, str) else model
    if not spec.is_decoder:
        raise SpecError("model", spec.name, Msg("allowed.server_decoder"))
    device = serve_device(device)
    dtype = serving_dtype(device)
    budget = default_kv_budget(device, spec, dtype) if kv_budget_bytes is None else int(kv_budget_bytes)
    pool = BlockPool.from_budget(budget, kv_bytes_per_token(spec, dtype), BLOCK_SIZE)
    if backend == "torch":  # the synthetic backend allocates neither weights nor a pool
        kv = pool.num_blocks * pool.bytes_per_block
        check_memory(spec.name, weights_bytes(spec, dtype), kv, device, dtype, free=free_bytes)
    be = (
        TorchBackend(spec, pool, device=device, dtype=dtype)
        if backend == "torch"
        else SyntheticBackend(step_s=step_s)
    )
    eng = Engine(
        be,
        pool,
        scheduler=scheduler,
        max_batch=max_batch,
        max_queue=max_queue,
        batch_timeout_s=batch_timeout_s,
        max_context=spec.max_position_embeddings,
        max_batched_tokens=max(max_batch, MAX_BATCHED_TOKENS)
        if max_batched_tokens is None
        else max_batched_tokens,
    )
    eng.spec = spec  # type: ignore[attr-defined]
    eng.kv_budget_bytes = budget  # type: ignore[attr-defined]
    eng.kv_dtype = dtype  # type: ignore[attr-defined]
    return eng


def embedded_server(engine: Any, name: str = "", host: str = "127.0.0.1", port: int = 0):
    """A ServerThread (not started) serving `engine` under the model's name; use it with `with`."""
    from aiworkbook.serving.server import ServerThread, make_app

    return ServerThread(make_app(name or engine.spec.name, engine=engine), host, port, engine=engine)


def serving_dtype(device: str) -> str:
    """The dtype the embedded server holds weights and KV cache in on `device` (one rule, so every
    prediction sizes the pool the server really allocates): fp32 on the CPU, else the GPU's 16-bit dtype
    (bf16, or fp16 where the GPU computes no bf16 natively)."""
    from aiworkbook.proofs.device import half_dtype

    return "fp32" if device == "cpu" else half_dtype(device)[0]


def predicted_kv_bytes(spec: ModelSpecLike, sequences: int, context: int, dtype: str = "fp32") -> int:
    """The sizing engine's kv_cache for `sequences` sequences of `context` tokens (whole blocks)."""
    from aiworkbook.sizing.memory import kv_bytes

    return int(kv_bytes(spec, infer_workload(sequences, context, dtype), sequences, context))
