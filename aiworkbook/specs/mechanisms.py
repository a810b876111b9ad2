"""Mechanisms: what a family's forward does that changes the bytes it keeps, declared by its parser.

Sizing, the proofs' model builder and the widgets read these declarations and nothing else about a
family: no list of family names lives outside the registry, and a spec whose family declared nothing
is refused (`of`) rather than read as another family. Each field names where transformers keeps it
(docs/sizing.md has the table with file and line).
"""

from __future__ import annotations

from dataclasses import dataclass

from aiworkbook.errors import SpecError


@dataclass(frozen=True)
class Mechanisms:
    """The forward's traits that decide what autograd saves (defaults: a plain pre-norm decoder)."""

    # eager attention runs softmax(..., dtype=float32) and casts back: a 16-bit run keeps both copies
    softmax_fp32: bool = False
    rope: bool = False  # rotary q/k: cos/sin tables per position, and RoPE'd q, k kept
    no_rope_layers: int = 0  # layers that skip the rotary embedding (SmolLM3, Llama 4 NoPE layers)
    # the q/k norm sits on the RoPE layers only (Llama 4: `use_qk_norm and use_rope`): NoPE layers keep none
    qk_norm_rope_only: bool = False
    # NoPE layers scale q by a per-position fp32 factor (Llama 4's attn_temperature_tuning): the multiply
    # keeps the factor, 4 B per position per NoPE layer
    nope_temperature: bool = False
    fused_qkv: bool = False  # one projection for q, k and v (c_attn, query_key_value, qkv_proj)
    # the MLP activation: "silu"/"gelu" (one fused op), "gelu_new" (GPT-2's Python composition) or
    # "clamped_swiglu" (gpt-oss's experts: gate and up clamped, gate·sigmoid(alpha·gate)·(up + 1), which
    # keeps 7 tensors of the expert width per routed token where SwiGLU keeps 4)
    activation: str = "silu"
    dropout_default: float = 0.0  # the probability the config class defaults to when the config is silent
    # "": none; "head": per-head RMSNorm on q and k; "all": over all heads (OLMo 2); "l2": weightless
    # per-head L2 norm (Llama 4)
    qk_norm: str = ""
    # the norm's weight scales the fp32 normalised value (OLMo 2, Gemma): that fp32 value is what it keeps,
    # not a copy cast back to the activation width
    norm_fp32_scale: bool = False
    attn_softcap: bool = False  # tanh soft-capping of the attention scores (eager path)
    final_softcap: bool = False  # tanh soft-capping of the final logits
    router: bool = False  # MoE: router logits, their softmax and top-k, the tokens gathered per expert
    # the router takes the top-k of its logits first and softmaxes only those (gpt-oss): it keeps the k
    # weights at the activation width, not an fp32 softmax over every expert
    router_topk_first: bool = False
    # eager attention appends a learned sink logit per head to each row's scores (gpt-oss): the softmax
    # keeps one column more, and the max subtracted before it keeps its int64 indices
    attention_sinks: bool = False
    shared_expert: bool = False  # MoE: an expert every token passes through as well
    # its gated MLP's width where the activation formula counts it (0: not counted yet), and whether a
    # sigmoid gate scales its output (Qwen2-MoE's shared_expert_gate: the output and the sigmoid are kept)
    shared_intermediate: int = 0
    shared_gate: bool = False
    # the routed experts run through transformers' grouped_mm kernel (@use_experts_implementation, the
    # default "grouped_mm"), which autocast does not cover: under AMP they compute at the fp32 weights'
    # width and keep no 16-bit copies of the expert matrices
    experts_grouped_mm: bool = False
    # every expert runs every token (Llama 4's Llama4TextMoe): the input is repeated once per expert and
    # scaled by its sigmoid router score (-inf, so 0, for the experts not in the top-k), and the experts
    # run as one bmm over all of them: E copies of the input and E experts' intermediates per token, no
    # gather indices; the sigmoid is taken in fp32
    experts_dense: bool = False
    # multi-head latent attention (DeepSeek V2/V3): q through a q_lora_rank latent and its RMSNorm (0: one
    # q projection), k and v through a kv_lora_rank latent and its RMSNorm, each head's q and k a nope part
    # and a rope part (mla_nope + mla_rope wide), v the spec's head_dim; 0 kv rank: not MLA
    mla_q_lora: int = 0
    mla_kv_lora: int = 0
    mla_rope: int = 0
    mla_nope: int = 0
    # the router casts its input to fp32 for an fp32 matmul (DeepSeek): at 16 bits the copy is kept
    router_fp32_input: bool = False
    # group-limited routing (DeepSeek): the experts in router_groups groups, int64 ids of
    # router_group_ids scores per group (V3: its top two, V2: its max) and of the router_topk_groups
    # groups kept, a bool mask per expert; 0 groups: plain top-k
    router_groups: int = 0
    router_group_ids: int = 0
    router_topk_groups: int = 0
    # the top-k weights are renormalised to sum to 1 (norm_topk_prob): the division keeps the fp32 sum
    # and the weights
    router_renorm: bool = False
    # layers that run a dense MLP of this width instead of the experts (DeepSeek's first
    # first_k_dense_replace, Llama 4's layers outside moe_layers): a layer's share of each is counted
    dense_layers: int = 0
    dense_intermediate: int = 0
    multipliers: bool = False  # Granite: embedding, residual, attention and logits scaled by constants
    # the share of each head RoPE rotates (partial_rotary_factor, GPT-NeoX's rotary_pct): the cos/sin
    # tables are rotary_fraction x head_dim wide
    rotary_fraction: float = 1.0
    # RoPE rotates a slice of q and k and joins it back with torch.cat (Phi, Phi-3, GPT-NeoX): q and k
    # leave it contiguous per head, so SDPA's output is too and the o-proj reads a transposed copy
    rope_concat: bool = False
    # RoPE as one complex64 table (Llama 4's freqs_cis, multiplied into q and k viewed as complex): d/2
    # complex numbers per position, 4·d B at any precision; the multiply keeps only the table (it needs
    # no gradient, so q and k are not kept for it)
    rope_complex: bool = False
    # cos/sin half a head wide, one entry per rotated pair, not repeated to d (gpt-oss's rotary embedding:
    # `emb = freqs`; its _apply_rotary_emb turns q's and k's two halves by the same half-width tables)
    rope_half_tables: bool = False
    # attention and MLP read the same residual input through their own norm (GPT-NeoX's
    # use_parallel_residual): the norms' shared input is saved once
    parallel_norms: bool = False
    # norms per layer whose output goes straight into the residual add (Gemma 2/3's post-attention and
    # post-feedforward norms): no matmul reads it, so its output is not saved
    post_norms: int = 0
    # the model hands each layer its attention mask as a positional argument (GPT-2's block): reentrant
    # full checkpointing saves a layer's positional tensors, so the materialised eager mask is kept
    # (b x 1 x s x s at the weights' dtype, once: every layer gets the same tensor)
    positional_mask: bool = False
    # the attention implementations transformers offers the family (eager always; sdpa where its
    # PreTrainedModel sets _supports_sdpa, flash where _supports_flash_attn): it runs sdpa when offered,
    # else eager, and sizing does the same (`default_attention`)
    attentions: tuple[str, ...] = ("eager", "sdpa", "flash")


#: families whose transformers model offers no SDPA path (Gemma 2: soft-capping; gpt-oss: sinks)
NO_SDPA = ("eager", "flash")


#: transformers' choice when none is asked for (PreTrainedModel._check_and_adjust_attn_implementation):
#: sdpa where the family offers it, else eager
DEFAULT_ATTENTIONS = ("sdpa", "eager")


def default_attention(mech: Mechanisms) -> str:
    """The attention implementation transformers runs for a family when none is asked for."""
    return next(a for a in DEFAULT_ATTENTIONS if a in mech.attentions)


def of(spec: object) -> Mechanisms:
    """The spec's declared mechanisms; a spec whose family declared none is refused, never guessed."""
    mech = getattr(spec, "mechanisms", None)
    if not isinstance(mech, Mechanisms):
        family = getattr(spec, "model_type", "?")
        raise SpecError(
            "model_type",
            family,
            "a family whose parser declares its mechanisms (aiworkbook/specs/families)",
            source=getattr(spec, "source", ""),
        )
    return mech


def rotary_fraction(cfg: dict[str, object], default: float, source: str = "") -> float:
    """The share of each head RoPE rotates, as the config gives it (partial_rotary_factor, GPT-NeoX's
    rotary_pct, or inside rope_parameters), else the family's `default`; refused outside (0, 1]."""
    params = cfg.get("rope_parameters")
    nested = params.get("partial_rotary_factor") if isinstance(params, dict) else None
    for key, value in (
        ("partial_rotary_factor", cfg.get("partial_rotary_factor")),
        ("rotary_pct", cfg.get("rotary_pct")),
        ("rope_parameters.partial_rotary_factor", nested),
    ):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
            raise SpecError(key, value, "a number in (0, 1]", source=source)
        return float(value)
    return default


__all__ = ["DEFAULT_ATTENTIONS", "NO_SDPA", "Mechanisms", "default_attention", "of", "rotary_fraction"]
