"""KV-cache proof (inference): generate with a growing cache over a batch x context grid.

Per grid point: the cache's bytes (unique storages it holds) against the estimate's `kv_cache`,
and on CUDA the peak allocated against the itemised total; decode latency per token as the cache
grows (where it starts to climb); and the largest concurrency whose caches fit a memory budget,
found by allocating them, against the concurrency the estimate says fits.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.proofs import flags as F
from aiworkbook.proofs.attention import pinned
from aiworkbook.proofs.control import Control, report
from aiworkbook.proofs.device import (
    DoesNotFit,
    free_memory,
    half_dtype,
    interruptible,
    oom_guard,
    release_memory,
    resolve_device,
    tensor_device,
)
from aiworkbook.proofs.environment import capture, throttle_check
from aiworkbook.proofs.inputs import KvInputs
from aiworkbook.proofs.model import TORCH_DTYPES, DecoderModel, KVCache
from aiworkbook.proofs.progress import steps as progress_steps
from aiworkbook.proofs.registry import Plan
from aiworkbook.proofs.result import ProofResult
from aiworkbook.proofs.stats import summarize
from aiworkbook.proofs.timing import time_trials
from aiworkbook.proofs.vram import allocated_prediction, check_int, fit_proxy
from aiworkbook.signature import then
from aiworkbook.specs import ModelSpec, load_model
from aiworkbook.units import MiB

if TYPE_CHECKING:
    from aiworkbook.specs.protocol import ModelSpecLike

TOLERANCE = 0.10
CLIMB = 1.20  # latency "starts to climb" at the first context whose median step is 20 % above the shortest's


def defaults(device: str, quick: bool) -> dict[str, Any]:
    if device == "cpu":
        if quick:
            return {"batches": (1, 2), "contexts": (64, 256), "new_tokens": 8, "dtype": "fp32"}
        return {"batches": (1, 2, 4), "contexts": (128, 512, 1024), "new_tokens": 16, "dtype": "fp32"}
    if quick:
        return {"batches": (1, 8), "contexts": (512, 2048), "new_tokens": 16, "dtype": "bf16"}
    return {"batches": (1, 8, 32), "contexts": (512, 2048, 8192), "new_tokens": 32, "dtype": "bf16"}


def _workload(spec: ModelSpecLike, b: int, ctx: int, new: int, dtype: Any):
    """The decode the proof kit's model runs: torch's SDPA for every family (said as flash, SDPA's
    fused kernel, for a family whose transformers model offers no sdpa: the estimate refuses sdpa there,
    and both keep no s^2 scores)."""
    from aiworkbook.sizing import Workload
    from aiworkbook.specs.mechanisms import of

    attention = "sdpa" if "sdpa" in of(spec).attentions else "flash"
    return Workload.decoding(b, ctx, dtype, new_tokens=new, block_size=1, attention=attention)


def _estimate(spec: ModelSpecLike, w, device):
    from aiworkbook.sizing import estimate

    return estimate(spec, w, gpu=None, device=device)


def default_kv_budget(device: str) -> int:
    """90 % of free GPU memory; on the CPU half the available RAM, at most 512 MiB (the capacity
    search allocates caches one sequence at a time up to it)."""
    free = free_memory(device)[0]
    return int(free * 0.9) if device == "cuda" else int(min(free * 0.5, 512 * MiB))


def predicted_capacity(spec: ModelSpec, ctx: int, new: int, dtype: str, device: str, budget: int) -> int:
    """vLLM-style: (budget - everything but the cache at concurrency 1) // one sequence's kv_cache."""
    mem = _estimate(spec, _workload(spec, 1, ctx, new, dtype), device).memory
    rest = allocated_prediction(mem, device) - int(mem.kv_cache)
    return max(0, (budget - rest) // int(mem.kv_cache)) if mem.kv_cache else 0


def measured_capacity(
    model: DecoderModel,
    spec: ModelSpec,
    tokens: int,
    dtype: torch.dtype,
    dev: str,
    budget: int,
    transient: int,
) -> int:
    """Allocate whole-context caches (K and V per layer) one sequence at a time while the bytes held
    (CUDA: torch.cuda.memory_allocated; CPU: weights + caches) plus the prefill transient stay in budget."""
    held: list[torch.Tensor] = []
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    per_seq = 0
    n = 0
    from aiworkbook.proofs.control import checkpoint

    try:
        while True:
            checkpoint("capacity")
            now = torch.cuda.memory_allocated() if dev == "cuda" else weights + n * per_seq
            if now + per_seq + transient > budget or n >= 1 << 16:
                return n
            seq = [
                torch.empty(
                    1, spec.num_kv_heads, tokens, spec.head_dim, dtype=dtype, device=tensor_device(dev)
                )
                for _ in range(2 * spec.num_layers)
            ]
            per_seq = sum(t.numel() * t.element_size() for t in seq)
            if (
                torch.cuda.memory_allocated() if dev == "cuda" else weights + (n + 1) * per_seq
            ) + transient > budget:
                return n
            held.extend(seq)
            n += 1
    except Exception as exc:  # the allocator said no before the budget did
        from aiworkbook.proofs.device import is_oom

        if is_oom(exc):
            return n
        raise
    finally:
        held.clear()
        release_memory(dev)


@dataclass
class _Setup:
    """Everything decided before a kv run: the grid, the (proxy) model and the budget."""

    run_spec: ModelSpec
    dev: str
    batches: tuple[int, ...]
    contexts: tuple[int, ...]
    new: int
    dtype_name: str
    budget_bytes: int
    inputs: dict[str, Any]
    flags: set[str]
    notes: list[str]
    progress: bool = False


def _prepare(
    model: str | ModelSpec,
    *,
    progress: bool = False,
    device: str = "auto",
    quick: bool = False,
    batches: tuple[int, ...] | None = None,
    contexts: tuple[int, ...] | None = None,
    new_tokens: int | None = None,
    budget_bytes: int | None = None,
) -> _Setup:
    """Validate the inputs, pick the grid and the model (or its proxy): no allocation."""
    for field, values in (("batches", batches), ("contexts", contexts)):
        if values is None:
            continue
        if not isinstance(values, list | tuple) or not values:
            raise SpecError(field, values, Msg("allowed.int_list"))
        for v in values:
            check_int(field, v, 1)
    check_int("new_tokens", new_tokens, 1)
    spec = load_model(model) if isinstance(model, str) else model  # a bad name fails before any work
    if not spec.is_decoder:
        raise SpecError(
            "model",
            spec.name,
            Msg("allowed.kv_decoder"),
        )
    choice = resolve_device(device)
    dev = choice.device
    d = defaults(dev, quick)
    batches = tuple(d["batches"] if batches is None else batches)
    contexts = tuple(d["contexts"] if contexts is None else contexts)
    new = d["new_tokens"] if new_tokens is None else new_tokens
    dtype_name = d["dtype"]
    flags, notes = set(choice.flags), [choice.reason]
    half, why = half_dtype(dev)
    if dtype_name == "bf16" and why:
        dtype_name = half
        flags.add(F.BF16_UNSUPPORTED)
        notes.append(why)
    if budget_bytes is None:
        budget_bytes = default_kv_budget(dev)
    check_int("budget_bytes", budget_bytes, 1)
    big = _workload(spec, max(batches), max(contexts), new, dtype_name)
    # one budget, in allocated bytes, for both the proxy (largest grid point) and the capacity search
    run_spec, _, proxy_note = fit_proxy(spec, big, dev, budget_bytes, allocated=True)
    if proxy_note:
        flags.add(F.PROXY_MODEL)
        notes.append(Msg("proxy.predictions", proxy=proxy_note))
    inputs = {
        "model": spec.name,
        "ran": run_spec.name,
        "batches": list(batches),
        "contexts": list(contexts),
        "new_tokens": new,
        "dtype": dtype_name,
        "budget_bytes": budget_bytes,
        "quick": quick,
    }
    return _Setup(
        run_spec, dev, batches, contexts, new, dtype_name, budget_bytes, inputs, flags, notes, progress
    )


def plan(inputs: KvInputs) -> Plan:
    """The grid a kv run would measure and the KV bytes predicted at its largest point, without running;
    `fits` False (the reason in notes) when not even a proxy fits the budget."""
    from aiworkbook.proofs.device import WouldNotFit
    from aiworkbook.proofs.registry import get

    label = Msg("kv.largest")
    try:
        st = _prepare(**dict(inputs))
    except WouldNotFit as exc:
        dev = resolve_device(inputs.device).device
        return Plan("kv", dev, None, label, "B", fits=False, notes=(exc.allowed,))
    w = _workload(st.run_spec, max(st.batches), max(st.contexts), st.new, st.dtype_name)
    kv = _estimate(st.run_spec, w, st.dev).memory.kv_cache
    sizes = {k: st.inputs[k] for k in ("ran", "batches", "contexts", "new_tokens", "dtype", "budget_bytes")}
    return Plan(
        "kv",
        st.dev,
        float(kv),
        Msg("kv.largest_at", batch=max(st.batches), context=max(st.contexts), new=st.new),
        "B",
        sizes=sizes,
        fits=True,
        rough_s=get("kv").rough_s.get(st.dev),
        notes=tuple(st.notes),
    )


def run(inputs: KvInputs, *, control: Control) -> ProofResult:
    """prove_kv under `control`: progress per grid point, a cancel lands within one decode step."""
    with control.active():
        return prove_kv(**dict(inputs))


def _measure_grid(setup: _Setup, dtype: torch.dtype, progress: bool) -> tuple[list[dict[str, Any]], Any, int]:
    """Each (batch, context) point after a discarded warm-up, then how many sequences fit the budget.

    Returns the grid, the measured capacity and the prefill transient (from the estimate) it kept free."""
    run_spec, dev, new, dtype_name = setup.run_spec, setup.dev, setup.new, setup.dtype_name
    batches, contexts, budget_bytes = setup.batches, setup.contexts, setup.budget_bytes
    grid: list[dict[str, Any]] = []
    model_ = None
    with interruptible(f"kv proof of {run_spec.name}", dev):
        try:
            with oom_guard(f"building {run_spec.name} on {dev}", dev):
                model_ = DecoderModel(run_spec, device=tensor_device(dev), dtype=dtype).eval()
            _point(model_, run_spec, 1, min(contexts), 2, dtype_name, dev)  # warm-up, discarded
            points = [(b, c) for b in batches for c in contexts]
            for b, ctx in progress_steps(
                points,
                lambda _i, p: Msg("progress.kv_point", batch=p[0], context=p[1]),
                total=len(points) + 1,
                desc=f"kv {run_spec.name}",
                show=progress,
            ):
                try:
                    grid.append(_point(model_, run_spec, b, ctx, new, dtype_name, dev))
                except DoesNotFit as exc:
                    grid.append({"batch": b, "context": ctx, "does_not_fit": str(exc), "reason": exc.reason})
            report(len(points), len(points) + 1, Msg("progress.kv_capacity"))
            big_est = _estimate(run_spec, _workload(run_spec, 1, max(contexts), new, dtype_name), dev).memory
            transient = int(big_est.activations + big_est.logits + big_est.workspace)
            cap_measured = measured_capacity(
                model_, run_spec, max(contexts) + new, dtype, dev, budget_bytes, transient
            )
        finally:
            model_ = None
            release_memory(dev)
    return grid, cap_measured, transient


def _prove(setup: _Setup) -> ProofResult:
    run_spec, dev, new, dtype_name = setup.run_spec, setup.dev, setup.new, setup.dtype_name
    contexts, flags, notes = setup.contexts, setup.flags, setup.notes
    budget_bytes, inputs = setup.budget_bytes, setup.inputs
    dtype = TORCH_DTYPES[dtype_name]
    t_start = time.monotonic()
    with pinned():
        grid, cap_measured, transient = _measure_grid(setup, dtype, setup.progress)
    cap_predicted = predicted_capacity(run_spec, max(contexts), new, dtype_name, dev, budget_bytes)
    ok = [g for g in grid if "kv_measured" in g]
    if not ok:
        return ProofResult(
            proof="kv",
            device=dev,
            inputs=inputs,
            measured=None,
            unit="B",
            verdict="does-not-fit",
            flags=sorted(flags),
            environment=capture(dev, attention=True),
            details={"grid": grid},
            notes=notes,
        )
    worst = max(ok, key=lambda g: abs(g["kv_ratio"] - 1))
    climb = _climb(ok)
    details = {
        "grid": grid,
        "latency_climb": climb,
        "capacity": {
            "budget_bytes": budget_bytes,
            "context": max(contexts) + new,
            "measured": cap_measured,
            "predicted": cap_predicted,
            "ratio": cap_measured / cap_predicted if cap_predicted else None,
            "transient_bytes_from_estimate": transient,
        },
    }
    notes.append(Msg("kv.measured"))
    notes.append(Msg("kv.capacity"))
    if dev == "cuda":
        notes.append(Msg("kv.peak_allocated"))
    else:
        flags.add(F.ACCOUNTED)
    lat = [g["decode_step_s_median"] for g in ok]
    st = summarize(lat)
    env = capture(dev, attention=True)
    if throttle_check(env, t_start, details):
        flags.add(F.THROTTLED)
    if any(g.get("latency_spread_wide") for g in ok):
        flags.add(F.SPREAD_WIDE)
    return ProofResult(
        proof="kv",
        device=dev,
        inputs=inputs,
        measured=float(worst["kv_measured"]),
        unit="B",
        predicted=float(worst["kv_predicted"]),
        predicted_label=Msg("kv.at", batch=worst["batch"], context=worst["context"], new=new),
        tolerance=TOLERANCE,
        samples=lat,
        stats=st,
        flags=sorted(flags),
        environment=env,
        details=details,
        notes=notes,
    )


def _point(
    model: DecoderModel, spec: ModelSpec, b: int, ctx: int, new: int, dtype_name: str, dev: str
) -> dict:
    est = _estimate(spec, _workload(spec, b, ctx, new, dtype_name), dev).memory
    gen = torch.Generator(device="cpu").manual_seed(b * 1000 + ctx)
    # time_trials: CUDA events on the GPU, perf_counter on the CPU at the thread count already set
    # (no warm-up inside it: each call feeds the next token, so the cache ends at exactly ctx + new
    # tokens; the point's shapes are warmed on a throwaway cache before)
    timed: dict[str, Any] = {
        "device": dev,
        "warmup": 0,  # warmed outside (below): prefill and decode on a throwaway cache
        "threads": torch.get_num_threads() if dev == "cpu" else None,
    }
    with oom_guard(f"batch {b} x context {ctx}", dev), torch.inference_mode():
        ids = torch.randint(0, spec.vocab_size, (b, ctx), generator=gen).to(tensor_device(dev))
        # this point's shapes first, discarded: its prefill (b x ctx) and two decode steps, so the timed
        # calls run kernels already chosen and loaded (attention is pinned, proofs.attention: no backend
        # builds anything per shape); its cache is gone before the measured one exists
        warm = KVCache(spec.num_layers)
        nxt = model(ids, cache=warm, logits_to_keep=1)[:, -1:].argmax(-1)
        model(nxt, cache=warm, logits_to_keep=1)
        del warm, nxt
        if dev == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        cache = KVCache(spec.num_layers)
        state: dict[str, Any] = {"inp": ids}

        def step() -> None:
            # last-position logits only (transformers' generate: logits_to_keep=1), as the estimate assumes
            state["inp"] = model(state["inp"], cache=cache, logits_to_keep=1)[:, -1:].argmax(-1)

        prefill = time_trials(step, trials=1, desc="prefill", **timed).median
        decode = time_trials(step, trials=new, desc="decode", **timed) if new else None
        kv = cache.nbytes()
        tokens = cache.length
        peak = int(torch.cuda.max_memory_allocated()) if dev == "cuda" else None
    row: dict[str, Any] = {
        "batch": b,
        "context": ctx,
        "tokens_cached": tokens,
        "kv_measured": kv,
        "kv_predicted": int(est.kv_cache),
        "kv_ratio": kv / est.kv_cache if est.kv_cache else None,
        "prefill_s": prefill,
        "kv_formula": est.formulas.get("kv_cache", ""),
    }
    if decode is not None:
        s = decode.stats
        row.update(
            decode_step_s_median=s.median,
            decode_step_s_p95=s.p95,
            decode_steps=s.n,
            latency_spread_wide=s.wide,
            timing_method=decode.method,
        )
    else:
        row.update(decode_step_s_median=prefill, decode_steps=0, latency_spread_wide=False)
    if peak is not None:
        pred = allocated_prediction(est, dev)
        row.update(
            peak_allocated=peak, total_predicted_allocated=pred, peak_ratio=peak / pred if pred else None
        )
    return row


def _climb(rows: list[dict]) -> dict[str, Any]:
    """Per batch: the first context whose median decode step is CLIMB x the shortest context's."""
    out: dict[str, Any] = {}
    for b in sorted({r["batch"] for r in rows}):
        pts = sorted((r["context"], r["decode_step_s_median"]) for r in rows if r["batch"] == b)
        base = pts[0][1]
        knee = next((c for c, t in pts[1:] if t > CLIMB * base), None)
        out[str(b)] = {
            "points": [{"context": c, "decode_step_s": t} for c, t in pts],
            "climbs_at_context": knee,
        }
    return out


prove_kv = then(
    _prepare,
    _prove,
    "prove_kv",
    """Measure KV-cache bytes, peak memory, decode latency and capacity against the sizing estimate.
    The inputs are KvInputs' (proofs/inputs.py), checked by `_prepare`; `progress`: a tqdm bar.""",
)
