"""The one registry of proofs: what each proves, its inputs, where it runs, how long it takes, and
the two calls a widget needs, `plan` (the prediction and the sizes, without running) and `run`
(with progress, cancel and the one-proof-at-a-time lock).

Each proof module offers, for its one input model (proofs/inputs.py, `ProofInfo.model`),

    plan(inputs: TheModel) -> Plan                              # no allocation, no timing; fast
    run(inputs: TheModel, *, control: Control) -> ProofResult   # reports through proofs.progress

and is named here by its import path, so `import aiworkbook.proofs.registry` loads no torch. `plan`
and `run` here are the edge: they take the inputs by name (or the model built already), build the
model once (an unknown name is bad input, naming the ones the proof takes) and hand it on.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any, Literal

from aiworkbook.errors import SpecError
from aiworkbook.proofs import inputs as I
from aiworkbook.proofs.control import BYTES, Cancelled, Control, ProgressFn, counts, exclusive
from aiworkbook.proofs.inputs import InputKind
from aiworkbook.specs.node import PATTERNS

#: The one pattern -> proofs table: the proofs each pattern runs, in the order it runs them.
#: aiworkbook.patterns (Pattern.proofs) and ProofInfo.patterns both read it. A multi-node answer adds
#: allreduce to any pattern but classical ML (aiworkbook/patterns/questionnaire.py).
PATTERN_PROOFS: dict[str, tuple[str, ...]] = {
    "classical-ml-cpu": ("host", "roofline", "dataload"),
    "dl-training": ("roofline", "vram", "dataload", "checkpoint", "restore", "allreduce"),
    "llm-inference": ("roofline", "kv", "coldstart", "serving"),
    "hybrid": ("roofline", "vram", "checkpoint", "kv", "coldstart", "serving", "restore"),
}

#: The chart a proof's result is drawn as: its estimate beside the measurement, the roofline of
#: details["chart"], or the latency sweep of details["sweep"] (with details["knee"]).
ChartKind = Literal["estimate", "roofline", "latency"]


@dataclass(frozen=True)
class InputSpec:
    """One input a proof takes: its kind, default, bounds or choices, and a one-line doc (for forms)."""

    name: str
    kind: InputKind
    doc: str
    default: Any = None
    choices: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "doc": self.doc,
            "default": self.default,
            "choices": list(self.choices),
            "low": self.low,
            "high": self.high,
        }


@dataclass(frozen=True)
class ProofInfo:
    """A registered proof. `model` declares its inputs (proofs/inputs.py); `inputs` are those the form
    offers, read from it (a proof without a model, a test's fake, lists them itself). `rough_s` is a
    rough wall time at --quick sizes, per device; `chart` the kind of chart its result is drawn as (a
    widget picks the chart by it, never by probing details)."""

    name: str
    title: str
    proves: str
    module: str
    inputs: tuple[InputSpec, ...] = ()
    cpu: bool = True
    gpu: bool = True
    rough_s: dict[str, float] = field(default_factory=dict)
    chart: ChartKind = "estimate"
    model: type[I.ProofInputs] | None = None

    def __post_init__(self) -> None:
        if self.model is not None and not self.inputs:
            form = [d for d in I.declared(self.model) if d.pop("form")]
            object.__setattr__(self, "inputs", tuple(InputSpec(**d) for d in form))
        elif self.model is None:  # a proof that lists its inputs (a test's fake): its model, from them
            fields = [(i.name, i.default, i.doc) for i in self.inputs]
            object.__setattr__(self, "model", I.listed(self.name, fields))

    @property
    def input_model(self) -> type[I.ProofInputs]:
        """The model of the proof's inputs (declared, or made from the inputs it lists)."""
        assert self.model is not None  # set in __post_init__
        return self.model

    @property
    def accepts(self) -> tuple[str, ...]:
        """Every input name the proof takes: its model's fields."""
        return tuple(self.input_model.model_fields)

    def build(self, given: I.ProofInputs | None, names: dict[str, Any]) -> I.ProofInputs:
        """The proof's input model, built once: `given` as it is, or else from `names` (checked first:
        an unknown or misspelt name is refused, naming those the proof takes)."""
        if given is None:
            self.check_names(names)
            return self.input_model.of(names)
        if names:
            raise TypeError(f"{self.name}: pass its inputs as its model or by name, not both")
        if not isinstance(given, self.input_model):
            raise SpecError(f"{self.name} inputs", type(given).__name__, self.input_model.__name__)
        return given

    def check_names(self, inputs: dict[str, Any]) -> None:
        """Refuse an input the proof does not take (a misspelt `batchsize=`), naming those it does."""
        for key in inputs:
            if key not in self.accepts:
                raise SpecError(f"{self.name} input", key, ", ".join(self.accepts))

    @property
    def patterns(self) -> tuple[str, ...]:
        """The patterns that run this proof, in specs.PATTERNS order (derived from PATTERN_PROOFS)."""
        return tuple(p for p in PATTERNS if self.name in PATTERN_PROOFS[p])

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "proves": self.proves,
            "inputs": [i.to_dict() for i in self.inputs],
            "cpu": self.cpu,
            "gpu": self.gpu,
            "rough_s": dict(self.rough_s),
            "patterns": list(self.patterns),
        }


@dataclass(frozen=True)
class Plan:
    """What a proof will do and predict, before it runs: the estimate under test, the sizes it will
    run, where, whether it fits, and roughly how long it takes."""

    proof: str
    device: str
    predicted: float | None
    predicted_label: str
    unit: str
    sizes: dict[str, Any] = field(default_factory=dict)
    fits: bool | None = None
    rough_s: float | None = None
    notes: tuple[str, ...] = ()

    def sizes_text(self, lang: str = "en") -> str:
        """The sizes for a person: each key in words, each figure in its unit, read from the key's
        suffix (`_bytes` binary bytes, `_bps` a rate, `_s` seconds), lists joined; never a dict."""
        from aiworkbook.units import fmt_value

        units = (("_bytes", "B"), ("_bps", "B/s"), ("_s", "s"))
        parts = []
        for key, value in self.sizes.items():
            unit = next((u for suffix, u in units if key.endswith(suffix)), "")
            name = key.removesuffix(next((s for s, u in units if u == unit), "")) if unit else key
            if isinstance(value, list | tuple):
                shown = ", ".join(fmt_value(v, unit, lang) for v in value)
            else:
                shown = fmt_value(value, unit, lang)
            parts.append(f"{name.replace('_', ' ')} {shown}")
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "proof": self.proof,
            "device": self.device,
            "predicted": self.predicted,
            "predicted_label": self.predicted_label,
            "unit": self.unit,
            "sizes": dict(self.sizes),
            "fits": self.fits,
            "rough_s": self.rough_s,
            "notes": list(self.notes),
        }


#: the device input as the proofs declare it (a test's fake proof takes it too)
_DEVICE = next(i for i in ProofInfo("_", "", "", "", model=I.VramInputs).inputs if i.name == "device")

_REGISTRY: dict[str, ProofInfo] = {}


def register(info: ProofInfo) -> ProofInfo:
    """Add (or replace) a proof; returns it so modules can keep a reference."""
    _REGISTRY[info.name] = info
    return info


for _info in (
    ProofInfo(
        "roofline",
        "Device roofline",
        "memory bandwidth and matmul rate per dtype against the datasheet; a calibrated node profile",
        "aiworkbook.proofs.roofline",
        model=I.RooflineInputs,
        rough_s={"cpu": 20.0, "cuda": 30.0},
        chart="roofline",
    ),
    ProofInfo(
        "vram",
        "Peak VRAM of a training step",
        "peak memory of real AdamW steps against the itemised training estimate",
        "aiworkbook.proofs.vram",
        model=I.VramInputs,
        rough_s={"cpu": 10.0, "cuda": 20.0},
    ),
    ProofInfo(
        "kv",
        "KV-cache bytes and capacity",
        "KV-cache bytes over a batch x context grid and the capacity in a memory budget",
        "aiworkbook.proofs.kv",
        model=I.KvInputs,
        rough_s={"cpu": 15.0, "cuda": 20.0},
    ),
    ProofInfo(
        "serving",
        "Serving latency under load",
        "TTFT/TPOT/ITL percentiles vs load with the knee, goodput under an SLO, static vs continuous "
        "batching, and the KV pool's peak and run-out context against the estimate",
        "aiworkbook.serving.proof",
        model=I.ServingInputs,
        rough_s={"cpu": 25.0, "cuda": 40.0},
        chart="latency",
    ),
    ProofInfo(
        "checkpoint",
        "Checkpoint write",
        "durable save of model + optimizer state (torch.save, safetensors, DCP sync/async) against plain "
        "sequential I/O and the assumed storage speed; the measured write time in Young/Daly",
        "aiworkbook.proofs.checkpoint",
        model=I.CheckpointInputs,
        rough_s={"cpu": 10.0, "cuda": 10.0},
    ),
    ProofInfo(
        "restore",
        "Checkpoint restore",
        "cold-cache restore of model + optimizer state, every tensor checked against the saved one",
        "aiworkbook.proofs.restore",
        model=I.RestoreInputs,
        rough_s={"cpu": 5.0, "cuda": 5.0},
    ),
    ProofInfo(
        "coldstart",
        "Cold start",
        "checkpoint on disk to the first forward pass on the device (load, build, transfer, warm-up)",
        "aiworkbook.proofs.coldstart",
        model=I.ColdstartInputs,
        rough_s={"cpu": 5.0, "cuda": 10.0},
    ),
    ProofInfo(
        "dataload",
        "Dataset read and input wait",
        "DataLoader throughput cold and warm (workers, pin_memory, prefetch) and the input-wait fraction of "
        "a training loop against the 10 % red flag, beside synthetic on-device data",
        "aiworkbook.proofs.dataload",
        model=I.DataloadInputs,
        rough_s={"cpu": 10.0, "cuda": 10.0},
    ),
    ProofInfo(
        "host",
        "CPU node: fit, RAM headroom, Parquet",
        "host memory bandwidth, a HistGradientBoosting fit's rows/s over threads 1..N, peak RSS beside the "
        "data's in-memory size, and Parquet reads cold and warm",
        "aiworkbook.proofs.hostnode",
        model=I.HostInputs,
        cpu=True,
        gpu=False,
        rough_s={"cpu": 10.0},
    ),
    ProofInfo(
        "allreduce",
        "All-reduce bus bandwidth",
        "all-reduce under torchrun (gloo on CPU, NCCL on GPU): algbw and busbw over a size sweep, a "
        "correctness check and per-rank step times for stragglers",
        "aiworkbook.proofs.allreduce",
        model=I.AllreduceInputs,
        rough_s={"cpu": 15.0, "cuda": 20.0},
    ),
):
    register(_info)


def proofs() -> list[ProofInfo]:
    """Every registered proof, in registration order."""
    return list(_REGISTRY.values())


def names() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def chart_kind(name: str) -> ChartKind:
    """The chart a result of proof `name` is drawn as; "estimate" for a proof this install does not
    know (a profile locked elsewhere)."""
    return _REGISTRY[name].chart if name in _REGISTRY else "estimate"


def get(name: str) -> ProofInfo:
    """The proof called `name`; a SpecError lists the known ones."""
    if name not in _REGISTRY:
        raise SpecError("proof", name, ", ".join(_REGISTRY))
    return _REGISTRY[name]


def _module(info: ProofInfo):
    return import_module(info.module)


def plan(name: str, given: I.ProofInputs | None = None, /, **inputs: Any) -> Plan:
    """The proof's prediction and sizes for these inputs (by name, or its model built already),
    without running it."""
    info = get(name)
    return _module(info).plan(info.build(given, inputs))  # type: ignore[no-any-return]


def interrupted_result(
    info: ProofInfo, inputs: dict[str, Any], exc: Cancelled, control: Control, p: Plan | None
):
    """A ProofResult with verdict 'interrupted' for a proof that did not build one itself."""
    from aiworkbook.proofs.result import ProofResult

    so_far = counts(control.done, control.total, control.unit) + ("" if control.unit == BYTES else " steps")
    return ProofResult(
        proof=info.name,
        device=p.device if p is not None else str(inputs.get("device", "auto")),
        inputs={k: v for k, v in inputs.items() if isinstance(v, str | int | float | bool | type(None))},
        measured=None,
        unit=p.unit if p is not None else "",
        predicted=p.predicted if p is not None else None,
        predicted_label=p.predicted_label if p is not None else "",
        verdict="interrupted",
        notes=[f"{exc} after {control.elapsed():.1f} s ({so_far} done); memory released"],
    )


def run(
    name: str,
    given: I.ProofInputs | None = None,
    /,
    *,
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
    **inputs: Any,
):
    """Run the proof `name` with these inputs (by name, or its model built already) under the one
    proof lock (ProofBusy when another runs), reporting progress(done, total, message) and honouring
    `cancel` (verdict 'interrupted'). Ctrl-C still raises KeyboardInterrupt. The heap that existed
    before is frozen out of the garbage collector for the proof (proofs.gcpause); the pauses left are
    in `environment["gc"]`."""
    info = get(name)
    model = info.build(given, inputs)
    mod = _module(info)
    control = Control(progress=progress, cancel=cancel)
    from aiworkbook.proofs.gcpause import quiet_gc

    with exclusive(name):
        try:
            with quiet_gc() as (pauses, frozen):
                result = mod.run(model, control=control)
            result.environment["gc"] = pauses.summary(frozen)
            note = pauses.note()
            if note:
                result.notes.append(note)
            return result
        except Cancelled as exc:
            exc.__traceback__ = None  # drop the frames (and their tensors) before releasing memory
            from aiworkbook.proofs.device import release_memory

            release_memory("cuda" if _cuda_loaded() else "cpu")
            try:
                p = mod.plan(model)
            except Exception:
                p = None
            return interrupted_result(info, model.given(), exc, control, p)


def _cuda_loaded() -> bool:
    import sys

    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized())
    except Exception:
        return False
