"""Workload: what is being run (mode, shape, precision, recipe, sharding), validated at the boundary.

A Workload is independent of the model; `check_against(spec)` adds the checks that need one
(tensor parallel dividing the heads, LoRA targets that exist). Every bad value raises a SpecError
(a ValueError) naming the field, the value and what is allowed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from dataclasses import field as dc_field
from typing import Any, Literal, get_args

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.units import KV_DTYPES

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


def _choice(field: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise SpecError(field, value, ", ".join(allowed))


def _int_in(field: str, value: Any, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SpecError(field, value, Msg("allowed.int_range", low=low, high=high))


def _doc(doc: str, low: float | None = None, high: float | None = None) -> Any:
    return dc_field(metadata={"doc": doc, "low": low, "high": high})


@dataclass(frozen=True)
class Workload:
    """Mode, shape, precision, recipe and sharding of one run (train, LoRA, QLoRA or inference).

    Each field carries a one-line doc and its bounds (`Workload.fields()`, for forms); `allowed(name,
    ...)` lists the values a field may still take given the others (and a model)."""

    mode: Mode = dc_field(default="train", metadata={"doc": "train, LoRA or QLoRA fine-tuning, or inference"})
    batch: int = dc_field(
        default=1, metadata={"doc": "micro-batch per GPU (training)", "low": 1, "high": MAX_BATCH}
    )
    seq_len: int = dc_field(
        default=2048,
        metadata={"doc": "tokens per sequence (the prompt for inference)", "low": 1, "high": MAX_TOKENS},
    )
    new_tokens: int = dc_field(
        default=0, metadata={"doc": "generated tokens (inference)", "low": 0, "high": MAX_TOKENS}
    )
    precision: Precision = dc_field(default="bf16-mixed", metadata={"doc": "compute precision (mixed: AMP)"})
    #: None: megatron-bf16, or fp32-adamw at fp32 precision (default_recipe)
    recipe: Recipe = dc_field(  # None given: set from the precision in __post_init__
        default=None,  # type: ignore[arg-type]
        metadata={"doc": "optimizer and weight copies (None: follows the precision)"},
    )
    attention: Attention = dc_field(
        default="sdpa", metadata={"doc": "eager keeps the s^2 scores; sdpa/flash do not"}
    )
    checkpointing: Checkpointing = dc_field(default="none", metadata={"doc": "activation recomputation"})
    chunked_loss: bool = dc_field(
        default=False,
        metadata={"doc": "fused linear + cross-entropy over 1,024-token chunks (no full logits)"},
    )
    loss_chunks: int | None = dc_field(
        default=None,
        metadata={
            "doc": "head output split in N chunks, each up-cast to fp32 alone (torchtune: 8); None: unchunked",
            "low": 1,
            "high": MAX_TOKENS,
        },
    )
    compile: bool = dc_field(
        default=False,
        metadata={"doc": "torch.compile: fused element-wise chains (norms, SwiGLU) keep no intermediates"},
    )
    compile_loss: bool = dc_field(
        default=True,
        metadata={
            "doc": "with compile, the loss is compiled too (False: only the layers, the loss runs eager)"
        },
    )
    kv_repeat: bool = dc_field(
        default=False,
        metadata={"doc": "k and v copied to every query head before attention, which saves the copies"},
    )
    optimizer_in_backward: bool = dc_field(
        default=False,
        metadata={"doc": "optimizer step per parameter in backward: one gradient alive at a time"},
    )
    optimizer_impl: OptimizerImpl | None = dc_field(
        default=None,
        metadata={
            "doc": "torch.optim implementation (None: the device's default, foreach on CUDA; sizing/optimizer_step.py)"
        },
    )
    l2_weight_decay: bool = dc_field(
        default=False,
        metadata={"doc": "Adam/SGD weight_decay (L2 on the gradient; not AdamW's decoupled decay)"},
    )
    maximize: bool = dc_field(default=False, metadata={"doc": "the optimizer's maximize (negated gradients)"})
    activation_offload: bool = dc_field(
        default=False,
        metadata={"doc": "saved activations to host memory; the GPU keeps the layers in flight"},
    )
    fsdp_cpu_offload: bool = dc_field(
        default=False,
        metadata={
            "doc": "FSDP CPU offload: weights, grads and optimizer on the host; GPU holds gathered units"
        },
    )
    dp: int = dc_field(
        default=1, metadata={"doc": "data-parallel replicas (training)", "low": 1, "high": MAX_GPUS}
    )
    zero: int = dc_field(
        default=0, metadata={"doc": "ZeRO stage 0-3 (FSDP full shard = 3)", "low": 0, "high": 3}
    )
    tp: int = dc_field(
        default=1, metadata={"doc": "tensor-parallel size (divides the heads)", "low": 1, "high": MAX_TP}
    )
    lora_rank: int = dc_field(default=16, metadata={"doc": "LoRA rank", "low": 1, "high": 1 << 16})
    lora_targets: tuple[LoraTarget, ...] = dc_field(
        default=("q_proj", "k_proj", "v_proj", "o_proj"),
        metadata={"doc": "modules LoRA adapts (or all-linear: every block linear, not the head)"},
    )
    weights_dtype: WeightDtype = dc_field(
        default="bf16", metadata={"doc": "stored weights (quantised: inference)"}
    )
    kv_dtype: KVDtype = dc_field(default="bf16", metadata={"doc": "KV-cache element type"})
    concurrency: int = dc_field(
        default=1, metadata={"doc": "sequences served at once (inference)", "low": 1, "high": MAX_BATCH}
    )
    context: int | None = dc_field(
        default=None,
        metadata={
            "doc": "KV tokens per sequence (None: seq_len + new_tokens)",
            "low": 1,
            "high": 2 * MAX_TOKENS,
        },
    )
    block_size: int = dc_field(
        default=16, metadata={"doc": "paged-KV block, tokens", "low": 1, "high": 1 << 16}
    )
    engine: Engine = dc_field(default="hf", metadata={"doc": "serving engine whose memory rules apply"})
    gpu_memory_utilization: float = dc_field(
        default=0.9, metadata={"doc": "share of GPU memory the workload may use", "low": 0.0, "high": 1.0}
    )
    dropout: float | None = dc_field(
        default=None,
        metadata={"doc": "None: the family's default (GPT-2/BERT 0.1, Llama 0)", "low": 0.0, "high": 1.0},
    )
    #: Prompt tokens one prefill forward processes (vLLM max_num_batched_tokens, TensorRT-LLM
    #: max_num_tokens). None: the engine's default (vLLM/TensorRT-LLM 8192; hf: every prompt at once).
    max_batched_tokens: int | None = dc_field(
        default=None,
        metadata={
            "doc": "prompt tokens per prefill forward (None: the engine's)",
            "low": 1,
            "high": MAX_BATCH * MAX_TOKENS,
        },
    )

    def __post_init__(self) -> None:
        if self.recipe is None:
            object.__setattr__(self, "recipe", default_recipe(str(self.precision)))
        _choice("mode", self.mode, MODES)
        for f in fields(self):  # every integer size within its bounds (None where optional)
            low, high = f.metadata.get("low"), f.metadata.get("high")
            v = getattr(self, f.name)
            if isinstance(low, int) and isinstance(high, int) and f.name != "zero" and v is not None:
                _int_in(f.name, v, low, high)
        _choice("precision", self.precision, PRECISIONS)
        _choice("recipe", self.recipe, RECIPE_NAMES)
        _choice("attention", self.attention, ATTENTIONS)
        _choice("checkpointing", self.checkpointing, CHECKPOINTING)
        if isinstance(self.zero, bool) or not isinstance(self.zero, int) or self.zero not in (0, 1, 2, 3):
            raise SpecError("zero", self.zero, "0, 1, 2 or 3 (FSDP full shard = 3)")
        targets = (self.lora_targets,) if isinstance(self.lora_targets, str) else tuple(self.lora_targets)
        object.__setattr__(self, "lora_targets", targets)
        if not targets:
            raise SpecError("lora_targets", targets, "one or more of " + ", ".join(LORA_MODULES))
        if ALL_LINEAR in targets and len(targets) > 1:
            raise SpecError("lora_targets", targets, f"{ALL_LINEAR} alone, or a list of modules")
        for t in targets:
            _choice("lora_targets", t, (*LORA_MODULES, ALL_LINEAR))
        if len(set(targets)) != len(targets):
            raise SpecError("lora_targets", targets, "each module at most once")
        _choice("weights_dtype", self.weights_dtype, WEIGHT_DTYPES)
        _choice("kv_dtype", self.kv_dtype, KV_DTYPES)
        _choice("engine", self.engine, ENGINES)
        if self.optimizer_impl is not None:
            _choice("optimizer_impl", self.optimizer_impl, OPTIMIZER_IMPLS)
        for name in BOOL_FIELDS:
            if not isinstance(getattr(self, name), bool):
                raise SpecError(name, getattr(self, name), "True or False")
        u = self.gpu_memory_utilization
        if isinstance(u, bool) or not isinstance(u, int | float) or not 0 < u <= 1:
            raise SpecError("gpu_memory_utilization", u, Msg("allowed.fraction_above_0"))
        if self.dropout is not None and (
            isinstance(self.dropout, bool)
            or not isinstance(self.dropout, int | float)
            or not 0 <= self.dropout < 1
        ):
            raise SpecError("dropout", self.dropout, "None (the model's default) or a probability in [0, 1)")
        self._check_combinations()

    def _check_combinations(self) -> None:
        if self.mode == "qlora" and self.precision == "fp32":
            raise SpecError(
                "precision", self.precision, "bf16, fp16, bf16-mixed or fp16-mixed for qlora (NF4 base)"
            )
        if self.mode in ("train", "lora") and self.precision == "fp32" and self.recipe in SIXTEEN_BIT_RECIPES:
            raise SpecError(
                "recipe",
                self.recipe,
                "fp32-adamw, sgd-momentum or adafactor at fp32 precision (this recipe keeps 16-bit weights)",
            )
        if self.zero and self.mode == "infer":
            raise SpecError("zero", self.zero, "0 for inference (ZeRO shards training state)")
        if self.zero and self.dp == 1:
            raise SpecError("zero", self.zero, "0 when dp is 1 (ZeRO shards across data-parallel ranks)")
        if self.mode == "infer" and self.dp > 1:
            raise SpecError(
                "dp",
                self.dp,
                "1 for inference (one replica is sized; use tp to split a model over GPUs)",
            )
        if self.mode in ("train", "lora") and self.weights_dtype not in ("fp32", "bf16", "fp16"):
            raise SpecError(
                "weights_dtype",
                self.weights_dtype,
                f"fp32, bf16 or fp16 for mode {self.mode} (quantised weights are for infer; qlora is NF4)",
            )
        if self.mode == "qlora" and self.weights_dtype not in ("bf16", "nf4"):
            raise SpecError("weights_dtype", self.weights_dtype, "nf4 (or the default bf16) for qlora")
        self._check_finetune_options()
        if self.context is not None and self.context < self.seq_len + self.new_tokens:
            raise SpecError(
                "context",
                self.context,
                f">= seq_len + new_tokens ({self.seq_len} + {self.new_tokens}): the cache holds prompt and output",
            )

    def _check_finetune_options(self) -> None:
        if self.chunked_loss and self.loss_chunks is not None:
            raise SpecError(
                "loss_chunks", self.loss_chunks, "None with chunked_loss (the fused loss has its own chunks)"
            )
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
                raise SpecError(name, getattr(self, name), "unset for inference (a training option)")
        if self.fsdp_cpu_offload and self.dp > 1 and self.zero != 3:
            raise SpecError(
                "zero", self.zero, "3 with fsdp_cpu_offload on several GPUs (FSDP full shard offloads shards)"
            )
        if self.fsdp_cpu_offload and self.optimizer_in_backward:
            raise SpecError(
                "optimizer_in_backward", True, "False with fsdp_cpu_offload (the step runs on the host)"
            )
        impl = self.optimizer_impl
        if impl not in (None, "fused") and self.recipe in (
            "adamw-8bit",
            "blockwise-adamw-8bit",
            "paged-adamw-8bit",
        ):
            raise SpecError(
                "optimizer_impl", impl, f"None or fused for {self.recipe} (one kernel per tensor)"
            )
        if impl == "fused" and self.recipe == "adafactor":
            raise SpecError(
                "optimizer_impl", impl, "None, foreach or forloop for adafactor (torch has no fused)"
            )
        if self.optimizer_in_backward and self.zero:
            raise SpecError(
                "optimizer_in_backward", True, "False with ZeRO (no per-parameter step on shards)"
            )

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

    def lora_modules(self, spec) -> tuple[str, ...]:
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

    @property
    def flash(self) -> bool:
        return self.attention in ("sdpa", "flash")

    def check_against(self, spec) -> None:
        """Checks that need the model: tensor parallel splitting heads and MLP evenly, LoRA targets that
        exist, positions the model has, generation only for decoders."""
        t, k = self.tp, spec.num_kv_heads
        if spec.num_heads % t:
            raise SpecError("tp", t, f"a divisor of num_heads ({spec.num_heads}) of {spec.name}")
        if k % t and t % k:  # vLLM/Megatron: split the KV heads, or replicate them evenly
            raise SpecError("tp", t, f"a divisor or a multiple of num_kv_heads ({k}) of {spec.name}")
        if spec.intermediate_size % t:
            raise SpecError(
                "tp", t, f"a divisor of intermediate_size ({spec.intermediate_size}) of {spec.name}"
            )
        if self.training and not spec.is_decoder and self.mode != "train":
            raise SpecError("mode", self.mode, "train for encoder-only models")
        if self.mode in ("lora", "qlora") and "gate_proj" in self.lora_targets and not spec.gated_mlp:
            raise SpecError(
                "lora_targets", "gate_proj", f"modules {spec.name} has (its MLP has no gate projection)"
            )
        if not spec.is_decoder and self.mode == "infer" and self.new_tokens:
            raise SpecError("new_tokens", self.new_tokens, f"0: {spec.name} is encoder-only (no generation)")
        if spec.learned_positions:  # a learned position table has no row past its end
            n = self.seq_len if self.training else self.context_len
            if n > spec.max_position_embeddings:
                limit = f"max_position_embeddings ({spec.max_position_embeddings}) of {spec.name}"
                if not self.training and not self.context and self.new_tokens:  # the prompt, as typed
                    room = spec.max_position_embeddings - self.new_tokens
                    raise SpecError(
                        "seq_len", self.seq_len, f"<= {room}: {limit} less {self.new_tokens} new tokens"
                    )
                field = "seq_len" if self.training else ("context" if self.context else "seq_len")
                raise SpecError(field, n, f"<= {limit}")

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
        `modes`, the modes the field applies to."""
        return [_describe(f) for f in fields(cls)]

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The fields as a JSON Schema (pydantic's, from the Literal annotations) with each field's doc
        as its description and its bounds as minimum/maximum."""
        from pydantic import TypeAdapter

        schema = TypeAdapter(cls).json_schema()
        for f in fields(cls):
            prop = schema["properties"][f.name]
            prop["description"] = f.metadata.get("doc", "")
            if f.metadata.get("low") is not None:
                prop["minimum"], prop["maximum"] = f.metadata["low"], f.metadata["high"]
        return schema


_CHOICES: dict[str, tuple[str, ...]] = {
    "mode": MODES,
    "precision": PRECISIONS,
    "recipe": RECIPE_NAMES,
    "attention": ATTENTIONS,
    "checkpointing": CHECKPOINTING,
    "weights_dtype": WEIGHT_DTYPES,
    "kv_dtype": KV_DTYPES,
    "engine": ENGINES,
    "optimizer_impl": OPTIMIZER_IMPLS,
    "lora_targets": (*LORA_MODULES, ALL_LINEAR),
}
#: Workload fields that are switches.
BOOL_FIELDS = (
    "chunked_loss",
    "compile",
    "compile_loss",
    "kv_repeat",
    "optimizer_in_backward",
    "activation_offload",
    "fsdp_cpu_offload",
    "l2_weight_decay",
    "maximize",
)


TRAINING_MODES: tuple[str, ...] = ("train", "lora", "qlora")
#: The modes in which a field means something (a form shows its control only there; elsewhere the
#: field stays at its default). Fields not named apply to every mode.
APPLIES_TO: dict[str, tuple[str, ...]] = {
    "batch": TRAINING_MODES,  # inference serves `concurrency` sequences
    "new_tokens": ("infer",),
    "recipe": TRAINING_MODES,
    "checkpointing": TRAINING_MODES,
    **{name: TRAINING_MODES for name in (*BOOL_FIELDS, "loss_chunks", "optimizer_impl", "dropout")},
    "dp": TRAINING_MODES,
    "zero": TRAINING_MODES,
    "lora_rank": ("lora", "qlora"),
    "lora_targets": ("lora", "qlora"),
    "concurrency": ("infer",),
    "kv_dtype": ("infer",),
    "context": ("infer",),
    "block_size": ("infer",),
    "engine": ("infer",),
    "max_batched_tokens": ("infer",),
}
#: Choices a form offers per mode where the mode narrows them: QLoRA's base is NF4 whatever the
#: field says (sizing/states.py `frozen_base_bytes`), so "bf16" there would misstate the weights.
CHOICES_IN_MODE: dict[str, dict[str, tuple[str, ...]]] = {
    "weights_dtype": {"train": ("fp32", "bf16", "fp16"), "lora": ("fp32", "bf16", "fp16"), "qlora": ("nf4",)},
}


def applies(name: str, mode: str) -> bool:
    """Whether field `name` means something in `mode` (see APPLIES_TO)."""
    return mode in APPLIES_TO.get(name, MODES)


def parse_field(name: str, text: Any) -> Any:
    """A value typed into a form (text, or a number already) as field `name` takes it, within the
    field's bounds: a SpecError names the field, what was typed and the allowed range ("1e12" typed as
    seq_len is refused, never rounded or clamped). Empty text is None for an optional field."""
    meta = {f.name: f for f in fields(Workload)}
    if name not in meta:
        raise SpecError("field", name, ", ".join(meta))
    d = _describe(meta[name])
    if d["type"] not in ("int", "float"):
        raise SpecError("field", name, "a numeric field")
    low, high, integer = d["low"], d["high"], d["type"] == "int"
    kind = (
        Msg("allowed.int_range", low=low, high=high)
        if integer
        else Msg("allowed.number_range", low=low, high=high)
    )
    if d["optional"]:
        kind = Msg("allowed.empty_or", kind=kind)
    raw = text.strip() if isinstance(text, str) else text
    if raw in ("", None):
        if d["optional"]:
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


def _describe(f: Any) -> dict[str, Any]:
    d = {"name": f.name, "doc": f.metadata.get("doc", ""), "default": f.default}
    if f.name in _CHOICES:
        d["type"] = "choices" if f.name == "lora_targets" else "choice"
        d["choices"] = list(_CHOICES[f.name])
        if f.name == "lora_targets":
            d["default"] = list(f.default)
    elif f.name in ("gpu_memory_utilization", "dropout"):
        d["type"] = "float"
    elif f.name in BOOL_FIELDS:
        d["type"] = "bool"
    else:
        d["type"] = "int"
    d["optional"] = f.default is None
    d["low"], d["high"] = f.metadata.get("low"), f.metadata.get("high")
    d["modes"] = list(APPLIES_TO.get(f.name, MODES))
    if f.name in CHOICES_IN_MODE:
        d["choices_in_mode"] = {m: list(c) for m, c in CHOICES_IN_MODE[f.name].items()}
    return d


def allowed(name: str, spec: Any = None, **others: Any) -> list[Any] | tuple[int, int]:
    """The values field `name` may still take given the other fields (`others`, the Workload's other
    settings) and, optionally, a model: the choices that build a valid Workload (e.g. recipes valid
    for a precision), tensor-parallel sizes that divide the model's heads (with `spec`), or the
    (low, high) range of an integer field. A SpecError names an unknown field."""
    names = [f.name for f in fields(Workload)]
    if name not in names:
        raise SpecError("field", name, ", ".join(names))
    meta = {f.name: f.metadata for f in fields(Workload)}[name]
    if name in _CHOICES and name != "lora_targets":
        candidates: list[Any] = list(_CHOICES[name])
    elif name == "lora_targets":
        return [m for m in (*LORA_MODULES, ALL_LINEAR) if _ok(spec, others, name, (m,))]
    elif name == "zero":
        candidates = [0, 1, 2, 3]
    elif name == "tp" and spec is not None:
        candidates = list(range(1, MAX_TP + 1))
    elif name in BOOL_FIELDS:
        candidates = [False, True]
    else:
        return (meta["low"], meta["high"])
    return [v for v in candidates if _ok(spec, others, name, v)]


def _ok(spec: Any, others: dict[str, Any], name: str, value: Any) -> bool:
    try:
        w = Workload(**{**others, name: value})
        if spec is not None:
            w.check_against(spec)
    except SpecError:
        return False
    return True
