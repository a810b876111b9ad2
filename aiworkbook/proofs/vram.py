"""VRAM proof (training): real AdamW steps of the plain-torch decoder, measured next to the sizing estimate.

CUDA: torch peak allocated, peak reserved and the device-level delta (mem_get_info; includes the CUDA
context when NVML could read the device before torch initialised it). CPU: accounting, i.e.
parameter + gradient + optimizer-state bytes read from the objects plus the unique bytes autograd
saved for backward, plus the optimizer step's temporaries counted at the dispatcher
(`StepTemporaryTracker`). The AdamW implementation is the one the estimate assumed, passed to torch
explicitly and recorded (`inputs.optimizer_impl`): torch's default on CUDA (foreach), and foreach on the
CPU too (torch's CPU default is the for-loop), so its full-size sqrt(exp_avg_sq) is measured here as well.
A model that would not fit runs as a proxy (fewer layers, then a smaller
vocabulary), and the prediction is made for the same proxy.
"""

from __future__ import annotations

from contextlib import nullcontext
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
    check_fits,
    cuda_uuid,
    free_memory,
    half_dtype,
    interruptible,
    nvml_baseline,
    nvml_reading,
    oom_guard,
    release_memory,
    resolve_device,
    tensor_device,
)
from aiworkbook.proofs.environment import capture, throttle_check
from aiworkbook.proofs.inputs import VramInputs
from aiworkbook.proofs.memory_accounting import SavedTensorTracker, StepTemporaryTracker, model_states
from aiworkbook.proofs.model import TORCH_DTYPES, DecoderModel
from aiworkbook.proofs.progress import steps as progress_steps
from aiworkbook.proofs.registry import Plan
from aiworkbook.proofs.result import ProofResult
from aiworkbook.signature import then
from aiworkbook.sizing import optimizer_step
from aiworkbook.sizing.estimate import TRAIN_RULE_BYTES  # 18 B/param (docs/architecture.md), shown beside
from aiworkbook.specs import ModelSpec, load_model

if TYPE_CHECKING:
    from aiworkbook.specs.protocol import ModelSpecLike

TOLERANCE = 0.10


def check_int(field: str, value: Any, low: int, allowed: str | None = None) -> None:
    """A caller's shape argument: None (the default) or an integer >= low; anything else is a SpecError."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise SpecError(field, value, allowed or Msg("allowed.int_min", low=low))


def defaults(device: str, quick: bool) -> dict[str, Any]:
    """Shape and precision when the caller gives none: fp32 AdamW on the CPU, pure bf16 AdamW on CUDA."""
    cpu = device == "cpu"
    return {
        "batch": 1,
        "seq_len": (128 if quick else 512) if cpu else (512 if quick else 2048),
        "precision": "fp32" if cpu else "bf16",
        "recipe": "fp32-adamw" if cpu else "pure-bf16",
        "steps": 2 if quick else 3,
    }


def default_budget(device: str, quick: bool) -> int:
    """90 % of free GPU memory; on the CPU half the available RAM (the host runs other work), 2 GiB when quick."""
    free = free_memory(device)[0]
    if device == "cuda":
        return int(free * 0.9)
    return int(min(free * 0.5, 2 * 2**30)) if quick else int(free * 0.5)


def _workload(**kw):
    from aiworkbook.sizing import Workload

    return Workload(mode="train", dropout=0.0, **kw)  # the plain-torch decoder has no dropout


def _estimate(spec: ModelSpec, w, device: str):
    from aiworkbook.sizing import estimate

    return estimate(spec, w, gpu=None, device=device)


def allocated_prediction(mem, device: str) -> int:
    """The itemised estimate of what the allocator holds: total less CUDA context and allocator reserve.
    On the CPU, accounting adds every category at its own largest, so the components' sum is compared."""
    if device == "cpu":
        return int(mem.summed)
    return int(mem.total - mem.cuda_context - mem.reserve)


def fit_proxy(
    spec: ModelSpec,
    w,
    device: str,
    budget: int,
    hint: str | None = None,
    *,
    allocated: bool = False,
) -> tuple[ModelSpec, Any, str]:
    """The spec itself when its estimate fits the budget, else the deepest proxy that does (fewer layers,
    then a smaller vocabulary); WouldNotFit when even one layer with a 1,024-token vocabulary does not.

    The estimate's total is compared with the budget; allocated=True compares what the allocator holds
    (total less CUDA context and reserve), for a budget that counts allocated bytes (the KV proof's)."""

    def need(e) -> int:
        return allocated_prediction(e.memory, device) if allocated else int(e.memory.total)

    est = _estimate(spec, w, device)
    if need(est) <= budget:
        return spec, est, ""
    lo, hi = 1, spec.num_layers - 1
    best = None
    while lo <= hi:  # estimates grow with layers: binary search the deepest proxy that fits
        mid = (lo + hi) // 2
        if need(_estimate(spec.scaled(num_layers=mid), w, device)) <= budget:
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    if best is not None:
        proxy = spec.scaled(num_layers=best)
        return proxy, _estimate(proxy, w, device), Msg("proxy.layers", layers=best, of=spec.num_layers)
    vocab = spec.vocab_size
    while vocab > 1024:
        vocab = max(1024, vocab // 2)
        proxy = spec.scaled(num_layers=1, vocab_size=vocab)
        e = _estimate(proxy, w, device)
        if need(e) <= budget:
            return (
                proxy,
                e,
                Msg("proxy.layers_vocab", of=spec.num_layers, vocab=vocab, vocab_of=spec.vocab_size),
            )
    check_fits(
        need(_estimate(spec.scaled(num_layers=1, vocab_size=1024), w, device)),
        device,
        what=Msg("fit.even_proxy", model=spec.name, layers=1, vocab=1024),
        budget_bytes=budget,
        hint=hint or Msg("fit.hint.smaller"),
    )
    raise AssertionError("unreachable")  # check_fits raised


@dataclass
class _Setup:
    """Everything decided before a vram run: shapes, the (proxy) model, its estimate and the prediction."""

    spec: ModelSpec
    run_spec: ModelSpec
    w: Any
    dev: str
    est: Any
    predicted: int
    steps: int
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
    batch: int | None = None,
    seq_len: int | None = None,
    precision: str | None = None,
    recipe: str | None = None,
    attention: str | None = None,
    checkpointing: str = "none",
    steps: int | None = None,
    budget_bytes: int | None = None,
    check_fit: bool = True,
    proxy: bool = True,
    optimizer_impl: str | None = None,
) -> _Setup:
    """Validate the inputs, pick the shapes and the model (or its proxy) and predict: no allocation."""
    check_int("batch", batch, 1)
    check_int("seq_len", seq_len, 1)
    check_int("steps", steps, 2, "an integer >= 2 (the first step creates the optimizer state)")
    spec = load_model(model) if isinstance(model, str) else model  # a bad name fails before any work
    choice = resolve_device(device)
    dev = choice.device
    d = defaults(dev, quick)
    flags, notes = set(choice.flags), [choice.reason]
    if precision is None and d["precision"] == "bf16" and half_dtype(dev)[1]:
        d["precision"] = "fp16"  # pure 16-bit AdamW at the dtype the GPU has
        flags.add(F.BF16_UNSUPPORTED)
        notes.append(str(half_dtype(dev)[1]))
    batch = d["batch"] if batch is None else batch
    seq_len = d["seq_len"] if seq_len is None else seq_len
    precision = d["precision"] if precision is None else precision
    if recipe is None:
        recipe = "fp32-adamw" if precision in ("fp32", "bf16-mixed", "fp16-mixed") else "pure-bf16"
    steps = d["steps"] if steps is None else steps
    if optimizer_impl is None:  # what the estimate assumes on CUDA; foreach on the CPU (see the docstring)
        optimizer_impl = "foreach" if dev in ("cuda", "cpu") else None
    w = _workload(
        optimizer_impl=optimizer_impl,
        batch=batch,
        seq_len=seq_len,
        precision=precision,
        recipe=recipe,
        attention=attention,
        checkpointing=checkpointing,
    )
    w = w.replace(attention=w.attention_for(spec))  # None: what transformers runs (sdpa, else eager)
    attention = w.attention
    if budget_bytes is None:
        budget_bytes = default_budget(dev, quick)
    inputs = {
        "model": spec.name,
        "batch": batch,
        "seq_len": seq_len,
        "precision": precision,
        "recipe": recipe,
        "attention": attention,
        "checkpointing": checkpointing,
        "steps": steps,
        "quick": quick,
        "budget_bytes": budget_bytes,
        "optimizer": "torch.optim.AdamW",
        "optimizer_impl": optimizer_impl,
        "workload": w.to_dict(),
    }
    hint = Msg("fit.hint.quick", device=dev, budget=budget_bytes) if quick else Msg("fit.hint.smaller_model")
    if check_fit and proxy:
        run_spec, est, proxy_note = fit_proxy(spec, w, dev, budget_bytes, hint)
    else:
        run_spec, est, proxy_note = spec, _estimate(spec, w, dev), ""
        if check_fit:
            check_fits(int(est.memory.total), dev, what=spec.name, budget_bytes=budget_bytes, hint=hint)
    if proxy_note:
        flags.add(F.PROXY_MODEL)
        notes.append(Msg("proxy.prediction", proxy=proxy_note))
    inputs["ran"] = run_spec.name
    inputs["params"] = run_spec.params
    predicted = allocated_prediction(est.memory, dev)
    return _Setup(spec, run_spec, w, dev, est, predicted, steps, budget_bytes, inputs, flags, notes, progress)


def plan(inputs: VramInputs) -> Plan:
    """The prediction (allocated bytes at the peak) and the shapes a vram run would use, without running.
    `fits` False (with the reason in notes) when not even a proxy fits the budget."""
    from aiworkbook.proofs.device import WouldNotFit
    from aiworkbook.proofs.registry import get

    try:
        st = _prepare(**dict(inputs))
    except WouldNotFit as exc:
        dev = resolve_device(inputs.device).device
        return Plan("vram", dev, None, Msg("vram.estimate"), "B", fits=False, notes=(exc.allowed,))
    sizes = {
        k: st.inputs[k] for k in ("ran", "params", "batch", "seq_len", "precision", "steps", "budget_bytes")
    }
    return Plan(
        "vram",
        st.dev,
        float(st.predicted),
        Msg("vram.estimate"),
        "B",
        sizes=sizes,
        fits=True,
        rough_s=get("vram").rough_s.get(st.dev),
        notes=tuple(st.notes),
    )


def run(inputs: VramInputs, *, control: Control) -> ProofResult:
    """prove_vram under `control`: progress per training step, a cancel lands within one layer."""
    with control.active():
        return prove_vram(**dict(inputs))


def _prove(st: _Setup) -> ProofResult:
    run_spec, w, dev, est, predicted = st.run_spec, st.w, st.dev, st.est, st.predicted
    flags, notes, inputs = st.flags, st.notes, st.inputs
    nvml_before = nvml_baseline() if dev == "cuda" else None
    t_start = _now()
    try:
        with interruptible(f"vram proof of {run_spec.name}", dev):
            m = _train(run_spec, w, dev, st.steps, st.progress)
    except DoesNotFit as exc:
        return ProofResult(
            proof="vram",
            device=dev,
            inputs=inputs,
            measured=None,
            unit="B",
            predicted=predicted,
            predicted_label=Msg("vram.estimate"),
            verdict="does-not-fit",
            flags=sorted(flags),
            environment=capture(dev, attention=True),
            details={"estimate": est.to_dict()},
            notes=[*notes, str(exc)],
        )
    return _result(run_spec, w, dev, est, m, predicted, flags, notes, inputs, nvml_before, t_start)


def _now() -> float:
    import time

    return time.monotonic()


def _train(spec: ModelSpec, w, dev: str, steps: int, progress: bool) -> dict[str, Any]:
    mixed = w.precision.endswith("-mixed")
    dtype = torch.float32 if (mixed or w.precision == "fp32") else TORCH_DTYPES[w.precision]
    amp_dtype = torch.bfloat16 if w.precision.startswith("bf16") else torch.float16
    place = tensor_device(dev)  # "cuda" (CPU tests: "cpu" under a fake torch.cuda)
    out: dict[str, Any] = {}
    model = opt = None
    cuda = dev == "cuda"
    peaks = _DevicePeaks()  # read on CUDA only
    try:
        with oom_guard(f"building {spec.name} ({spec.params:,} parameters) on {dev}", dev):
            if cuda:
                # cached blocks left by an earlier proof in this process would count as this one's reserve
                torch.cuda.synchronize()
                release_memory(dev)
                torch.cuda.reset_peak_memory_stats()
                peaks.start()
            model = DecoderModel(
                spec, attention=w.attention, checkpointing=w.checkpointing, device=place, dtype=dtype
            )
            impl = w.optimizer_impl  # the estimate's, explicitly (torch would pick forloop on the CPU)
            opt = torch.optim.AdamW(
                model.parameters(), lr=1e-4, foreach=impl == "foreach", fused=impl == "fused"
            )
        gen = torch.Generator(device="cpu").manual_seed(0)
        trained = progress_steps(
            range(steps),
            lambda i, _s: Msg("progress.training_step", i=i + 1, n=steps),
            desc=f"vram {spec.name}",
            show=progress,
        )
        for step in trained:
            with oom_guard(f"step {step + 1}, batch {w.batch} x {w.seq_len} tokens", dev):
                ids = torch.randint(0, spec.vocab_size, (w.batch, w.seq_len), generator=gen).to(place)
                amp = torch.autocast(place, dtype=amp_dtype) if mixed else nullcontext()
                tracker = SavedTensorTracker(model.parameters())
                with tracker, amp:
                    model.set_tracker(tracker)
                    loss = model(ids, labels=ids)
                model.set_tracker(None)
                if cuda:
                    peaks.read()  # after forward: every activation saved for backward is held
                loss.backward()
                with StepTemporaryTracker() as step_tmp:  # counts at the dispatcher: CPU and CUDA
                    opt.step()
                states = model_states(model, opt)
                if cuda:
                    peaks.read()  # after the step: gradients and optimizer state (created at step 1)
                opt.zero_grad(set_to_none=True)
                out["loss"] = float(loss.detach())
                del loss
        report(steps, steps, Msg("progress.training_done"))
        out.update(
            states=states,
            saved=tracker.by_phase(),
            saved_total=tracker.bytes(),
            step_temporaries=step_tmp.peak,
        )
        if w.checkpointing == "full":
            out["recompute_layer"] = _one_layer_saved(model, spec, w, place, amp_dtype if mixed else None)
        if cuda:
            out.update(
                peak_allocated=int(torch.cuda.max_memory_allocated()),
                peak_reserved=int(torch.cuda.max_memory_reserved()),
                **peaks.figures(),
            )
        return out
    finally:
        model = opt = None
        release_memory(dev)


def _one_layer_saved(model: DecoderModel, spec: ModelSpec, w, dev: str, amp_dtype) -> int:
    """Bytes one layer saves when recomputed in backward (full checkpointing's transient)."""
    x = torch.randn(
        w.batch,
        w.seq_len,
        spec.hidden_size,
        device=dev,
        dtype=model.embed_tokens.weight.dtype,
        requires_grad=True,
    )
    pos = torch.arange(w.seq_len, device=dev)[None].expand(w.batch, -1)
    rope = None if model.embed_positions is not None else model._rope(pos, x.dtype)
    amp = torch.autocast(dev, dtype=amp_dtype) if amp_dtype is not None else nullcontext()
    with SavedTensorTracker([*model.parameters(), x]) as tr, amp:
        y = model.layers[0](x, rope, None)
    del y
    return tr.bytes()


def _min(a, b):
    return b if a is None else min(a, b)


class _DevicePeaks:
    """Device-level readings at the proof's high-water points (after forward, after the optimizer step).

    torch.cuda.mem_get_info: free bytes; the caching allocator never returns blocks on its own, so the
    lowest free reading sees the peak reserve (plus non-torch memory). It is taken after torch created
    its context, so `device_delta_torch` excludes the context. NVML: device `used` (compared with the
    baseline taken before this process initialised CUDA, so it includes the context) and this process's
    usedGpuMemory when NVML lists our pid.
    """

    def __init__(self) -> None:
        import os

        self.pid = os.getpid()
        self.free0 = self.total = 0
        self.min_free: int | None = None
        self.nvml_used_max: int | None = None
        self.process_used_max: int | None = None
        self.nvml_uuid: str | None = None

    def start(self) -> None:
        free, total = torch.cuda.mem_get_info()
        self.free0, self.total = int(free), int(total)

    def read(self) -> None:
        torch.cuda.synchronize()
        self.min_free = _min(self.min_free, int(torch.cuda.mem_get_info()[0]))
        nv = nvml_reading(self.pid)
        if nv is not None:
            self.nvml_uuid = nv["uuid"]
            self.nvml_used_max = max(self.nvml_used_max or 0, nv["used"])
            if "process_used" in nv:
                self.process_used_max = max(self.process_used_max or 0, nv["process_used"])

    def figures(self) -> dict[str, Any]:
        low = self.free0 if self.min_free is None else self.min_free
        return {
            "device_delta_torch": int(self.free0 - low),
            "total_used_at_peak": int(self.total - low),
            "nvml_used_at_peak": self.nvml_used_max,
            "nvml_uuid": self.nvml_uuid,
            "process_used_at_peak": self.process_used_max,
        }


def device_delta(m: dict[str, Any], baseline: dict[str, Any] | None, uuid: str | None) -> tuple[int, str]:
    """The device-level figure and how it was taken.

    "nvml-baseline": NVML used at the peak minus NVML used before this process initialised CUDA
    (both NVML, same GPU by UUID): includes the CUDA context and all non-torch memory of the process.
    "mem_get_info": free before the model minus the lowest free reading (context already created: excluded).
    """
    same_gpu = baseline is not None and (uuid is None or baseline.get("uuid") in (None, uuid))
    if (
        baseline is not None
        and same_gpu
        and m.get("nvml_used_at_peak") is not None
        and m.get("nvml_uuid") == baseline.get("uuid")
    ):
        return int(m["nvml_used_at_peak"] - baseline["used"]), "nvml-baseline"
    return int(m["device_delta_torch"]), "mem_get_info"


def _result(
    spec: ModelSpecLike, w, dev, est, m, predicted, flags, notes, inputs, nvml_before, t_start
) -> ProofResult:
    mem = est.memory
    st, saved = m["states"], m["saved"]
    acts = saved.get("activations", 0) + m.get("recompute_layer", 0)
    logits = saved.get("logits", 0)
    step_tmp = m.get("step_temporaries", 0)
    accounted = st.total + acts + logits + step_tmp
    rows = [
        _row("weights", st.weights, mem.weights),
        _row("gradients", st.gradients, mem.gradients),
        _row(Msg("vram.row.optimizer"), st.optimizer, mem.optimizer + mem.master_weights),
        _row("activations", acts, mem.activations),
        _row("logits", logits, mem.logits),
        _row(Msg("vram.row.activations_logits"), acts + logits, mem.activations + mem.logits),
        _row(
            Msg("vram.row.step_temporaries", impl=w.optimizer_impl),
            step_tmp,
            optimizer_step.temporaries(spec, w, dev).bytes,
        ),
        _row(Msg("vram.row.accounted"), accounted, mem.summed if dev == "cpu" else predicted),
    ]
    details: dict[str, Any] = {
        "components": rows,
        "optimizer_state": {
            "bytes": st.optimizer,
            "tensors": st.optimizer_tensors,
            "param_tensors": st.param_tensors,
        },
        "rule_18_bytes_per_param": {
            "bytes": TRAIN_RULE_BYTES * spec.params,
            "ratio_measured_over_rule": None,
        },
        "estimate": est.to_dict(),
        "formulas": dict(mem.formulas),
        "loss": m.get("loss"),
    }
    if dev == "cuda":
        measured = m["peak_allocated"]
        details["cuda"], how = _cuda_details(m, nvml_before, mem)
        if how != "nvml-baseline":
            flags.add(F.CONTEXT_EXCLUDED)
        notes.append(Msg("vram.measured_cuda", how=how))
    else:
        measured = accounted
        flags.add(F.ACCOUNTED)
        notes.append(Msg("vram.accounted_cpu"))
        if w.checkpointing == "full":
            notes.append(Msg("vram.full_checkpointing"))
    details["rule_18_bytes_per_param"]["ratio_measured_over_rule"] = measured / (
        TRAIN_RULE_BYTES * spec.params
    )
    env = capture(dev, attention=True)
    if throttle_check(env, t_start, details):
        flags.add(F.THROTTLED)
    return ProofResult(
        proof="vram",
        device=dev,
        inputs=inputs,
        measured=float(measured),
        unit="B",
        predicted=float(predicted),
        predicted_label=Msg("vram.estimate"),
        tolerance=TOLERANCE,
        flags=sorted(flags),
        environment=env,
        details=details,
        notes=notes,
    )


def _cuda_details(m: dict[str, Any], nvml_before: Any, mem: Any) -> tuple[dict[str, Any], str]:
    """details.cuda of a CUDA run (peaks, the device-level delta and how it was read), and that how."""
    delta, how = device_delta(m, nvml_before, cuda_uuid())
    return {
        "peak_allocated": m["peak_allocated"],
        "peak_reserved": m["peak_reserved"],
        "device_delta": delta,
        "device_delta_method": how,
        "device_delta_includes_context": how == "nvml-baseline",
        "device_delta_torch": m["device_delta_torch"],
        "total_used_at_peak": m["total_used_at_peak"],
        "process_used_at_peak": m.get("process_used_at_peak"),
        "nvml_baseline_used": nvml_before["used"] if nvml_before else None,
        "predicted_total": int(mem.total),
        "predicted_cuda_context": int(mem.cuda_context),
        "predicted_reserve": int(mem.reserve),
        "ratio_delta_over_total": delta / mem.total if mem.total else None,
    }, how


def _row(name: str, measured: int, predicted: int) -> dict[str, Any]:
    """A component's row: its name (a memory component's, or a message for a sum), both figures, ratio."""
    predicted = int(predicted)
    return {
        "component": name,
        "measured": int(measured),
        "predicted": predicted,
        "ratio": measured / predicted if predicted else None,
    }


#: SDPA's backend pinned for the whole proof, never cuDNN's per-shape graphs (proofs.attention)
prove_vram = pinned()(
    then(
        _prepare,
        _prove,
        "prove_vram",
        """Train a few steps and compare peak memory with the itemised estimate (tolerance ±10 %).

    The inputs are VramInputs' (proofs/inputs.py), checked by `_prepare`; `progress`: a tqdm bar.
    check_fit=False skips the refusal (and the proxy), so an out-of-memory can happen; it is caught
    and reported as verdict "does-not-fit". Ctrl-C releases memory and re-raises KeyboardInterrupt.""",
    )
)
