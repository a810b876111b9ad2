"""What transformers really saves for backward, per family: the truth the activation estimate is held to.

Builds every supported causal-LM family from a small config with Hugging Face transformers on the CPU,
runs one training forward (loss included) and counts the unique storages autograd saves
(`torch.autograd.graph.saved_tensors_hooks`, parameters excluded), over fp32, pure bf16 and bf16-mixed
(fp32 weights under CPU autocast), eager and sdpa attention, with and without full checkpointing
(reentrant, so the kept layer inputs are saved where the hooks see them), at several shapes. Each case
is set beside `sizing.estimate`'s activations + logits (under checkpointing, what the forward keeps:
the one layer recomputed in backward is a transient the forward never holds).

    python -m aiworkbook.proofs.activation_truth            # the table, every family
    python -m aiworkbook.proofs.activation_truth qwen3 gemma2
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from typing import Any

import torch

from aiworkbook.proofs.memory_accounting import SavedTensorTracker

H, I, A, KV, D, LAYERS, VOCAB = 64, 96, 4, 2, 16, 2, 512
SMALL: dict[str, Any] = dict(
    hidden_size=H,
    intermediate_size=I,
    num_attention_heads=A,
    num_key_value_heads=KV,
    head_dim=D,
    num_hidden_layers=LAYERS,
    vocab_size=VOCAB,
    max_position_embeddings=512,
    bos_token_id=0,
    eos_token_id=0,
    pad_token_id=0,
)
_MOE = dict(num_experts_per_tok=2, moe_intermediate_size=32)
_LOCAL = dict(num_local_experts=4, num_experts_per_tok=2)  # Mixtral's keys, four experts, two per token
_NOPE_CHUNKS = dict(no_rope_layer_interval=2, attention_chunk_size=32)
#: MLA (DeepSeek): the rotary embedding is built for head_dim, which DeepSeek's config sets to
#: qk_rope_head_dim (so SMALL's head_dim is the rope part); every query head has its own key and value
_MLA: dict[str, Any] = dict(
    n_routed_experts=4,
    num_experts_per_tok=2,
    n_group=2,
    topk_group=1,
    moe_intermediate_size=32,
    kv_lora_rank=16,
    q_lora_rank=24,
    qk_rope_head_dim=D,
    qk_nope_head_dim=8,
    v_head_dim=16,
    num_key_value_heads=A,
)
#: each family's own keys on top of SMALL (what its config class needs to be small and still itself)
FAMILY_KEYS: dict[str, dict[str, Any]] = {
    "llama": {},
    "mistral": {},
    "mixtral": _LOCAL,
    "qwen2": {},
    "gemma": {},
    "gemma2": dict(sliding_window=32),
    "phi3": {},
    "gpt2": dict(n_layer=LAYERS, n_embd=H, n_head=A, n_positions=512, n_inner=I),
    "gpt_neox": {},
    "qwen3": {},
    "qwen3_moe": dict(num_experts=4, **_MOE),
    "qwen2_moe": dict(num_experts=4, shared_expert_intermediate_size=48, **_MOE),
    "gemma3_text": dict(sliding_window=32),
    "olmo2": {},
    "granite": {},
    "phimoe": _LOCAL,
    "phi": {},
    "smollm3": {},
    "starcoder2": {},
    "gpt_oss": dict(_LOCAL, sliding_window=32),
    "deepseek_v3": dict(_MLA, first_k_dense_replace=1),
    "deepseek_v2": dict(_MLA, first_k_dense_replace=1),
    # every other layer MoE (Maverick's interleave), the other a dense MLP of its own width; NoPE and
    # chunked layers (the chunk shorter than two of the three shapes)
    "llama4_text": dict(_LOCAL, interleave_moe_layer_step=2, intermediate_size_mlp=80, **_NOPE_CHUNKS),
}
#: the registry's families this tool does not build, and why (docs/sizing.md's error table says it)
NOT_BUILT: dict[str, str] = {
    "bert": "encoder-only; the tool measures a causal LM's training forward (loss on shifted labels)",
}
SHAPES = ((1, 64), (2, 32), (1, 128))
PRECISIONS = ("fp32", "bf16", "bf16-mixed")
#: the recipe each precision runs with (fp16: the pure 16-bit recipe; its activations are all fp16)
RECIPES = {"fp32": "fp32-adamw", "bf16": "pure-bf16", "fp16": "pure-bf16", "bf16-mixed": "fp32-adamw"}
ATTENTIONS = ("eager", "sdpa")


@dataclass(frozen=True)
class Case:
    family: str
    precision: str
    attention: str
    checkpointing: bool
    batch: int
    seq: int
    measured: int  # B saved for backward, measured here
    estimated: int  # B the estimate says the forward keeps

    @property
    def error(self) -> float:
        return self.estimated / self.measured - 1


def config(family: str) -> dict[str, Any]:
    """The small config.json of `family` this tool builds."""
    return {"model_type": family, **SMALL, **FAMILY_KEYS[family]}


def hf_config(family: str, attention: str = "eager", **over: Any):
    """transformers' config object for `family`'s small config, with `over` set on it by transformers' own
    attribute names (so `num_hidden_layers` reaches GPT-2's `n_layer`)."""
    import transformers

    cfg = transformers.AutoConfig.for_model(**config(family))
    for name, value in over.items():
        setattr(cfg, name, value)
    cfg._attn_implementation = attention
    return cfg


def build(family: str, precision: str, attention: str, **over: Any):
    """`family`'s small model (seed 0), in training mode; `over` as in hf_config."""
    import transformers

    cfg = hf_config(family, attention, **over)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation=attention)
    if precision == "bf16":
        model = model.to(torch.bfloat16)
    model.train()
    return model


#: the precisions in the order one model goes through them: fp32 weights (alone, then under autocast),
#: then cast to bf16 once
_ORDER = ("fp32", "bf16-mixed", "bf16")


def variants(family: str):
    """(precision, attention, checkpointing, model) for every case of `family`, from one built model:
    cast to bf16 once, attention switched with transformers' set_attn_implementation, checkpointing
    switched on and off. The same saved bytes as a fresh build per case (tests/test_sizing_truth.py
    checks a family both ways) for a sixth of the builds. An attention implementation transformers
    does not offer for the family (Gemma 2 has no sdpa) is left out."""
    model = build(family, "fp32", "eager")
    for precision in _ORDER:
        if precision == "bf16":
            model = model.to(torch.bfloat16)
        for attention in ATTENTIONS:
            try:
                model.set_attn_implementation(attention)
            except ValueError as refused:
                if "attention implementation" not in str(refused):
                    raise
                continue
            if model.config._attn_implementation != attention:  # a model that cannot switch: build it
                model = build(family, precision, attention)
            for ckpt in (False, True):
                if ckpt:
                    model.gradient_checkpointing_enable({"use_reentrant": True})
                yield precision, attention, ckpt, model
                if ckpt:
                    model.gradient_checkpointing_disable()


@contextlib.contextmanager
def one_thread():
    """Run torch on one intra-op thread meanwhile: these tensors are too small to gain from more, and
    on a machine with fewer cores than torch assumes (a CI runner's CPU quota) the extra threads only
    wait on each other."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def saved(model, b: int, s: int, autocast: bool) -> int:
    """Unique storages autograd saves in one forward with loss (parameters excluded)."""
    ids = torch.randint(1, VOCAB, (b, s), generator=torch.Generator().manual_seed(1))
    amp = torch.autocast("cpu", dtype=torch.bfloat16) if autocast else contextlib.nullcontext()
    torch.manual_seed(0)
    with SavedTensorTracker(model.parameters()) as tracker, amp:
        loss = model(input_ids=ids, labels=ids, use_cache=False).loss
    if not loss.requires_grad:
        raise RuntimeError("the forward recorded nothing for backward")
    return tracker.bytes()


def estimated(
    family: str, precision: str, attention: str, ckpt: bool, b: int, s: int, cfg: dict[str, Any] | None = None
) -> int:
    """The estimate's activations + logits for the same case (under checkpointing less the one layer
    recomputed in backward, which the forward never holds); `cfg`: another config.json of the family
    than the tool's small one."""
    from aiworkbook.sizing import Workload, estimate
    from aiworkbook.sizing.activations import _layer_split, terms
    from aiworkbook.specs import spec_from_config

    spec = spec_from_config(cfg or config(family))
    kw: dict[str, Any] = dict(
        precision=precision,
        recipe=RECIPES[precision],
        attention=attention,
        batch=b,
        seq_len=s,
        checkpointing="full" if ckpt else "none",
    )
    w = Workload(**kw)
    mem = estimate(spec, w, device="cpu").memory
    once = _layer_split(spec, w, b * s, s, terms(spec, w, "cpu"))[1] if ckpt else 0
    return int(mem.activations + mem.logits - once)


def measure(families=None, shapes=SHAPES) -> list[Case]:
    out = []
    with one_thread():
        for fam in families or FAMILY_KEYS:
            for precision, attention, ckpt, model in variants(fam):
                for b, s in shapes:
                    m = saved(model, b, s, precision == "bf16-mixed")
                    e = estimated(fam, precision, attention, ckpt, b, s)
                    out.append(Case(fam, precision, attention, ckpt, b, s, m, e))
    return out


def table(cases: list[Case]) -> str:
    """Per family: the worst and the median error over its cases (estimate / measured - 1)."""
    lines = [f"{'family':<12} {'cases':>5} {'worst':>8} {'median':>8}  worst case"]
    for fam in dict.fromkeys(c.family for c in cases):
        mine = sorted((c for c in cases if c.family == fam), key=lambda c: abs(c.error))
        worst = mine[-1]
        med = mine[len(mine) // 2].error
        where = f"{worst.precision} {worst.attention}{' ckpt' if worst.checkpointing else ''} {worst.batch}x{worst.seq}"
        lines.append(f"{fam:<12} {len(mine):>5} {worst.error:>+8.1%} {med:>+8.1%}  {where}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """`[--json PATH] [family ...]`: the table on stdout; every case as JSON to PATH when given."""
    from dataclasses import asdict

    from aiworkbook.persist import dumps_json

    path = None
    if argv[:1] == ["--json"]:
        path, argv = argv[1], argv[2:]
    cases = measure(argv or None)
    if path:
        with open(path, "x") as f:  # never replaces a file
            f.write(dumps_json([{**asdict(c), "error": c.error} for c in cases], indent=1))
    print(table(cases))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
