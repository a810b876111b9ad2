"""Device roofline: measured memory bandwidth and matmul rate per dtype, as a calibrated spec and chart data.

Bandwidth: a device copy (bytes counted as traffic: read + write = 2 x buffer, BabelStream's
convention; x86 write-allocate may add a third, uncounted) and a read-only reduction (bytes counted
once, the buffer read), on buffers >= 4x the last-level cache (CPU: /sys or lscpu; GPU: L2) filled
with random data. Matmul: 2·m·n·k FLOPs per product over a shape sweep; the ceiling is the best
shape's median. On CUDA also host<->device copies, pageable and pinned.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any

from aiworkbook import hostfacts
from aiworkbook.message import Msg
from aiworkbook.proofs import flags as F
from aiworkbook.proofs.control import Control, report
from aiworkbook.proofs.device import (
    check_fits,
    free_memory,
    interruptible,
    is_oom,
    oom_guard,
    release_memory,
    resolve_device,
)
from aiworkbook.proofs.environment import capture, throttle_check
from aiworkbook.proofs.inputs import RooflineInputs
from aiworkbook.proofs.progress import steps as progress_steps
from aiworkbook.proofs.registry import Plan
from aiworkbook.proofs.result import ProofResult
from aiworkbook.proofs.stats import summarize
from aiworkbook.proofs.timing import time_trials
from aiworkbook.specs import GPUSpec, ModelSpec
from aiworkbook.units import MiB

if TYPE_CHECKING:  # torch loads on first use: a plan (the report dashboard's first view) needs none
    import torch

_RANDOM_BLOCK = 16 * MiB


# ---- cache sizes ---------------------------------------------------------------------------------
def gpu_l2_bytes() -> int:
    import torch

    p = torch.cuda.get_device_properties(torch.cuda.current_device())
    return int(getattr(p, "L2_cache_size", 0) or 50 * MiB)


# ---- bandwidth -----------------------------------------------------------------------------------
def _random_buffer(nbytes: int, device: str) -> torch.Tensor:
    """fp32 buffer of random values: a 16 MiB random block tiled (filling GiBs with torch.rand takes seconds)."""
    import torch

    n = max(nbytes // 4, _RANDOM_BLOCK // 4)
    n -= n % (_RANDOM_BLOCK // 4)
    gen = torch.Generator(device="cpu").manual_seed(0)
    block = torch.rand(_RANDOM_BLOCK // 4, generator=gen).to(device)
    buf = torch.empty(n, dtype=torch.float32, device=device)
    buf.view(-1, block.numel()).copy_(block.expand(n // block.numel(), -1))
    return buf


def bandwidth(
    device: str, *, buffer_bytes: int | None = None, trials: int = 10, threads: int | None = None
) -> dict[str, Any]:
    """Copy and read-only bandwidth on one buffer size (default 4x the last-level cache, and at least
    256 MiB on the CPU, 1 GiB on CUDA, where a 256 MiB copy lasts ~0.1 ms)."""
    size, cache, cache_src = _buffer_bytes(device, buffer_bytes)
    check_fits(2 * size, device, what=Msg("fit.bandwidth_buffers", size=size))
    with oom_guard(f"bandwidth buffers of {size} B", device):
        copy, read, nbytes = _time_copy_and_read(size, device, trials, threads)
    copy_rates = [2 * nbytes / t for t in copy.samples]
    read_rates = [nbytes / t for t in read.samples]
    return {
        "buffer_bytes": nbytes,
        "cache_bytes": cache,
        "cache_source": cache_src,
        "cache_resident": nbytes < 4 * cache,
        "threads": copy.threads,
        "timing": copy.method,
        "copy_bps": summarize(copy_rates).median,
        "copy_samples_bps": copy_rates,
        "copy_convention": "traffic: read + write = 2 x buffer bytes per copy",
        "read_bps": summarize(read_rates).median,
        "read_samples_bps": read_rates,
        "read_convention": "bytes read once (buffer bytes) per reduction",
        "warnings": copy.warnings + read.warnings,
    }


def _time_copy_and_read(size: int, device: str, trials: int, threads: int | None):
    import torch

    src = _random_buffer(size, device)
    dst = torch.empty_like(src)
    copy = time_trials(lambda: dst.copy_(src), device=device, trials=trials, threads=threads, warmup=2)
    read = time_trials(lambda: src.sum(), device=device, trials=trials, threads=threads, warmup=2)
    return copy, read, src.numel() * 4


# ---- matmul --------------------------------------------------------------------------------------
def _fp8_supported() -> bool:
    import torch

    if not torch.cuda.is_available() or not hasattr(torch, "float8_e4m3fn"):
        return False
    major, minor = torch.cuda.get_device_capability()
    return (major, minor) >= (8, 9)


def matmul_dtypes(device: str) -> list[str]:
    if device == "cpu":
        return ["fp32", "bf16"]
    return ["fp32", "tf32", "bf16", "fp16"] + (["fp8"] if _fp8_supported() else [])


def matmul_rates(
    device: str,
    dtypes: list[str] | None = None,
    shapes: list[int] | None = None,
    *,
    trials: int = 5,
    threads: int | None = None,
) -> dict[str, Any]:
    """Median FLOP/s per dtype and square shape n (2·n³ FLOPs per product); the ceiling is the best shape."""
    dtypes = dtypes or matmul_dtypes(device)
    shapes = shapes or ([512, 1024] if device == "cpu" else [2048, 4096, 8192])
    out: dict[str, Any] = {}
    for name in dtypes:
        per_shape: dict[str, float] = {}
        note = ""
        for n in shapes:
            try:
                per_shape[str(n)] = _one_matmul(device, name, n, trials, threads)
            except (RuntimeError, TypeError, ValueError) as exc:  # a dtype this build/device cannot multiply
                if is_oom(exc):
                    release_memory(device)
                note = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
                break
        if name == "fp8" and per_shape:
            note = (note + "; " if note else "") + "torch._scaled_mm e4m3 x e4m3 -> bf16, tensor-wise scales"
        if name == "tf32" and per_shape:
            note = "fp32 operands, torch.backends.cuda.matmul fp32 precision 'tf32' (restored after)"
        if per_shape:
            out[name] = {"per_shape_flops": per_shape, "ceiling_flops": max(per_shape.values()), "note": note}
        else:
            out[name] = {"per_shape_flops": {}, "ceiling_flops": None, "note": note or "not measured"}
    return out


#: fp8 GEMMs (cuBLASLt through torch._scaled_mm) need every dimension divisible by 16.
FP8_MULTIPLE = 16
#: On CUDA a timed trial repeats a product until it holds about this many FLOPs (2·4096³ ≈ 0.14 TFLOP,
#: ~0.2 ms in bf16 on an H100): one 2048³ product (~20 µs) is too short for a pair of CUDA events.
_MIN_TRIAL_FLOPS = 2.0 * 4096**3


@contextmanager
def fp32_matmul_precision(tf32: bool, device: str):
    """Run fp32 CUDA matmuls as TF32 (tf32=True) or IEEE fp32 inside the block, then restore the flag.

    Uses torch.backends.cuda.matmul.fp32_precision ("tf32" / "ieee", torch >= 2.9) when present: there,
    reading the legacy `allow_tf32` raises once the new API has set the flag, and writing it leaves
    "ieee"/"tf32" behind instead of the default "none". Older torch: allow_tf32. No-op on the CPU.
    """
    import torch

    if device != "cuda":
        yield
        return
    m = torch.backends.cuda.matmul
    if hasattr(m, "fp32_precision"):
        before = m.fp32_precision
        m.fp32_precision = "tf32" if tf32 else "ieee"
        try:
            yield
        finally:
            m.fp32_precision = before
    else:  # pragma: no cover - torch < 2.9
        before = m.allow_tf32
        m.allow_tf32 = tf32
        try:
            yield
        finally:
            m.allow_tf32 = before


def _reps(device: str, n: int) -> int:
    return max(1, int(_MIN_TRIAL_FLOPS // (2.0 * n**3))) if device == "cuda" else 1


def _one_matmul(device: str, name: str, n: int, trials: int, threads: int | None) -> float:
    """FLOP/s of an n x n x n product in dtype `name`, median of `trials` (each `_reps` products).

    fp8: torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=bf16) with e4m3 operands, `a` row-major,
    `b` column-major (a transposed row-major tensor), fp32 scalar (tensor-wise) scales, n % 16 == 0.
    """
    import torch

    from aiworkbook.proofs.model import TORCH_DTYPES

    if name == "fp8" and n % FP8_MULTIPLE:
        raise ValueError(f"fp8 needs shapes divisible by {FP8_MULTIPLE}, got {n}")
    gen = torch.Generator(device="cpu").manual_seed(n)
    a = torch.randn(n, n, generator=gen).to(device)
    b = torch.randn(n, n, generator=gen).to(device)
    reps = _reps(device, n)
    if name == "fp8":
        a8 = a.to(torch.float8_e4m3fn)
        b8 = b.to(torch.float8_e4m3fn).t()  # column-major view of the second operand
        del a, b
        one = torch.ones((), dtype=torch.float32, device=device)

        def fn():
            for _ in range(reps):
                torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

        t = time_trials(fn, device=device, trials=trials, threads=threads, warmup=2)
    else:
        a, b = a.to(TORCH_DTYPES[name]), b.to(TORCH_DTYPES[name])
        out = torch.empty(n, n, dtype=a.dtype, device=device)

        def fn():
            for _ in range(reps):
                torch.mm(a, b, out=out)

        with fp32_matmul_precision(name == "tf32", device):
            t = time_trials(fn, device=device, trials=trials, threads=threads, warmup=2)
    return 2.0 * n**3 * reps / t.median


# ---- host <-> device -----------------------------------------------------------------------------
def host_device_copies(nbytes: int = 512 * MiB, trials: int = 5) -> dict[str, float]:
    """H2D and D2H bytes/s (bytes counted once), from pageable and from pinned host memory.

    Each copy is synchronous for the host (non_blocking=False), bracketed by CUDA events on the
    current stream: the pageable figure includes the driver's staging through its own pinned buffer.
    """
    import torch

    out: dict[str, float] = {}
    check_fits(nbytes, "cuda", what=Msg("fit.copy_buffer", size=nbytes))
    with oom_guard(f"host<->device buffers of {nbytes} B", "cuda"):
        dev = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
        dev.random_(0, 255)
        for kind in ("pageable", "pinned"):
            host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=kind == "pinned")
            host.random_(0, 255)
            h2d = time_trials(partial(dev.copy_, host), device="cuda", trials=trials)
            d2h = time_trials(partial(host.copy_, dev), device="cuda", trials=trials)
            out[f"h2d_{kind}_bps"] = nbytes / h2d.median
            out[f"d2h_{kind}_bps"] = nbytes / d2h.median
            del host
    return out


# ---- calibrated spec and chart -------------------------------------------------------------------
def datasheet_spec() -> GPUSpec | None:
    """The catalogue entry for the CUDA device torch sees, or None when it is not catalogued."""
    import torch

    from aiworkbook.specs import get_gpu
    from aiworkbook.specs.detection import match_catalogue

    p = torch.cuda.get_device_properties(torch.cuda.current_device())
    name = match_catalogue(p.name, int(p.total_memory))
    return get_gpu(name) if name else None


def calibrated_spec(ceilings: dict[str, Any], device: str, base: GPUSpec | None = None) -> GPUSpec:
    """A GPUSpec whose ceilings are the measured ones: GPUSpec.calibrated on CUDA, "CPU (measured)" on the CPU.

    Bandwidth is the read-only figure (what decode does: read weights and KV once).
    """
    import torch

    flops = {k: v["ceiling_flops"] for k, v in ceilings["matmul"].items() if v.get("ceiling_flops")}
    bw = ceilings["bandwidth"]["read_bps"]
    if device == "cuda" and base is not None:
        return base.calibrated(memory_bandwidth_bps=bw, flops=flops)
    import psutil

    from aiworkbook.specs.detection import cpu_model

    ram = int(psutil.virtual_memory().total)
    name = "CPU (measured)" if device == "cpu" else f"{torch.cuda.get_device_name()} (measured)"
    return GPUSpec(
        name=name,
        vendor="host" if device == "cpu" else "NVIDIA",
        marketed=cpu_model() if device == "cpu" else name,
        memory_type="DRAM" if device == "cpu" else "",
        memory_bytes=ram if device == "cpu" else int(torch.cuda.mem_get_info()[1]),
        usable_memory_bytes=ram if device == "cpu" else int(torch.cuda.mem_get_info()[1]),
        memory_bandwidth_bps=bw,
        peak_flops_dense=flops,
        tdp_watts=0.0,
        l2_cache_bytes=int(ceilings["bandwidth"]["cache_bytes"]),
        source="measured by aiworkbook prove roofline (tdp_watts 0: power not measured)",
        measured=True,
        measured_figures=("memory_bandwidth_bps", *(f"peak_flops_dense.{k}" for k in flops)),
    )


def calibrated_node(result: ProofResult, node=None):
    """This node (or `node`) with the roofline proof's measured ceilings as its GPU spec."""
    from aiworkbook.specs import GPUSpec, detect

    measured = GPUSpec.model_validate(result.details["calibrated_spec"])
    return (node or detect()).calibrated(measured)


def workload_point(
    spec: ModelSpec,
    *,
    batch: int = 1,
    context: int = 2048,
    weights_dtype: Any = "bf16",
    kv_dtype: Any = "bf16",
) -> dict[str, Any]:
    """One decode step's arithmetic intensity, from sizing's own decode arithmetic
    (`sizing.roofline.decode_flops_bytes`): FLOPs over the weight bytes streamed (MoE: the experts the
    batch touches) plus the batch's KV cache, and the dtype whose roof it sits under (its compute dtype)."""
    from aiworkbook.sizing import Workload
    from aiworkbook.sizing.roofline import compute_dtype, decode_flops_bytes

    # block_size 1: the cache's own tokens, no paging blocks
    w = Workload.decoding(batch, context, weights_dtype=weights_dtype, kv_dtype=kv_dtype, block_size=1)
    work = decode_flops_bytes(spec, w, batch, context)
    flops = float(work["flops"])
    nbytes = float(work["weight_bytes_read"] + work["kv_bytes_read"])
    return {
        "flops": flops,
        "bytes": nbytes,
        "intensity": flops / nbytes,
        "batch": batch,
        "context": context,
        "dtype": compute_dtype(weights_dtype),
    }


def roofline_chart_data(
    spec: GPUSpec, point: dict[str, Any] | None = None, *, dtypes: list[str] | None = None, label: str = ""
) -> list[dict[str, Any]]:
    """Rows for a roofline chart: attainable FLOP/s = min(peak, bandwidth x intensity) per dtype, log-spaced
    intensities, plus the workload's point (kind="workload") placed on its own dtype's roof (`point["dtype"]`,
    e.g. bf16 for bf16 weights; the first dtype charted when the point names none or the GPU lacks it)."""
    import numpy as np  # here, not at import: a dashboard plans this proof before its page is ready

    dtypes = dtypes or list(spec.peak_flops_dense)
    rows: list[dict[str, Any]] = []
    bw = spec.memory_bandwidth_bps
    for ai in np.logspace(-2, 4, 49):
        for dt in dtypes:
            peak = spec.peak_flops(dt)
            rows.append(
                {
                    "kind": "ceiling",
                    "dtype": dt,
                    "intensity": float(ai),
                    "attainable_flops": min(peak, bw * ai),
                    "spec": spec.name,
                }
            )
    if point is not None and dtypes:
        own = point.get("dtype")
        dt = own if own in spec.peak_flops_dense else dtypes[0]
        peak = spec.peak_flops(dt)
        ai = point["intensity"]
        rows.append(
            {
                "kind": "workload",
                "dtype": dt,
                "intensity": ai,
                "attainable_flops": min(peak, bw * ai),
                "spec": spec.name,
                "label": label or "workload",
                "bound": "memory" if bw * ai < peak else "compute",
            }
        )
    return rows


# ---- the proof -----------------------------------------------------------------------------------
def _buffer_bytes(device: str, buffer_bytes: int | None) -> tuple[int, int, str]:
    """(buffer size, last-level cache bytes, where that figure came from) for the bandwidth test."""
    if device == "cuda":
        cache, src = gpu_l2_bytes(), "torch.cuda device properties (L2)"
    else:
        cache, src = hostfacts.llc_bytes()
    return buffer_bytes or max(4 * cache, (1024 if device == "cuda" else 256) * MiB), cache, src


def _shapes(device: str, quick: bool, shapes: list[int] | None) -> list[int]:
    if shapes is not None:
        return list(shapes)
    if quick:
        return [512] if device == "cpu" else [4096, 8192]
    return [512, 1024] if device == "cpu" else [2048, 4096, 8192]


def plan(inputs: RooflineInputs) -> Plan:
    """What a roofline run would measure (buffer, dtypes, shapes, trials) and its prediction (the
    datasheet bandwidth on CUDA; none on the CPU), without allocating or timing anything."""
    from aiworkbook.proofs.registry import get

    model, device, quick, buffer_bytes = inputs.model, inputs.device, inputs.quick, inputs.buffer_bytes
    dtypes, shapes, batch, context = inputs.dtypes, inputs.shapes, inputs.batch, inputs.context

    point = None
    if model is not None:
        from aiworkbook.specs import load_model

        point = workload_point(load_model(model), batch=batch, context=context)
    dev = resolve_device(device).device
    size, cache, _src = _buffer_bytes(dev, buffer_bytes)
    base = datasheet_spec() if dev == "cuda" else None
    free = free_memory(dev)[0]
    sizes: dict[str, Any] = {
        "buffer_bytes": size,
        "cache_bytes": cache,
        "trials": 5 if quick else 10,
        "dtypes": list(dtypes or matmul_dtypes(dev)),
        "shapes": _shapes(dev, quick, shapes),
        "workload_point": point,
    }
    return Plan(
        "roofline",
        dev,
        base.memory_bandwidth_bps if base else None,
        Msg("roofline.datasheet", gpu=base.name) if base else Msg("roofline.none_on_cpu"),
        "B/s",
        sizes=sizes,
        fits=2 * size <= free,
        rough_s=get("roofline").rough_s.get(dev),
        notes=(Msg("roofline.buffers", size=size, free=free, device=dev),),
    )


def run(inputs: RooflineInputs, *, control: Control) -> ProofResult:
    """prove_roofline under `control`: progress per stage, a cancel lands between timing trials."""
    with control.active():
        return prove_roofline(**dict(inputs))


def _model_point(model: str | ModelSpec | None, batch: int, context: int) -> tuple[ModelSpec | None, Any]:
    """The model and its workload point; a bad model name or shape fails before anything is measured."""
    if model is None:
        return None, None
    from aiworkbook.specs import load_model

    spec = load_model(model) if isinstance(model, str) else model
    return spec, workload_point(spec, batch=batch, context=context)


def _measure_ceilings(
    dev: str,
    quick: bool,
    trials: int,
    buffer_bytes: int | None,
    threads: int | None,
    dtypes: list[str] | None,
    shapes: list[int] | None,
    progress: bool,
) -> tuple[dict[str, Any], Any, dict[str, Any], str]:
    """Bandwidth, matmul rates and (CUDA) host<->device copies, with progress; the copies' error or ""."""
    h2d_error = ""
    stages = ["memory bandwidth", "matmul rates"] + (["host<->device copies"] if dev == "cuda" else [])
    bw: dict[str, Any] = {}
    mm: Any = None
    h2d: dict[str, Any] = {}
    with interruptible("roofline proof", dev):
        for stage in progress_steps(stages, lambda _i, st: _stage(st), desc="roofline", show=progress):
            if stage == "memory bandwidth":
                bw = bandwidth(dev, buffer_bytes=buffer_bytes, trials=trials, threads=threads)
            elif stage == "matmul rates":
                shape = _shapes(dev, quick, shapes)
                mm = matmul_rates(dev, dtypes, shapes=shape, trials=3 if quick else 5, threads=threads)
            else:
                try:
                    h2d = host_device_copies(256 * MiB if quick else 1024 * MiB)
                except (RuntimeError, ValueError) as exc:  # pinned memory refused, say: keep the rest
                    h2d_error = f"host<->device copies not measured: {type(exc).__name__}: {exc}"[:300]
    report(len(stages), len(stages), Msg("progress.done"))
    return bw, mm, h2d, h2d_error


def _stage(stage: str) -> Msg:
    """A roofline stage as the progress bar says it."""
    if stage == "memory bandwidth":
        return Msg("progress.roofline.bandwidth")
    return Msg("progress.roofline.matmul") if stage == "matmul rates" else Msg("progress.roofline.copies")


def _notes(reason: str, bw: dict[str, Any], h2d_error: str, dev: str) -> list[str]:
    """What the result says about how it was measured."""
    notes = [
        reason,
        Msg("roofline.conventions"),
        Msg(
            "roofline.buffers_vs_cache",
            buffer=bw["buffer_bytes"],
            cache=bw["cache_bytes"],
            source=bw["cache_source"],
            block=_RANDOM_BLOCK // MiB,
        ),
    ]
    notes += bw["warnings"]
    if h2d_error:
        notes.append(h2d_error)
    if dev == "cuda":
        notes.append(Msg("roofline.host_device"))
    if dev == "cpu":
        notes.append(Msg("roofline.no_datasheet"))
    return notes


def prove_roofline(
    model: str | ModelSpec | None = None,
    *,
    device: str = "auto",
    quick: bool = False,
    threads: int | None = None,
    buffer_bytes: int | None = None,
    batch: int = 1,
    context: int = 2048,
    dtypes: list[str] | None = None,
    shapes: list[int] | None = None,
    progress: bool = False,
) -> ProofResult:
    """Measure the device's ceilings; predicted = the datasheet bandwidth on CUDA (info only on the CPU).

    dtypes/shapes override the matmul sweep (default: every dtype the device has; CPU 512, 1024 or 512
    when quick; CUDA 2048, 4096, 8192 or 4096, 8192 when quick)."""
    if threads is not None:  # bounded by the machine before torch sees it (100000 threads segfault)
        from aiworkbook.proofs.timing import bounded_threads

        threads = bounded_threads(threads)
    spec, point = _model_point(model, batch, context)
    choice = resolve_device(device)
    dev = choice.device
    flags = set(choice.flags)
    trials = 5 if quick else 10
    t_start = time.monotonic()
    bw, mm, h2d, h2d_error = _measure_ceilings(
        dev, quick, trials, buffer_bytes, threads, dtypes, shapes, progress
    )
    if bw["cache_resident"]:
        flags.add(F.L2_RESIDENT if dev == "cuda" else F.LLC_RESIDENT)
    st = summarize(bw["read_samples_bps"])
    if st.wide:
        flags.add(F.SPREAD_WIDE)
    env = capture(dev)
    throttle_details: dict[str, Any] = {}
    if throttle_check(env, t_start, throttle_details):
        flags.add(F.THROTTLED)
    ceilings = {"bandwidth": bw, "matmul": mm, "host_device": h2d}
    base = datasheet_spec() if dev == "cuda" else None
    cal = calibrated_spec(ceilings, dev, base)
    notes = _notes(choice.reason, bw, h2d_error, dev)
    return ProofResult(
        proof="roofline",
        device=dev,
        inputs={
            "model": spec.name if spec else None,
            "quick": quick,
            "threads": bw["threads"],
            "buffer_bytes": bw["buffer_bytes"],
            "batch": batch,
            "context": context,
        },
        measured=st.median,
        unit="B/s",
        predicted=base.memory_bandwidth_bps if base else None,
        predicted_label=Msg("roofline.datasheet", gpu=base.name) if base else "",
        tolerance=0.25,
        samples=bw["read_samples_bps"],
        stats=st,
        flags=sorted(flags),
        environment=env,
        details={
            "ceilings": ceilings,
            "calibrated_spec": cal.model_dump(mode="json"),
            "datasheet_spec": base.model_dump(mode="json") if base else None,
            "workload_point": point,
            "chart": roofline_chart_data(cal, point, label=spec.name if spec else ""),
            **throttle_details,
        },
        notes=notes,
    )
