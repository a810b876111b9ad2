"""Capacity: what fits. Max concurrency at a context, max context at a concurrency, max micro-batch,
GPUs needed (tensor parallel), the cheapest catalogue GPU and the smallest MIG profile.

Budgets follow each engine's semantics: plain PyTorch and vLLM may use
`gpu_memory_utilization · total`; TensorRT-LLM gives the KV cache a fraction of the memory free
after weights and runtime buffers.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from aiworkbook.message import Msg
from aiworkbook.sizing.cost import gpu_usd
from aiworkbook.sizing.memory import COMPONENTS, evaluate, kv_bytes, shape
from aiworkbook.sizing.onepass import DEVICES, SizingPass, default_device, sizing_pass
from aiworkbook.sizing.sections import CapacityReport, CheapestGPU
from aiworkbook.sizing.workload import MAX_TP, Workload

if TYPE_CHECKING:
    from collections.abc import Callable

    from aiworkbook.sizing.expr import Num
    from aiworkbook.specs.gpu import GPUSpec
    from aiworkbook.specs.protocol import ModelSpecLike


def _gpu(gpu: GPUSpec | str) -> GPUSpec:
    if gpu is None or not isinstance(gpu, str):
        return gpu
    from aiworkbook.specs import load_gpu

    return load_gpu(gpu)  # a catalogue name or a GPU JSON file (measured ceilings)


def budget(w: Workload, gpu: GPUSpec | str) -> int:
    """Bytes the workload may use on one GPU: utilisation · the driver-reported total."""
    return int(_gpu(gpu).usable_memory_bytes * w.gpu_memory_utilization)


def _pass(spec: ModelSpecLike, w: Workload, device: str, p: SizingPass | None) -> SizingPass:
    """The workload's SizingPass: the caller's, else computed (once per solver call)."""
    return p if p is not None else sizing_pass(spec, w, device)


def _kv_budget_at(spec: ModelSpecLike, w: Workload, gpu: GPUSpec | str, n: Num, ctx: Num, device: str = "cuda", p: SizingPass | None = None, c: dict[str, Any] | None = None) -> int:  # fmt: skip
    """Bytes left for the KV cache of n sequences of ctx tokens after everything else the engine holds
    (`c`: the components at that shape when the caller has them).

    vLLM: `total · gpu_memory_utilization − (weights + profile-run activations + non-torch memory)`;
    TensorRT-LLM: `free_gpu_memory_fraction · (total − everything but the cache)`.
    """
    gpu = _gpu(gpu)
    c = evaluate(_pass(spec, w, device, p), n, ctx).components if c is None else c
    other = sum(int(c[k]) for k in COMPONENTS if k != "kv_cache")
    if w.engine == "trtllm":
        return int((gpu.usable_memory_bytes - other) * w.gpu_memory_utilization)
    return budget(w, gpu) - other


def _kv_fits_at(spec: ModelSpecLike, w: Workload, gpu: GPUSpec | str, n: Num, ctx: Num, device: str = "cuda", p: SizingPass | None = None) -> bool:  # fmt: skip
    return int(kv_bytes(spec, w, n, ctx)) <= _kv_budget_at(spec, w, gpu, n, ctx, device, p)


def kv_budget(
    spec: ModelSpecLike, w: Workload, gpu: GPUSpec | str, device: str = "cuda", p: SizingPass | None = None
) -> int:
    """Bytes left for the KV cache after everything else the engine holds."""
    return _kv_budget_at(spec, w, gpu, w.concurrency, w.context_len, device, p)


def fits(
    spec: ModelSpecLike,
    w: Workload,
    gpu: GPUSpec | str,
    device: str = "cuda",
    p: SizingPass | None = None,
    c: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Does the workload fit one GPU of this kind? With the budget and the headroom in bytes.

    `p`: the workload's SizingPass; `c`: its components at the workload's shape (the estimate's
    breakdown), so nothing is recomputed."""
    gpu = _gpu(gpu)
    if c is None:
        c = evaluate(_pass(spec, w, device, p), *shape(w)).components
    total = int(c["total"])
    if w.engine == "trtllm" and not w.training:
        kvb = _kv_budget_at(spec, w, gpu, w.concurrency, w.context_len, device, p, c)
        ok = int(c["kv_cache"]) <= kvb
        limit = total - int(c["kv_cache"]) + kvb
    else:
        limit = budget(w, gpu)
        ok = total <= limit
    return {
        "gpu": gpu.name,
        "usable_bytes": gpu.usable_memory_bytes,
        "budget_bytes": limit,
        "total_bytes": total,
        "headroom_bytes": limit - total,
        "fits": bool(ok),
    }


def kv_fits(spec: ModelSpecLike, w: Workload, gpu: GPUSpec | str, device: str = "cuda") -> bool:
    """Whether the workload's KV cache fits what the engine leaves for it (same verdict as `fits`)."""
    return _kv_fits_at(spec, w, gpu, w.concurrency, w.context_len, device)


def max_concurrency(
    spec: ModelSpecLike,
    w: Workload,
    gpu: GPUSpec | str,
    context: int | None = None,
    device: str = "cuda",
    p: SizingPass | None = None,
) -> int:
    """Sequences of `context` tokens whose paged KV fits the engine's KV budget (0 if not even one).

    The boundary agrees with `fits`: n sequences fit, n + 1 do not.
    """
    ctx = w.context_len if context is None else context
    if ctx < 1:
        from aiworkbook.errors import SpecError

        raise SpecError("context", ctx, Msg("allowed.int_min", low=1))
    per_seq = int(kv_bytes(spec, w, 1, ctx))
    if per_seq == 0:
        return 0
    p = _pass(spec, w, device, p)
    hi = max(1, _kv_budget_at(spec, w, gpu, 1, ctx, device, p) // per_seq)
    return _largest(lambda n: _kv_fits_at(spec, w, gpu, n, ctx, device, p), hi)


def max_context(
    spec: ModelSpecLike,
    w: Workload,
    gpu: GPUSpec | str,
    concurrency: int | None = None,
    device: str = "cuda",
    p: SizingPass | None = None,
) -> int:
    """Longest context (capped at the model's max positions) that `concurrency` sequences fit.

    It may be shorter than the workload's seq_len + new_tokens: then the workload does not fit.
    """
    n = w.concurrency if concurrency is None else concurrency
    cap = spec.max_position_embeddings
    p = _pass(spec, w, device, p)
    return _largest(lambda c: _kv_fits_at(spec, w, gpu, n, c, device, p), cap)


def max_batch(
    spec: ModelSpecLike,
    w: Workload,
    gpu: GPUSpec | str,
    device: str = "cuda",
    limit: int = 1 << 16,
    p: SizingPass | None = None,
) -> int:
    """Largest micro-batch (training, at most `limit`) or concurrency (inference) within the budget at
    the workload's length."""
    if not w.training:
        return max_concurrency(spec, w, gpu, device=device, p=p)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        from aiworkbook.errors import SpecError

        raise SpecError("limit", limit, Msg("allowed.int_min", low=1))
    import numpy as np

    lim = budget(w, gpu)
    # float64, not int64: at the largest shapes allowed (batch x heads x seq^2 for eager scores) int64
    # totals wrap negative and read as fitting; float64 only rounds, far above any budget
    b = np.arange(1, 1 + limit, dtype=np.float64)
    tot = evaluate(_pass(spec, w, device, p), b, w.seq_len).components["total"]
    ok = np.nonzero(tot <= lim)[0]
    return int(b[ok[-1]]) if ok.size else 0


def _largest(ok: Callable[[int], bool], hi: int) -> int:
    """Largest n in [1, hi] with ok(n) (ok monotone decreasing); 0 when even 1 fails."""
    if hi < 1 or not ok(1):
        return 0
    if ok(hi):
        return hi
    lo = 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


#: Per tensor-parallel size: (the workload at that size, its pass, its components at its own shape),
#: or None where the size does not split the model. Shared by `per_gpu` across GPUs: none of it
#: depends on the GPU, only the verdict does.
TPCache = dict[int, "tuple[Workload, SizingPass, dict[str, Any]] | None"]


def _at_tp(
    spec: ModelSpecLike, w: Workload, t: int, device: str, cache: TPCache
) -> tuple[Workload, SizingPass, dict[str, Any]] | None:
    if t not in cache:
        from aiworkbook.errors import SpecError

        wt = replace(w, tp=t)
        try:
            wt.check_against(spec)  # heads, KV heads and MLP split evenly
        except SpecError:
            cache[t] = None
        else:
            p = sizing_pass(spec, wt, device)
            cache[t] = (wt, p, evaluate(p, *shape(wt)).components)
    return cache[t]


def computes(w: Workload, gpu: GPUSpec | str) -> bool:
    """Whether the GPU has the arithmetic the workload computes in (its precision when training, the
    weights' compute dtype when serving: fp8 needs fp8 tensor cores); one without it runs the workload
    at no tensor-parallel size, so it is neither counted nor priced."""
    from aiworkbook.sizing.roofline import compute_dtype

    return _gpu(gpu).computes(w.precision if w.training else compute_dtype(w.weights_dtype))


def gpus_needed(
    spec: ModelSpecLike, w: Workload, gpu: GPUSpec | str, device: str = "cuda", cache: TPCache | None = None
) -> int | None:
    """Smallest tensor-parallel size the Workload allows (1..workload.MAX_TP; sizes that do not split the
    heads, KV heads and MLP evenly are skipped, so no more than the model's heads are tried) within the
    GPU's scale-up domain (`scale_up_gpus`: tensor parallelism never leaves one node's link) that fits;
    None if none does. `cache`: the passes per tp already computed (per_gpu's)."""
    cache = {} if cache is None else cache
    gpu = _gpu(gpu)
    if not computes(w, gpu):
        return None
    for t in range(1, min(MAX_TP, spec.num_heads, gpu.scale_up_gpus) + 1):
        at = _at_tp(spec, w, t, device, cache)
        if at is not None and fits(spec, at[0], gpu, device, at[1], at[2])["fits"]:
            return t
    return None


def cheapest_gpu(spec: ModelSpecLike, w: Workload, device: str = "cuda") -> dict[str, Any] | None:
    """The catalogue GPU whose set-up costs the workload least per million tokens (`cheapest_of`)."""
    from aiworkbook.specs import list_gpus

    priced = [g for g in list_gpus() if g.price_per_hour_usd > 0]  # unpriced ones are not sized
    return cheapest_of(per_gpu(spec, w, priced, device))


def usd_per_mtok(spec: ModelSpecLike, w: Workload, gpu: Any, p: SizingPass) -> float | None:
    """What `w` (at its tensor-parallel size) costs on `gpu` at the GPU's list price: $ per million
    output tokens served (prompt tokens for an encoder-only model) or tokens trained, at roofline
    throughput with the tensor-parallel communication over the GPU's link in the step, and the default
    utilisation (Assumptions); the figure the estimate's cost section gives. None: no price or throughput."""
    from aiworkbook.sizing import roofline
    from aiworkbook.sizing.assumptions import Assumptions
    from aiworkbook.sizing.plan import cost_section

    gpu = _gpu(gpu)
    if not gpu.price_per_hour_usd:
        return None
    stored = p.weight_term.value if p.weight_term is not None else None
    roof = roofline.of_workload(spec, w, gpu, p.trainable, stored)
    c = cost_section(spec, w, gpu, roof or {}, Assumptions())
    if w.training:
        return c.usd_per_mtok_trained
    return c.decode_usd_per_mtok if c.decode_usd_per_mtok is not None else c.prefill_usd_per_mtok


def cost_basis(spec: ModelSpecLike, w: Workload) -> Msg:
    """What "lowest cost" ranks by (`cheapest_of`), in words: the tokens the workload pays for, at
    roofline throughput with the link's communication, at list prices."""
    if w.training:
        return Msg("capacity.basis.trained")
    return Msg("capacity.basis.output") if spec.is_decoder else Msg("capacity.basis.prompt")


def per_gpu(spec: ModelSpecLike, w: Workload, gpus: Any = None, device: str = "cuda") -> list[dict[str, Any]]:
    """One row per catalogue GPU (or per GPU in `gpus`): its name, the tensor-parallel GPUs the
    workload needs on it (`gpus_needed`, None: none fits), its example price per GPU-hour (0 where
    the catalogue has none) and what the workload costs on those GPUs (`usd_per_mtok`, None: unpriced
    or it does not fit). What a "fits on" table shows; `cheapest_of(rows)` picks from the same rows."""
    from aiworkbook.specs import list_gpus

    rows = []
    cache: TPCache = {}  # one pass per tensor-parallel size, whichever GPU asks
    for g in list_gpus() if gpus is None else [_gpu(x) for x in gpus]:
        n = gpus_needed(spec, w, g, device, cache)
        at = cache.get(n) if n is not None else None
        per_mtok = usd_per_mtok(spec, at[0], g, at[1]) if at is not None else None
        rows.append(
            {"gpu": g.name, "gpus": n, "price_per_gpu_hour": g.price_per_hour_usd, "usd_per_mtok": per_mtok}
        )
    return rows


def cheapest_of(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The row of `per_gpu` whose set-up costs the workload least per million tokens (ties: fewer GPUs),
    as {gpu, gpus, usd_per_hour, usd_per_mtok, basis}: what the workload costs, not what an hour costs,
    so a slow or badly linked set-up does not win on a low hourly price (`basis` says it in words).
    Unpriced GPUs and those it does not fit are skipped."""
    best = None
    for r in rows:
        if r["gpus"] is None or r["price_per_gpu_hour"] <= 0 or r.get("usd_per_mtok") is None:
            continue
        cand = {
            "gpu": r["gpu"],
            "gpus": r["gpus"],
            "usd_per_hour": gpu_usd(r["price_per_gpu_hour"], r["gpus"]),
            "usd_per_mtok": r["usd_per_mtok"],
        }
        if best is None or (cand["usd_per_mtok"], cand["gpus"]) < (best["usd_per_mtok"], best["gpus"]):
            best = cand
    return best


#: the batch (concurrency) x length grid the KV planner's heatmap sweeps unless told otherwise
GRID_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
GRID_LENGTHS = (512, 1024, 2048, 4096, 8192, 16384, 32768)


def fit_grid(
    spec: ModelSpecLike, w: Workload, gpu: GPUSpec | str, batches: Num, lengths: Num, device: str = "cuda"
) -> dict[str, Any]:
    """A batch x length grid of total bytes per GPU and whether each cell fits (the verdict `fits`
    gives at that shape; TensorRT-LLM inference: the KV cache against the KV budget), with the fit
    frontier (largest fitting batch per length). The heatmap's data."""
    from aiworkbook.sizing.sweep import memory_grid

    gpu = _gpu(gpu)
    batches, lengths = [int(b) for b in batches], [int(s) for s in lengths]
    grid = memory_grid(spec, w, batches, lengths, device)
    limit = budget(w, gpu)
    trt = w.engine == "trtllm" and not w.training
    p = sizing_pass(spec, w, device) if trt else None
    cells = []
    for i, b in enumerate(batches):
        for j, s in enumerate(lengths):
            ok = _kv_fits_at(spec, w, gpu, b, s, device, p) if trt else int(grid[i, j]) <= limit
            cells.append({"batch": b, "length": s, "bytes": int(grid[i, j]), "fits": bool(ok)})
    frontier = []
    for s in lengths:
        fitting = [c["batch"] for c in cells if c["length"] == s and c["fits"]]
        if fitting:
            frontier.append({"length": s, "batch": max(fitting)})
    return {"cells": cells, "frontier": frontier, "gpu": gpu.name, "budget_bytes": limit}


def mig_profile(
    spec: ModelSpecLike, w: Workload, gpu: GPUSpec | str, device: str = "cuda", p: SizingPass | None = None
) -> str | None:
    """The smallest MIG profile of this GPU whose memory holds the workload's total; None if none does."""
    gpu = _gpu(gpu)
    total = int(evaluate(_pass(spec, w, device, p), *shape(w)).components["total"])
    for mig in sorted(gpu.mig_profiles, key=lambda m: (m.memory_bytes, -m.max_instances)):
        if total <= mig.memory_bytes * w.gpu_memory_utilization:
            return mig.name
    return None


def _cheapest_section(spec: ModelSpecLike, w: Workload, cheap: dict[str, Any] | None) -> CheapestGPU | None:
    """The lowest-cost option with what it was ranked by and where its price comes from, in words."""
    if cheap is None:
        return None
    from aiworkbook.sizing.prices import provenance

    return CheapestGPU(**cheap, basis=cost_basis(spec, w), price_words=provenance(None, _gpu(cheap["gpu"])))


def report(spec: ModelSpecLike, w: Workload, target: Any, device: str | None = None) -> CapacityReport:
    """The capacity answers of `aiworkbook fit` for one GPU kind: `target` is a catalogue name, a GPU
    JSON file, a GPUSpec, or a NodeProfile (its calibrated GPU when measured, else its catalogue one).
    `device` None: cpu for a measured host spec, else cuda (as `estimate`)."""
    from aiworkbook.errors import SpecError
    from aiworkbook.specs.node import NodeProfile

    if isinstance(target, NodeProfile):
        gpu = target.gpu_spec()
        if gpu is None:
            raise SpecError("gpu", None, Msg("allowed.node_no_gpu", node=target.name))
    else:
        gpu = _gpu(target)
    if gpu is None:
        raise SpecError("gpu", None, Msg("allowed.gpu_target"))
    dev = default_device(gpu) if device is None else device
    if dev not in DEVICES:
        raise SpecError("device", dev, ", ".join(DEVICES))
    w.check_against(spec)
    cheap = cheapest_gpu(spec, w, dev)
    infer = not w.training
    p = sizing_pass(spec, w, dev)  # one pass; the solvers evaluate other shapes from its terms
    c = evaluate(p, *shape(w)).components
    return CapacityReport(
        model=spec.name,
        gpu=gpu.name,
        fits=bool(fits(spec, w, gpu, dev, p, c)["fits"]),
        max_batch=max_batch(spec, w, gpu, dev, p=p),
        gpus_needed_tp=gpus_needed(spec, w, gpu, dev),
        cheapest_gpu=_cheapest_section(spec, w, cheap),
        mig_profile=mig_profile(spec, w, gpu, dev, p),
        max_concurrency=max_concurrency(spec, w, gpu, device=dev, p=p) if infer else None,
        max_context=max_context(spec, w, gpu, device=dev, p=p) if infer else None,
        mode="infer" if infer else "train",
        device=dev,
    )
