"""Workload: what is being run (mode, shape, precision, recipe, sharding), validated at the boundary.

A Workload is independent of the model; `check_against(spec)` adds the checks that need one
(tensor parallel dividing the heads, LoRA targets that exist). Every bad value raises a SpecError
(a ValueError) naming the field, the value and what is allowed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from aiworkbook.errors import SpecError
from aiworkbook.units import KV_DTYPES

MODES = ("train", "lora", "qlora", "infer")
PRECISIONS = ("fp32", "bf16", "fp16", "bf16-mixed", "fp16-mixed")
RECIPE_NAMES = (
    "fp32-adamw",
    "zero-mixed",
    "megatron-bf16",
    "pure-bf16",
    "adamw-8bit",
    "sgd-momentum",
    "adafactor",
)
ATTENTIONS = ("eager", "sdpa", "flash")
CHECKPOINTING = ("none", "selective", "full")
WEIGHT_DTYPES = ("fp32", "bf16", "fp16", "fp8", "int8", "int4", "nf4")
ENGINES = ("hf", "vllm", "trtllm")
LORA_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
#: Recipes that keep 16-bit weights: they cannot run at fp32 precision.
SIXTEEN_BIT_RECIPES = ("zero-mixed", "megatron-bf16", "pure-bf16", "adamw-8bit")


def default_recipe(precision: str) -> str:
    """The recipe a precision implies when none is named: fp32-adamw at fp32 (16-bit recipes cannot run
    there), megatron-bf16 otherwise."""
    return "fp32-adamw" if precision == "fp32" else "megatron-bf16"


def _choice(field: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise SpecError(field, value, ", ".join(allowed))


def _int_at_least(field: str, value: Any, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise SpecError(field, value, f"an integer >= {low}")


@dataclass(frozen=True)
class Workload:
    """Mode, shape, precision, recipe and sharding of one run (train, LoRA, QLoRA or inference)."""

    mode: str = "train"
    batch: int = 1
    seq_len: int = 2048
    new_tokens: int = 0
    precision: str = "bf16-mixed"
    recipe: str | None = None  # None: megatron-bf16, or fp32-adamw at fp32 precision (default_recipe)
    attention: str = "sdpa"
    checkpointing: str = "none"
    chunked_loss: bool = False
    dp: int = 1
    zero: int = 0
    tp: int = 1
    lora_rank: int = 16
    lora_targets: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    weights_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    concurrency: int = 1
    context: int | None = None
    block_size: int = 16
    engine: str = "hf"
    gpu_memory_utilization: float = 0.9
    dropout: float | None = None  # None: the family's default (GPT-2/BERT 0.1, Llama-style 0)
    #: Prompt tokens one prefill forward processes (vLLM max_num_batched_tokens, TensorRT-LLM
    #: max_num_tokens). None: the engine's default (vLLM/TensorRT-LLM 8192; hf: every prompt at once).
    max_batched_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.recipe is None:
            object.__setattr__(self, "recipe", default_recipe(str(self.precision)))
        _choice("mode", self.mode, MODES)
        _int_at_least("batch", self.batch, 1)
        _int_at_least("seq_len", self.seq_len, 1)
        _int_at_least("new_tokens", self.new_tokens, 0)
        _choice("precision", self.precision, PRECISIONS)
        _choice("recipe", self.recipe, RECIPE_NAMES)
        _choice("attention", self.attention, ATTENTIONS)
        _choice("checkpointing", self.checkpointing, CHECKPOINTING)
        _int_at_least("dp", self.dp, 1)
        _int_at_least("tp", self.tp, 1)
        if isinstance(self.zero, bool) or not isinstance(self.zero, int) or self.zero not in (0, 1, 2, 3):
            raise SpecError("zero", self.zero, "0, 1, 2 or 3 (FSDP full shard = 3)")
        _int_at_least("lora_rank", self.lora_rank, 1)
        targets = tuple(self.lora_targets)
        object.__setattr__(self, "lora_targets", targets)
        if not targets:
            raise SpecError("lora_targets", targets, "one or more of " + ", ".join(LORA_MODULES))
        for t in targets:
            _choice("lora_targets", t, LORA_MODULES)
        if len(set(targets)) != len(targets):
            raise SpecError("lora_targets", targets, "each module at most once")
        _choice("weights_dtype", self.weights_dtype, WEIGHT_DTYPES)
        _choice("kv_dtype", self.kv_dtype, KV_DTYPES)
        _int_at_least("concurrency", self.concurrency, 1)
        if self.context is not None:
            _int_at_least("context", self.context, 1)
        _int_at_least("block_size", self.block_size, 1)
        _choice("engine", self.engine, ENGINES)
        if self.max_batched_tokens is not None:
            _int_at_least("max_batched_tokens", self.max_batched_tokens, 1)
        if not isinstance(self.chunked_loss, bool):
            raise SpecError("chunked_loss", self.chunked_loss, "True or False")
        u = self.gpu_memory_utilization
        if isinstance(u, bool) or not isinstance(u, int | float) or not 0 < u <= 1:
            raise SpecError("gpu_memory_utilization", u, "a fraction in (0, 1]")
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
        if self.context is not None and self.context < self.seq_len + self.new_tokens:
            raise SpecError(
                "context",
                self.context,
                f">= seq_len + new_tokens ({self.seq_len} + {self.new_tokens}): the cache holds prompt and output",
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
                field = "seq_len" if self.training else ("context" if self.context else "seq_len")
                raise SpecError(
                    field, n, f"<= max_position_embeddings ({spec.max_position_embeddings}) of {spec.name}"
                )

    def replace(self, **changes: Any) -> Workload:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["lora_targets"] = list(self.lora_targets)
        return d
