"""Workload: what is being run (mode, shape, precision, recipe, sharding), validated at the boundary.

A Workload is independent of the model; `check_against(spec)` adds the checks that need one
(tensor parallel dividing the heads, LoRA targets that exist). Every bad value raises a SpecError
(a ValueError) naming the field, the value and what is allowed.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from functools import cache
from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin

from pydantic import ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic.dataclasses import dataclass

from aiworkbook.errors import SpecError, refusal
from aiworkbook.message import Msg
from aiworkbook.units import KV_DTYPES

if TYPE_CHECKING:
    from aiworkbook.specs.protocol import ModelSpecLike

Mode = Literal["train", "lora", "qlora", "infer"]
Precision = Literal["fp32", "bf16", "fp16", "bf16-mixed", "fp16-mixed"]
Recipe = Literal[
    "fp32-adamw",
    "zero-mixed",
    "megatron-bf16",
    "pure-bf16",
    "adamw-8bit",
    "sgd-momentum",
    "adafactor",
    "blockwise-adamw-8bit",
    "paged-adamw-8bit",
]
Attention = Literal["eager", "sdpa", "flash"]
Checkpointing = Literal["none", "selective", "full"]
WeightDtype = Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4", "nf4"]
KVDtype = Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4"]
Engine = Literal["hf", "vllm", "trtllm"]
OptimizerImpl = Literal["foreach", "fused", "forloop"]
LoraModule = Literal["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
#: What `lora_targets` holds: modules, or PEFT's "all-linear" alone.
LoraTarget = Literal[LoraModule, "all-linear"]

#: One list of allowed values per option, shared by the CLI's help and parser and the library.
MODES: tuple[str, ...] = get_args(Mode)
PRECISIONS: tuple[str, ...] = get_args(Precision)
RECIPE_NAMES: tuple[str, ...] = get_args(Recipe)
ATTENTIONS: tuple[str, ...] = get_args(Attention)
CHECKPOINTING: tuple[str, ...] = get_args(Checkpointing)
WEIGHT_DTYPES: tuple[str, ...] = get_args(WeightDtype)
ENGINES: tuple[str, ...] = get_args(Engine)
OPTIMIZER_IMPLS: tuple[str, ...] = get_args(OptimizerImpl)
LORA_MODULES: tuple[str, ...] = get_args(LoraModule)
#: PEFT's `target_modules="all-linear"`: every linear of the blocks (attention and MLP), not the LM head.
ALL_LINEAR = "all-linear"
assert get_args(KVDtype) == KV_DTYPES
#: Recipes that keep 16-bit weights: they cannot run at fp32 precision.
SIXTEEN_BIT_RECIPES = ("zero-mixed", "megatron-bf16", "pure-bf16", "adamw-8bit")

#: Upper bounds of the sizes, so that no product the sizing forms (batch x seq^2 x heads for eager
#: attention scores, tokens x vocabulary for logits) can leave exact float64/int64 territory: a
#: 16M-token sequence, a million sequences or GPUs are far past any real run.
MAX_TOKENS = 1 << 24
MAX_BATCH = 1 << 20
MAX_GPUS = 1 << 20
MAX_TP = 1 << 10


def default_recipe(precision: str) -> str:
    """The recipe a precision implies when none is named: fp32-adamw at fp32 (16-bit recipes cannot run
    there), megatron-bf16 otherwise."""
    return "fp32-adamw" if precision == "fp32" else "megatron-bf16"


def _field(default: Any, doc: str, *, modes: tuple[str, ...] | None = None, **rule: Any) -> Any:
    """One field's whole declaration: its default, one-line doc, bounds (ge/gt/le/lt) and the modes it
    applies to (None: every mode), read by pydantic, `Workload.fields()` and the mode rule alike."""
    extra: dict[str, Any] = {"modes": list(modes or MODES), **rule.pop("extra", {})}
    return Field(default=default, description=doc, json_schema_extra=extra, **rule)


TRAINING_MODES: tuple[str, ...] = ("train", "lora", "qlora")
ADAPTER_MODES: tuple[str, ...] = ("lora", "qlora")
INFER: tuple[str, ...] = ("infer",)


@dataclass(frozen=True, config=ConfigDict(strict=True, extra="forbid"))
class Workload:
    """Mode, shape, precision, recipe and sharding of one run (train, LoRA, QLoRA or inference).

    A pydantic dataclass: each field declares its type, bounds, doc and the modes it applies to once
    (`Workload.fields()`, for forms; `json_schema()`); `allowed(name, ...)` lists the values a field may
    still take given the others (and a model). A field set away from its default in a mode it does not
    apply to is refused, whichever face set it."""

    mode: Mode = _field("train", "train, LoRA or QLoRA fine-tuning, or inference")
    #: inference serves `concurrency` sequences; a batch given there is taken as the sequences served
    #: (`decoding`, the CLI's --batch), so it is ignored there rather than refused
    batch: int = _field(
        1,
        "micro-batch per GPU (training)",
        modes=TRAINING_MODES,
        ge=1,
        le=MAX_BATCH,
        extra={"outside_modes": "ignored"},
    )
    seq_len: int = _field(2048, "tokens per sequence (the prompt for inference)", ge=1, le=MAX_TOKENS)
    new_tokens: int = _field(0, "generated tokens (inference)", modes=INFER, ge=0, le=MAX_TOKENS)
    precision: Precision = _field("bf16-mixed", "compute precision (mixed: AMP)")
    #: None given: megatron-bf16, or fp32-adamw at fp32 precision (default_recipe, `_recipe` below)
    recipe: Recipe = _field(
        None,
        "optimizer and weight copies (None: follows the precision)",
        modes=TRAINING_MODES,
        validate_default=True,
    )
    #: None: what transformers runs for the model's family (sdpa, or eager where the family offers no
    #: sdpa: Mechanisms.attentions); `attention_for(spec)` resolves it
    attention: Attention | None = _field(
        None, "eager keeps the s^2 scores; sdpa/flash do not (None: transformers' default for the family)"
    )
    checkpointing: Checkpointing = _field("none", "activation recomputation", modes=TRAINING_MODES)
    chunked_loss: bool = _field(
        False, "fused linear + cross-entropy over 1,024-token chunks (no full logits)", modes=TRAINING_MODES
    )
    loss_chunks: int | None = _field(
        None,
        "head output split in N chunks, each up-cast to fp32 alone (torchtune: 8); None: unchunked",
        modes=TRAINING_MODES,
        ge=1,
        le=MAX_TOKENS,
    )
    compile: bool = _field(
        False,
        "torch.compile: fused element-wise chains (norms, SwiGLU) keep no intermediates",
        modes=TRAINING_MODES,
    )
    compile_loss: bool = _field(
        True,
        "with compile, the loss is compiled too (False: only the layers, the loss runs eager)",
        modes=TRAINING_MODES,
    )
    kv_repeat: bool = _field(
        False,
        "k and v copied to every query head before attention, which saves the copies",
        modes=TRAINING_MODES,
    )
    optimizer_in_backward: bool = _field(
        False, "optimizer step per parameter in backward: one gradient alive at a time", modes=TRAINING_MODES
    )
    optimizer_impl: OptimizerImpl | None = _field(
        None,
        "torch.optim implementation (None: the device's default, foreach on CUDA; sizing/optimizer_step.py)",
        modes=TRAINING_MODES,
    )
    l2_weight_decay: bool = _field(
        False, "Adam/SGD weight_decay (L2 on the gradient; not AdamW's decoupled decay)", modes=TRAINING_MODES
    )
    maximize: bool = _field(False, "the optimizer's maximize (negated gradients)", modes=TRAINING_MODES)
    activation_offload: bool = _field(
        False, "saved activations to host memory; the GPU keeps the layers in flight", modes=TRAINING_MODES
    )
    fsdp_cpu_offload: bool = _field(
        False,
        "FSDP CPU offload: weights, grads and optimizer on the host; GPU holds gathered units",
        modes=TRAINING_MODES,
    )
    dp: int = _field(1, "data-parallel replicas (training)", modes=TRAINING_MODES, ge=1, le=MAX_GPUS)
    zero: int = _field(0, "ZeRO stage 0-3 (FSDP full shard = 3)", modes=TRAINING_MODES, ge=0, le=3)
    tp: int = _field(1, "tensor-parallel size (divides the heads)", ge=1, le=MAX_TP)
    lora_rank: int = _field(16, "LoRA rank", modes=ADAPTER_MODES, ge=1, le=1 << 16)
    lora_targets: tuple[LoraTarget, ...] = _field(
        ("q_proj", "k_proj", "v_proj", "o_proj"),
        "modules LoRA adapts (or all-linear: every block linear, not the head)",
        modes=ADAPTER_MODES,
    )
    #: QLoRA's base is NF4 whatever the field says (sizing/states.py `frozen_base_bytes`), so a form
    #: offers nf4 alone there: "bf16" would misstate the weights
    weights_dtype: WeightDtype = _field(
        "bf16",
        "stored weights (quantised: inference)",
        extra={
            "choices_in_mode": {
                "train": ["fp32", "bf16", "fp16"],
                "lora": ["fp32", "bf16", "fp16"],
                "qlora": ["nf4"],
            }
        },
    )
    kv_dtype: KVDtype = _field("bf16", "KV-cache element type", modes=INFER)
    concurrency: int = _field(1, "sequences served at once (inference)", modes=INFER, ge=1, le=MAX_BATCH)
    context: int | None = _field(
        None, "KV tokens per sequence (None: seq_len + new_tokens)", modes=INFER, ge=1, le=2 * MAX_TOKENS
    )
    block_size: int = _field(16, "paged-KV block, tokens", modes=INFER, ge=1, le=1 << 16)
    engine: Engine = _field("hf", "serving engine whose memory rules apply", modes=INFER)
    gpu_memory_utilization: float = _field(0.9, "share of GPU memory the workload may use", gt=0.0, le=1.0)
    dropout: float | None = _field(
        None, "None: the family's default (GPT-2/BERT 0.1, Llama 0)", modes=TRAINING_MODES, ge=0.0, lt=1.0
    )
    #: Prompt tokens one prefill forward processes (vLLM max_num_batched_tokens, TensorRT-LLM
    #: max_num_tokens). None: the engine's default (vLLM/TensorRT-LLM 8192; hf: every prompt at once).
    max_batched_tokens: int | None = _field(
        None,
        "prompt tokens per prefill forward (None: the engine's)",
        modes=INFER,
        ge=1,
        le=MAX_BATCH * MAX_TOKENS,
    )

    @model_validator(mode="wrap")
    @classmethod
    def _refused(cls, data: Any, handler: Any) -> Any:
        """pydantic's refusal as the SpecError every face shows, also where a Workload is read inside
        another model (a profile's workloads): the field, the value and what its declaration allows."""
        try:
            return handler(data)
        except ValidationError as exc:
            raise _refusal(exc) from None

    @field_validator("recipe", mode="before")
    @classmethod
    def _recipe(cls, value: Any, info: ValidationInfo) -> Any:
        """None: the recipe the precision implies (default_recipe)."""
        return default_recipe(str(info.data.get("precision", "bf16-mixed"))) if value is None else value

    @field_validator("lora_targets", mode="before")
    @classmethod
    def _targets(cls, value: Any) -> Any:
        """One module as a string, or a list, reads as a tuple; then each is checked once."""
        targets = (
            (value,) if isinstance(value, str) else tuple(value) if isinstance(value, list | tuple) else value
        )
        if isinstance(targets, tuple):
            if not targets:
                raise SpecError(
                    "lora_targets", targets, Msg("allowed.lora_targets_some", modules=", ".join(LORA_MODULES))
                )
            if ALL_LINEAR in targets and len(targets) > 1:
                raise SpecError("lora_targets", targets, Msg("allowed.lora_all_alone", all=ALL_LINEAR))
            if len(set(targets)) != len(targets) and set(targets) <= {*LORA_MODULES, ALL_LINEAR}:
                raise SpecError("lora_targets", targets, Msg("allowed.lora_once"))
        return targets

    def __post_init__(self) -> None:
        self._check_combinations()
        self._check_modes()

    def _check_modes(self) -> None:
        """A field away from its default in a mode it does not apply to is refused (naming the modes
        it applies to), unless it declares itself ignored there."""
        for name, info in _FIELDS().items():
            extra = info.json_schema_extra
            assert isinstance(extra, dict)
            modes = list(extra["modes"])
            if self.mode in modes or extra.get("outside_modes") == "ignored":
                continue
            value = getattr(self, name)
            default = default_recipe(self.precision) if name == "recipe" else info.default
            if value != default:
                shown, mode = _shown(default), self.mode
                allowed = (
                    Msg(
                        "allowed.default_unless_modes",
                        default=shown,
                        some=", ".join(modes[:-1]),
                        last=modes[-1],
                        mode=mode,
                    )
                    if len(modes) > 1
                    else Msg("allowed.default_unless_mode", default=shown, where=modes[0], mode=mode)
                )
                raise SpecError(name, value, allowed)

    def _check_combinations(self) -> None:
        if self.mode == "qlora" and self.precision == "fp32":
            raise SpecError("precision", self.precision, Msg("allowed.qlora_precision"))
        if self.mode in ("train", "lora") and self.precision == "fp32" and self.recipe in SIXTEEN_BIT_RECIPES:
            raise SpecError(
                "recipe",
                self.recipe,
                Msg("allowed.fp32_recipe"),
            )
        if self.zero and self.mode == "infer":
            raise SpecError("zero", self.zero, Msg("allowed.zero_infer"))
        if self.zero and self.dp == 1:
            raise SpecError("zero", self.zero, Msg("allowed.zero_dp1"))
        if self.mode == "infer" and self.dp > 1:
            raise SpecError(
                "dp",
                self.dp,
                Msg("allowed.dp_infer"),
            )
        if self.mode in ("train", "lora") and self.weights_dtype not in ("fp32", "bf16", "fp16"):
            raise SpecError(
                "weights_dtype",
                self.weights_dtype,
                Msg("allowed.train_weights", mode=self.mode),
            )
        if self.mode == "qlora" and self.weights_dtype not in ("bf16", "nf4"):
            raise SpecError("weights_dtype", self.weights_dtype, Msg("allowed.qlora_weights"))
        self._check_finetune_options()
        if self.context is not None and self.context < self.seq_len + self.new_tokens:
            raise SpecError(
                "context",
                self.context,
                Msg("allowed.context_room", seq=self.seq_len, new=self.new_tokens),
            )

    def _check_finetune_options(self) -> None:
        if self.chunked_loss and self.loss_chunks is not None:
            raise SpecError("loss_chunks", self.loss_chunks, Msg("allowed.loss_chunks_chunked"))
        for name in (
            "loss_chunks",
            "kv_repeat",
            "optimizer_in_backward",
            "activation_offload",
            "fsdp_cpu_offload",
            "optimizer_impl",
            "l2_weight_decay",
            "maximize",
        ):
            if not self.training and getattr(self, name) not in (None, False):
                raise SpecError(name, getattr(self, name), Msg("allowed.train_only"))
        if self.fsdp_cpu_offload and self.dp > 1 and self.zero != 3:
            raise SpecError("zero", self.zero, Msg("allowed.zero3_offload"))
        if self.fsdp_cpu_offload and self.optimizer_in_backward:
            raise SpecError("optimizer_in_backward", True, Msg("allowed.oib_offload"))
        impl = self.optimizer_impl
        if impl not in (None, "fused") and self.recipe in (
            "adamw-8bit",
            "blockwise-adamw-8bit",
            "paged-adamw-8bit",
        ):
            raise SpecError("optimizer_impl", impl, Msg("allowed.impl_8bit", recipe=self.recipe))
        if impl == "fused" and self.recipe == "adafactor":
            raise SpecError("optimizer_impl", impl, Msg("allowed.impl_adafactor"))
        if self.optimizer_in_backward and self.zero:
            raise SpecError("optimizer_in_backward", True, Msg("allowed.oib_zero"))

    # ---- derived ------------------------------------------------------------------------
    @property
    def training(self) -> bool:
        return self.mode != "infer"

    @property
    def context_len(self) -> int:
        """Tokens each served sequence holds in its KV cache: `context`, else prompt + new tokens."""
        return self.context if self.context is not None else self.seq_len + self.new_tokens

    @property
    def paged_optimizer(self) -> bool:
        """bitsandbytes' paged optimizers keep their state in CUDA unified memory, outside PyTorch's
        allocator: the driver pages it to the host when the GPU is full."""
        return self.recipe == "paged-adamw-8bit"

    def lora_modules(self, spec: ModelSpecLike) -> tuple[str, ...]:
        """The adapted modules: the list as given, or every block linear the model has for all-linear
        (gate_proj only for a gated MLP)."""
        if self.lora_targets != (ALL_LINEAR,):
            return tuple(self.lora_targets)
        return tuple(m for m in LORA_MODULES if m != "gate_proj" or spec.gated_mlp)

    @property
    def loss_compiled(self) -> bool:
        """The loss runs under torch.compile: `compile` and `compile_loss`. torchtune's full-finetune
        recipe at the 3B README's commit calls `training.compile_loss(self._loss_fn)` and drops what it
        returns: a chunked loss is compiled in place, an unchunked `nn.CrossEntropyLoss` is wrapped by
        `torch.compile(loss)` and the wrapper thrown away, so it runs eager (`compile_loss=False`)."""
        return self.compile and self.compile_loss

    def attention_for(self, spec: ModelSpecLike) -> str:
        """The attention implementation that runs: the one asked for, else the one transformers picks
        for the family (sdpa where it offers it, else eager: Mechanisms.attentions)."""
        from aiworkbook.specs.mechanisms import default_attention
        from aiworkbook.specs.mechanisms import of as mechanisms

        return self.attention if self.attention is not None else default_attention(mechanisms(spec))

    def flash(self, spec: ModelSpecLike) -> bool:
        """Attention keeps no s^2 scores (sdpa, flash) for `spec`."""
        return self.attention_for(spec) in ("sdpa", "flash")

    def check_against(self, spec: ModelSpecLike) -> None:
        """Checks that need the model: tensor parallel splitting heads and MLP evenly, LoRA targets that
        exist, positions the model has, generation only for decoders."""
        self._check_attention(spec)
        t, k = self.tp, spec.num_kv_heads
        if spec.num_heads % t:
            raise SpecError(
                "tp", t, Msg("allowed.divisor_of", of="num_heads", n=spec.num_heads, model=spec.name)
            )
        if k % t and t % k:  # vLLM/Megatron: split the KV heads, or replicate them evenly
            raise SpecError(
                "tp", t, Msg("allowed.divisor_or_multiple_of", of="num_kv_heads", n=k, model=spec.name)
            )
        if spec.intermediate_size % t:
            n = spec.intermediate_size
            raise SpecError("tp", t, Msg("allowed.divisor_of", of="intermediate_size", n=n, model=spec.name))
        if self.training and not spec.is_decoder and self.mode != "train":
            raise SpecError("mode", self.mode, Msg("allowed.train_encoder"))
        if self.mode in ("lora", "qlora") and "gate_proj" in self.lora_targets and not spec.gated_mlp:
            raise SpecError("lora_targets", "gate_proj", Msg("allowed.lora_no_gate", model=spec.name))
        if not spec.is_decoder and self.mode == "infer" and self.new_tokens:
            raise SpecError(
                "new_tokens", self.new_tokens, Msg("allowed.encoder_no_generation", model=spec.name)
            )
        if spec.learned_positions:  # a learned position table has no row past its end
            n = self.seq_len if self.training else self.context_len
            if n > spec.max_position_embeddings:
                most = spec.max_position_embeddings
                if not self.training and not self.context and self.new_tokens:  # the prompt, as typed
                    room = Msg(
                        "allowed.positions_less_new", room=most - self.new_tokens, n=most, model=spec.name,
                        new=self.new_tokens,
                    )  # fmt: skip
                    raise SpecError("seq_len", self.seq_len, room)
                field = "seq_len" if self.training else ("context" if self.context else "seq_len")
                raise SpecError(field, n, Msg("allowed.positions", n=most, model=spec.name))

    def _check_attention(self, spec: ModelSpecLike) -> None:
        """An implementation transformers does not offer the family is refused, naming those it does."""
        from aiworkbook.specs.mechanisms import of as mechanisms

        offered = mechanisms(spec).attentions
        if self.attention is not None and self.attention not in offered:
            raise SpecError(
                "attention",
                self.attention,
                Msg("allowed.attention_offered", offered=", ".join(offered), family=spec.model_type),
            )

    def replace(self, **changes: Any) -> Workload:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["lora_targets"] = list(self.lora_targets)
        return d

    @classmethod
    def decoding(cls, sequences: int, context: int, dtype: Any = None, **given: Any) -> Workload:
        """Inference with `sequences` in flight (batch and concurrency) at `context` tokens, as the
        proofs and the embedded server measure it; `dtype` (when given) for the precision, the weights
        and the KV cache alike."""
        if dtype is not None:
            given.update(precision=dtype, weights_dtype=dtype, kv_dtype=dtype)
        return cls(mode="infer", batch=sequences, concurrency=sequences, seq_len=context, **given)

    # ---- schema ---------------------------------------------------------------------------
    @classmethod
    def fields(cls) -> list[dict[str, Any]]:
        """One entry per field, for a form (the CLI's options and the widgets' controls are built from
        it): name, type (int, float, bool, choice, choices), default, optional, low/high bounds, the
        allowed values of a choice (`choices_in_mode` where a mode narrows them), a one-line doc and
        `modes`, the modes the field applies to. All of it read from the field's declaration."""
        return [_describe(name) for name in _FIELDS()]

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The fields as pydantic's JSON Schema: each field's doc as its description, its bounds as
        minimum/maximum, its modes."""
        from pydantic import TypeAdapter

        schema: dict[str, Any] = TypeAdapter(cls).json_schema()
        for name, prop in schema["properties"].items():
            d = _describe(name)
            if d["low"] is not None:
                prop["minimum"], prop["maximum"] = d["low"], d["high"]
        return schema


_validated_init = Workload.__init__


def _init(self: Workload, *args: Any, **kwargs: Any) -> None:
    """pydantic's validation, its refusal as the SpecError every face shows (field, value, allowed)."""
    try:
        _validated_init(self, *args, **kwargs)
    except ValidationError as exc:
        raise _refusal(exc) from None


Workload.__init__ = _init  # type: ignore[method-assign]


@cache
def _FIELDS() -> dict[str, Any]:  # noqa: N802 (a constant, built on first use)
    """The declared fields (pydantic's FieldInfo), in order."""
    return dict(Workload.__pydantic_fields__)  # type: ignore[attr-defined]


def _shown(default: Any) -> str:
    return ", ".join(default) if isinstance(default, tuple) else repr(default)


def _refusal(exc: ValidationError) -> SpecError:
    """The first error as a SpecError (errors.refusal): the field, the value and what the field's
    declaration allows."""
    return refusal(exc, _FIELDS(), lambda name: _allowed_text(_describe(name)))


def allowed_words(name: str) -> str:
    """What Workload field `name` allows, in the words its refusals use: another setting of the same
    quantity (vLLM's `--gpu-memory-utilization`) refuses with these, so one field has one wording."""
    return _allowed_text(_describe(name))


def _allowed_text(d: dict[str, Any]) -> str:
    """What a field allows, in words, from its declaration: a message (English as its str), so a
    refusal reads in the viewer's language; a choice's values as they are typed."""
    text: str
    if d["type"] in ("choice", "choices"):
        text = ", ".join(str(c) for c in d["choices"])
    elif d["type"] == "bool":
        text = Msg("allowed.boolean")
    elif d["type"] == "int":
        text = Msg("allowed.int_range", low=d["low"], high=d["high"])
    else:
        low, high = d["low"], d["high"]  # ( ) an open end, [ ] a closed one
        if d["open_low"] and d["open_high"]:
            text = Msg("allowed.number_in_oo", low=low, high=high)
        elif d["open_low"]:
            text = Msg("allowed.number_in_oc", low=low, high=high)
        elif d["open_high"]:
            text = Msg("allowed.number_in_co", low=low, high=high)
        else:
            text = Msg("allowed.number_in_cc", low=low, high=high)
    return Msg("allowed.unset_or", kind=text) if d["optional"] and d["type"] != "choice" else text


def _kind(annotation: Any) -> tuple[str, list[Any]]:
    """(type, choices) of a field's annotation: int, float, bool, choice (a Literal) or choices (a tuple
    of a Literal); None in a union only makes the field optional."""
    args = [a for a in get_args(annotation) if a is not type(None)]
    base = args[0] if get_origin(annotation) is not Literal and len(args) == 1 else annotation
    if get_origin(base) is Literal:
        return "choice", list(get_args(base))
    if get_origin(base) is tuple:
        return "choices", list(get_args(get_args(base)[0]))
    return {bool: "bool", float: "float"}.get(base, "int"), []


APPLIES_TO: dict[str, tuple[str, ...]] = {}  # filled below, from the declarations
#: Workload fields that are switches (from their bool annotations).
BOOL_FIELDS: tuple[str, ...] = ()


def applies(name: str, mode: str) -> bool:
    """Whether field `name` means something in `mode` (its declared modes)."""
    return mode in APPLIES_TO.get(name, MODES)


def parse_field(name: str, text: Any, required: bool = False) -> Any:
    """A value typed into a form (text, or a number already) as field `name` takes it, within the
    field's bounds: a SpecError names the field, what was typed and the allowed range ("1e12" typed as
    seq_len is refused, never rounded or clamped). Empty text is None for an optional field, unless
    `required` (a form that always sets it): then empty is refused and the range does not offer it."""
    if name not in _FIELDS():
        raise SpecError("field", name, ", ".join(_FIELDS()))
    d = _describe(name)
    if d["type"] not in ("int", "float"):
        raise SpecError("field", name, "a numeric field")
    low, high, integer = d["low"], d["high"], d["type"] == "int"
    kind = (
        Msg("allowed.int_range", low=low, high=high)
        if integer
        else Msg("allowed.number_range", low=low, high=high)
    )
    optional = d["optional"] and not required
    if optional:
        kind = Msg("allowed.empty_or", kind=kind)
    raw = text.strip() if isinstance(text, str) else text
    if raw in ("", None):
        if optional:
            return None
        raise SpecError(name, "", kind)
    if isinstance(raw, bool):
        raise SpecError(name, raw, kind)
    try:
        value: Any = int(raw.replace(",", "").replace("_", "")) if integer and isinstance(raw, str) else raw
        if not integer and isinstance(raw, str):
            value = float(raw)
    except ValueError:
        raise SpecError(name, text, kind) from None
    if integer and not isinstance(value, int) or not isinstance(value, int | float) or value != value:
        raise SpecError(name, text, kind)
    if not low <= value <= high:
        raise SpecError(name, text, kind)
    return value


def _describe(name: str) -> dict[str, Any]:
    info = _FIELDS()[name]
    extra = info.json_schema_extra
    kind, choices = _kind(info.annotation)
    d: dict[str, Any] = {"name": name, "doc": info.description or "", "type": kind}
    d["default"] = list(info.default) if isinstance(info.default, tuple) else info.default
    if choices:
        d["choices"] = choices
    d["optional"] = info.default is None
    bounds = {type(m).__name__: m for m in info.metadata}
    low, high = bounds.get("Ge") or bounds.get("Gt"), bounds.get("Le") or bounds.get("Lt")
    d["low"] = None if low is None else getattr(low, "ge", getattr(low, "gt", None))
    d["high"] = None if high is None else getattr(high, "le", getattr(high, "lt", None))
    d["open_low"], d["open_high"] = "Gt" in bounds, "Lt" in bounds
    d["modes"] = list(extra["modes"])
    if "choices_in_mode" in extra:
        d["choices_in_mode"] = {m: list(c) for m, c in extra["choices_in_mode"].items()}
    return d


APPLIES_TO.update({d["name"]: tuple(d["modes"]) for d in Workload.fields()})
BOOL_FIELDS = tuple(d["name"] for d in Workload.fields() if d["type"] == "bool")


def allowed(name: str, spec: Any = None, **others: Any) -> list[Any] | tuple[int, int]:
    """The values field `name` may still take given the other fields (`others`, the Workload's other
    settings) and, optionally, a model: the choices that build a valid Workload (e.g. recipes valid
    for a precision), tensor-parallel sizes that divide the model's heads (with `spec`), or the
    (low, high) range of an integer field. A SpecError names an unknown field."""
    if name not in _FIELDS():
        raise SpecError("field", name, ", ".join(_FIELDS()))
    d = _describe(name)
    if d["type"] == "choice":
        candidates: list[Any] = list(d["choices"])
    elif d["type"] == "choices":
        return [m for m in d["choices"] if _ok(spec, others, name, (m,))]
    elif name == "zero":
        candidates = [0, 1, 2, 3]
    elif name == "tp" and spec is not None:
        candidates = list(range(1, MAX_TP + 1))
    elif d["type"] == "bool":
        candidates = [False, True]
    else:
        return (d["low"], d["high"])
    return [v for v in candidates if _ok(spec, others, name, v)]


def _ok(spec: Any, others: dict[str, Any], name: str, value: Any) -> bool:
    try:
        w = Workload(**{**others, name: value})
        if spec is not None:
            w.check_against(spec)
    except SpecError:
        return False
    return True
