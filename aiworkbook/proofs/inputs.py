"""Each proof's inputs, declared once: one pydantic model per proof, a field per input with its type,
default, bounds and one-line doc, validated when the model is built (`ProofInputs.of`): a wrong type
or a value out of its bounds is bad input naming the field and what it allows, in the caller's
language. The model is strict (an int stays an int, a number given as 4 stays 4: a result records its
inputs as given); a field that really takes several forms says so with a union.

The registry reads these (`ProofInfo.model`): the form's inputs (`ProofInfo.inputs`, what the proof
runner widget offers and a locked profile re-runs), every name a proof takes (`ProofInfo.accepts`, an
unknown one is refused as bad input before the proof is imported) and the defaults the CLI, the widget
and the GPU proof script start from. A field marked `form=False` is taken from Python and the command
line but not offered in the form. A proof still checks what depends on the node (ranks against its CPUs) or on
several inputs together; this module imports no torch, so the registry stays light.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import UnionType
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

from annotated_types import Ge, Le
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    Strict,
    ValidationError,
    create_model,
    model_validator,
)

from aiworkbook.errors import refusal
from aiworkbook.message import Msg
from aiworkbook.sizing.workload import Attention, Checkpointing, OptimizerImpl, Precision, Recipe

#: What a form control is made of: a model preset, a number, a checkbox, a choice, a list of integers, a
#: folder (never offered to a viewer), free text.
InputKind = Literal["model", "int", "float", "bool", "choice", "ints", "path", "str"]


_P = TypeVar("_P", bound="ProofInputs")


class ProofInputs(BaseModel):
    """The inputs of one proof. Subclasses declare fields with `inp(...)`; unknown names are refused."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, protected_namespaces=())
    _given: tuple[str, ...] = PrivateAttr(default=())

    def __init__(self, **data: Any) -> None:
        """Built by keyword (`HostInputs(rows=1000)`): a refusal is the same SpecError as from `of`."""
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise type(self)._refusal(exc) from None

    @classmethod
    def _refusal(cls, exc: ValidationError) -> Exception:
        """pydantic's refusal as the SpecError every face shows (errors.refusal, as for a Workload):
        the field, the value and what the field's declaration allows."""
        return refusal(exc, tuple(cls.model_fields), lambda name: allowed(cls, name))

    @classmethod
    def of(cls: type[_P], names: Mapping[str, Any]) -> _P:
        """The inputs named in `names` (a caller's keywords, a form, a locked profile), the rest at their
        declared defaults, validated: a wrong type or a value out of bounds is a SpecError naming the
        field, the value and what the field allows (errors.refusal, as for a Workload)."""
        try:
            m = cls.model_validate(dict(names))
        except ValidationError as exc:
            raise cls._refusal(exc) from None
        m._given = tuple(names)
        return m

    def given(self) -> dict[str, Any]:
        """The inputs the caller named, in the caller's order (what a result records as its inputs)."""
        order = self._given or tuple(f for f in type(self).model_fields if f in self.model_fields_set)
        return {k: getattr(self, k) for k in order}


def inp(
    default: Any,
    doc: str,
    *,
    kind: InputKind | None = None,
    low: float | None = None,
    high: float | None = None,
    form: bool = True,
    says: Msg | None = None,
) -> Any:
    """One input: its default, doc and bounds; `kind` where the type alone does not say it (a model
    preset, a folder); `form=False` for an input the proof runner's form does not offer; `says`, what
    it allows in words where its type and bounds do not say it (a union of forms)."""
    extra: dict[str, Any] = {"form": form}
    if kind is not None:
        extra["kind"] = kind
    if says is not None:
        extra["says"] = says
    return Field(default, description=doc, ge=low, le=high, json_schema_extra=extra)


def _model(default: str | None = "tiny-llama", doc: str = "model preset name or a config.json path") -> Any:
    return inp(default, doc, kind="model")


def _device() -> Any:
    return inp("auto", "where to run: CUDA when present, else the CPU")


def _quick() -> Any:
    return inp(False, "smaller sizes and fewer trials (CI, notebooks)")


def _dir() -> Any:
    return inp(
        None,
        "directory in which the proof makes its own new folder to write in (removed afterwards)",
        kind="path",
    )


def _keep(doc: str = "keep the proof's own folder (and only it) afterwards") -> Any:
    return inp(False, doc)


Device = Literal["auto", "cpu", "cuda"]
#: A number that stays as given: 4 stays the int 4 (a float field would record 4.0), 0.5 a float.
Num = int | float
#: Lists a Python caller may give as a list or a tuple (read as a list), each item strictly its type.
Ints = Annotated[list[Annotated[int, Strict()]], Strict(False)]
Nums = Annotated[list[Annotated[int, Strict()] | Annotated[float, Strict()]], Strict(False)]
Names = Annotated[list[Annotated[str, Strict()]], Strict(False)]
Format = Literal["safetensors", "torch", "dcp", "dcp-async"]


def _hidden(default: Any, doc: str, **kw: Any) -> Any:
    return inp(default, doc, form=False, **kw)


class RooflineInputs(ProofInputs):
    model: str | None = _model(None, "optional model whose decode point is placed on the roofline")
    device: Device = _device()
    quick: bool = _quick()
    threads: int | None = _hidden(None, "CPU threads (default: physical cores)", low=1)
    buffer_bytes: int | None = _hidden(None, "bandwidth buffer in bytes (default: from the caches)", low=1)
    dtypes: Names | None = _hidden(None, "matmul dtypes to sweep (default: every one the device has)")
    shapes: Ints | None = _hidden(None, "square matmul sizes to sweep")
    batch: int = _hidden(1, "the model's decode point: sequences", low=1)
    context: int = _hidden(2048, "the model's decode point: context tokens", low=1)


class VramInputs(ProofInputs):
    model: str = _model()
    device: Device = _device()
    quick: bool = _quick()
    batch: int | None = _hidden(None, "micro-batch", low=1)
    seq_len: int | None = _hidden(None, "sequence length", low=1)
    # the Workload's own choices: the proof sizes its run as a Workload (sizing/workload.py)
    precision: Precision | None = _hidden(None, "training precision (default: fp32 on the CPU, bf16 on CUDA)")
    recipe: Recipe | None = _hidden(None, "optimizer recipe (default: from the precision)")
    attention: Attention | None = _hidden(
        None, "attention implementation (default: what transformers runs for the family, sdpa or eager)"
    )
    checkpointing: Checkpointing = _hidden("none", "activation checkpointing")
    steps: int | None = _hidden(None, "training steps (the first creates the optimizer state)", low=2)
    budget_bytes: int | None = _hidden(None, "memory the run may use (default: from free memory)", low=1)
    check_fit: bool = _hidden(True, "refuse (or shrink to a proxy) a model that would not fit")
    proxy: bool = _hidden(True, "run the deepest proxy that fits when the model does not")
    optimizer_impl: OptimizerImpl | None = _hidden(None, "AdamW implementation (default: foreach)")


class KvInputs(ProofInputs):
    model: str = _model()
    device: Device = _device()
    quick: bool = _quick()
    batches: Ints | None = _hidden(None, "batch sizes of the grid")
    contexts: Ints | None = _hidden(None, "context lengths of the grid")
    new_tokens: int | None = _hidden(None, "tokens generated per point", low=1)
    budget_bytes: int | None = _hidden(None, "memory the capacity is measured in", low=1)


class ServingInputs(ProofInputs):
    """`prove serving` passes every option, None where one was not given: an input whose type has no
    None takes its declared default here, once (the proof reads its inputs as declared, with no
    fallbacks of its own); one whose None means something (no rate, no SLO, no MODEL with --target)
    keeps it."""

    model: str | None = _model()  # None (the CLI without MODEL): the embedded server's, this default
    target: str | None = inp(None, "an OpenAI-compatible base URL (default: the embedded server)")
    served_model: str | None = inp(None, "the model name the target serves")
    scheduler: Literal["static", "continuous"] = inp("continuous", "embedded server's batching")
    backend: Literal["torch", "synthetic"] = inp("torch", "embedded server's model")
    rate: Num | None = inp(None, "open loop: requests per second", low=0.0)
    concurrency: int | None = inp(None, "closed loop: requests in flight", low=1)
    sweep: Nums | None = inp(None, "loads to sweep (concurrency or rate)")
    slo_ttft_ms: Num | None = inp(None, "TTFT SLO in ms (goodput, bisection)", low=0.0)
    slo_tpot_ms: Num | None = inp(None, "TPOT SLO in ms", low=0.0)
    device: Device = _device()
    quick: bool = _quick()
    sweep_kind: Literal["concurrency", "rate"] | None = _hidden(
        None, "concurrency or rate (default: from rate and concurrency)"
    )
    requests: int | None = _hidden(None, "measured requests per load point", low=1)
    prompt_tokens: int | None = _hidden(None, "prompt length", low=1)
    output_tokens: int | None = _hidden(None, "output length", low=1)
    burstiness: Num = _hidden(1.0, "gamma shape of the arrivals (1 = Poisson)")
    compare: bool = _hidden(True, "static vs continuous batching")
    context_sweep: bool = _hidden(True, "the context-length sweep")
    request_timeout_s: Num | None = _hidden(
        None, "seconds per request (default 30 + 0.25 per output token)", low=0.0
    )
    connect_timeout_s: Num = _hidden(10.0, "seconds to connect")
    max_duration_s: Num | None = _hidden(None, "seconds for the whole run")
    warmup_s: Num = _hidden(0.0, "leave out requests scheduled in each point's first seconds")
    cooldown_s: Num = _hidden(0.0, "leave out requests ending in each point's last seconds")
    max_error_rate: Num | None = _hidden(None, "a point failing more requests than this is invalid")
    min_requests: int | None = _hidden(None, "a point completing fewer is invalid", low=1)
    shared_prefix: int = _hidden(0, "tokens every prompt starts with", low=0)
    samples: bool = _hidden(False, "keep one row per request in the details")
    api: Literal["completions", "chat"] = _hidden("completions", "completions or chat")
    server_kind: str = _hidden("auto", "the target's kind (auto: probed)")
    kv_budget_bytes: int | None = _hidden(None, "the embedded server's KV pool in bytes", low=1)
    max_batch: int = _hidden(16, "the embedded server's sequences decoded together", low=1)
    synthetic_step_s: Num = _hidden(0.01, "the synthetic backend's step time in seconds")
    tokenizer: str | None = _hidden(None, "a local tokenizer that counts output tokens without usage")
    stream: bool = _hidden(True, "stream the answers (False: one JSON answer per request)")

    @model_validator(mode="before")
    @classmethod
    def _unset_is_default(cls, data: Any) -> Any:
        """An option given as None (not set on the command line) whose type has no None: its default."""
        if not isinstance(data, dict):
            return data
        fields = cls.model_fields
        return {
            k: fields[k].default if v is None and k in fields and not _takes_none(fields[k].annotation) else v
            for k, v in data.items()
        }


def _takes_none(annotation: Any) -> bool:
    return type(None) in get_args(annotation)


def _model_opt() -> Any:
    return _model(None, "model whose weights + AdamW state are saved (else size_mb)")


def _size_mb() -> Any:
    return inp(None, "bytes to save in MiB when no model is given", low=0.001)


def _format() -> Any:
    return inp("safetensors", "format whose figure is the headline")


def _trials(doc: str) -> Any:
    return _hidden(None, doc, low=1)


class CheckpointInputs(ProofInputs):
    model: str | None = _model_opt()
    size_mb: Num | None = _size_mb()
    dir: str | None = _dir()
    format: Format = _format()
    formats: str = inp("safetensors,torch,dcp,dcp-async", "comma-separated formats to measure")
    gpus: int = inp(1024, "GPUs of the job, for the Young/Daly interval", low=1)
    keep: bool = _keep("keep the proof's own folder, holding one checkpoint for restore")
    quick: bool = _quick()
    trials: int | None = _trials("saves and restores per format")


class RestoreInputs(ProofInputs):
    model: str | None = _model_opt()
    size_mb: Num | None = _size_mb()
    dir: str | None = _dir()
    format: Format = _format()
    keep: bool = _keep()
    quick: bool = _quick()
    trials: int | None = _trials("restores")
    formats: str | None = _hidden(None, "comma-separated formats to save when there is no checkpoint")
    gpus: int = _hidden(1024, "GPUs of the job, for the Young/Daly interval", low=1)


class ColdstartInputs(ProofInputs):
    model: str = _model()
    dir: str | None = _dir()
    dtype: Literal["fp32", "bf16", "fp16"] = inp("bf16", "weights dtype")
    device: Device = _device()
    keep: bool = _keep()
    quick: bool = _quick()
    trials: int | None = _hidden(None, "cold starts", low=1, high=1000)


#: The simulated step's longest time: a proof times many steps, and a step of minutes needs no proof
#: that its input keeps up (and 1e20 ms would overflow the clock).
MAX_STEP_MS = 60_000


class DataloadInputs(ProofInputs):
    dir: str | None = _dir()
    shards: int | None = inp(None, "shard files to generate", low=1)
    samples_per_shard: int | None = inp(None, "samples per shard", low=1)
    sample_kb: Num | None = inp(None, "KiB per sample", low=0.001)
    batch: int = inp(16, "samples per batch", low=1)
    workers: str | int | Ints | None = inp(
        None, "DataLoader worker counts to sweep, comma-separated", says=Msg("allowed.counts_from", low=0)
    )
    prefetch: str | int | Ints = inp(
        "2",
        "prefetch factors to sweep (with workers), comma-separated",
        says=Msg("allowed.counts_from", low=1),
    )
    compute: Literal["sleep", "model"] = inp("sleep", "compute step: calibrated sleep or a real model step")
    step_ms: Num = inp(5.0, "sleep step in ms", low=0, high=MAX_STEP_MS)
    device: Device = _device()
    keep: bool = _keep()
    quick: bool = _quick()
    steps: int | None = _hidden(None, "training-loop steps", low=1)
    threshold: Num = _hidden(0.10, "red flag above this input-wait fraction (0 < threshold < 1)")


class HostInputs(ProofInputs):
    dir: str | None = _dir()
    rows: int | None = inp(None, "rows of generated tabular data", low=100)
    cols: int | None = inp(None, "feature columns", low=3)
    iterations: int | None = inp(None, "boosting iterations (trees)", low=1)
    threads: int | None = inp(None, "most threads to sweep (default: every CPU)", low=1)
    keep: bool = _keep()
    quick: bool = _quick()


class AllreduceInputs(ProofInputs):
    ranks: int = inp(2, "processes on this node (GPUs on CUDA)", low=1)
    sizes: str | None = inp(None, "message sizes in KiB, comma-separated")
    device: Device = _device()
    quick: bool = _quick()
    iters: int | None = _hidden(None, "timed iterations per size", low=1)
    timeout_s: Num = _hidden(600.0, "seconds before the ranks are stopped", low=0.001)


def listed(proof: str, fields: list[tuple[str, Any, str]]) -> type[ProofInputs]:
    """The model of a proof that lists its inputs instead of declaring a model (a test's fake proof):
    one field per (name, default, doc), of any type, checked by the proof."""
    made = {name: (Any, inp(default, doc)) for name, default, doc in fields}
    return create_model(f"{proof}-inputs", __base__=ProofInputs, **made)  # type: ignore[call-overload, no-any-return]


def _plain(annotation: Any) -> Any:
    """`X` of `X | None` or of `Annotated[X, ...]`; a number of `int | float` (`Num`); else the first
    form of a union (the one a form offers); any other type as it is."""
    if get_origin(annotation) is Annotated:
        return _plain(get_args(annotation)[0])
    if get_origin(annotation) in (Union, UnionType):
        forms = [_plain(a) for a in get_args(annotation) if a is not type(None)]
        return float if float in forms else forms[0]
    return annotation


def _kind(annotation: Any) -> InputKind:
    """The form kind a field's type says: a Literal is a choice, a list of ints is "ints"."""
    annotation = _plain(annotation)
    origin = get_origin(annotation)
    if origin is Literal:
        return "choice"
    if origin is list:
        return "ints"
    return {bool: "bool", int: "int", float: "float"}.get(annotation, "str")  # type: ignore[return-value]


def declared(model: type[ProofInputs]) -> list[dict[str, Any]]:
    """Every input of `model` in declaration order: name, kind, doc, default, choices, low, high, form."""
    out = []
    for name, f in model.model_fields.items():
        extra = f.json_schema_extra if isinstance(f.json_schema_extra, dict) else {}
        ann = f.annotation
        plain = _plain(ann)
        choices = get_args(plain) if get_origin(plain) is Literal else ()
        low = next((m.ge for m in f.metadata if isinstance(m, Ge)), None)
        high = next((m.le for m in f.metadata if isinstance(m, Le)), None)
        out.append(
            {
                "name": name,
                "kind": extra.get("kind") or _kind(ann),
                "doc": f.description or "",
                "default": f.default,
                "choices": tuple(str(c) for c in choices),
                "low": low,
                "high": high,
                "form": bool(extra.get("form", True)),
            }
        )
    return out


def defaults(model: type[ProofInputs]) -> dict[str, Any]:
    """Each input's declared default, by name (the CLI's and the GPU proof script's starting values)."""
    return {name: f.default for name, f in model.model_fields.items()}


def allowed(model: type[ProofInputs], name: str) -> str:
    """What input `name` of `model` allows, in words (a message, said in the reader's language): from
    its type and bounds, or the message its declaration names (`says`) where a union takes several forms."""
    f = model.model_fields[name]
    d = next(x for x in declared(model) if x["name"] == name)
    extra = f.json_schema_extra if isinstance(f.json_schema_extra, dict) else {}
    low, high = d["low"], d["high"]
    if isinstance(extra.get("says"), Msg):
        text: str = extra["says"]  # type: ignore[assignment]
    elif d["choices"]:
        text = ", ".join(d["choices"])
    else:
        text = _words(_plain(f.annotation), low, high)
    optional = type(None) in get_args(f.annotation)
    return Msg("allowed.empty_or", kind=text) if optional else text


def _words(plain: Any, low: float | None, high: float | None) -> str:
    """A type and its bounds in words: an integer or a number in a range, a switch, a list, text."""
    if plain is bool:
        return Msg("allowed.true_false")
    if plain is int:
        if low is not None and high is not None:
            return Msg("allowed.int_range", low=low, high=high)
        return Msg("allowed.int_min", low=low) if low is not None else Msg("allowed.int_any")
    if plain is float:
        if low is not None and high is not None:
            return Msg("allowed.number_range", low=low, high=high)
        return Msg("allowed.number_min", low=low) if low is not None else Msg("allowed.number_any")
    if get_origin(plain) is list:
        item = _plain(get_args(plain)[0])
        if item is str:
            return Msg("allowed.names")
        return Msg("allowed.int_list") if item is int else Msg("allowed.number_list")
    return Msg("allowed.text")
