"""Training activations and loss memory: the bytes autograd keeps for backward, derived per architecture.

Each term names the tensor a Hugging Face module saves (checked against transformers' own
modules through `saved_tensors_hooks` in tests/test_sizing_activations.py). Per layer and token:

- RMSNorm saves its fp32 input, the normalised value, its output and 1/rms: 4h + 2·e·h + 4 B;
  LayerNorm saves input and output plus mean and rstd: 2·e·h + 8 B.
- Eager attention saves q, k, v after RoPE and GQA repetition (3·a·d·e), the softmax probabilities
  (a·s per token, fp32 when the family up-casts the softmax, plus its down-cast copy), dropout mask and
  dropped probabilities, and the o-proj input a·d·e. SDPA/flash keeps no s² term: q, k, v, the output
  (shared with the o-proj input) and a fp32 log-sum-exp per head.
- SwiGLU MLP saves gate, act(gate), up and their product: 4·I·e. GPT-2's `gelu_new` is a Python
  composition saving 4 tensors of I plus the c_proj input; a fused GELU saves 1 plus the c_proj input.
- Dropout masks are one byte on CUDA (bool) and full width on CPU (float).
- The loss keeps fp32 log-probabilities: 4·b·s·V (chunked: one chunk of 1024 tokens).

e is the activation width: 4 at fp32, 2 at 16-bit or mixed precision. b and s may be numpy arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiworkbook.sizing.states import width
from aiworkbook.sizing.workload import Workload

LOSS_CHUNK_TOKENS = 1024
_UPCAST_SOFTMAX = ("llama", "mistral", "mixtral", "qwen2", "gemma", "gemma2", "phi3")
_ROPE = _UPCAST_SOFTMAX + ("gpt_neox",)
_DROPOUT_DEFAULT = {"gpt2": 0.1, "bert": 0.1}


@dataclass(frozen=True)
class ActivationTerms:
    """Coefficients: bytes = L/t·(N·per_token_layer + N·s·per_token_score) + N·per_token + s·per_seq."""

    per_token_layer: int  # B per token per layer (no s² term)
    per_token_score: int  # B per token per layer per key position (the eager s² term)
    per_token: int  # B per token outside the layers (ids, labels, final norm, embedding dropout)
    per_seq_position: int  # B per position shared by the batch (RoPE cos/sin, position ids)
    recompute_input: int  # B per token per layer a fully checkpointed layer keeps (its input)
    parts: str  # the per-layer terms, for the formula


def dropout_p(spec, w: Workload) -> float:
    return w.dropout if w.dropout is not None else _DROPOUT_DEFAULT.get(spec.model_type, 0.0)


def terms(spec, w: Workload, device: str = "cuda") -> ActivationTerms:
    e = width(w.precision)
    p = dropout_p(spec, w)
    m = (1 if device == "cuda" else e) if p > 0 else 0  # dropout mask bytes per element
    h, a, k, d, i = spec.hidden_size, spec.num_heads, spec.num_kv_heads, spec.head_dim, spec.intermediate_size
    mt = spec.model_type

    if spec.norm == "rmsnorm":
        norm, norm_txt = 4 * h + 2 * e * h + 4, f"4·{h} + 2·{e}·{h} + 4"
    else:
        norm, norm_txt = 2 * e * h + 8, f"2·{e}·{h} + 8"

    # CPU's flash kernel cannot take dropout: torch falls back to the math path (eager's tensors).
    flash = w.flash and not (device == "cpu" and p > 0)
    score = 0
    if flash:
        if mt == "gpt2":  # q, k, v are views of the fused c_attn output; CPU copies k and v
            attn = 3 * h * e + (2 * k * d * e if device == "cpu" else 0) + a * d * e + 4 * a
            attn_txt = (
                f"3·{h}·{e} qkv"
                + (f" + 2·{k}·{d}·{e}" if device == "cpu" else "")
                + f" + {a}·{d}·{e} out + 4·{a} lse"
            )
        else:
            attn = (a * d + 2 * k * d) * e + a * d * e + 4 * a
            attn_txt = f"({a}·{d} + 2·{k}·{d} + {a}·{d} out)·{e} + 4·{a} lse"
    else:
        attn = 4 * a * d * e  # q, k, v (GQA repeated), o-proj input
        sm = 4 + e if (mt in _UPCAST_SOFTMAX and e != 4) else e
        score = a * (sm + ((m + e) if p > 0 else 0))
        attn_txt = f"4·{a}·{d}·{e} + {a}·s·{score // a}"
    if spec.num_experts:
        mlp_n = 4 * spec.experts_per_token
        mlp = mlp_n * i * e + 8 * spec.num_experts
        mlp_txt = f"{spec.experts_per_token}·4·{i}·{e} + router"
    elif spec.gated_mlp:
        mlp, mlp_txt = 4 * i * e, f"4·{i}·{e}"
    elif mt == "gpt2":
        mlp, mlp_txt = 5 * i * e, f"5·{i}·{e} (gelu_new)"
    else:
        mlp, mlp_txt = 2 * i * e, f"2·{i}·{e}"
    drop = 2 * h * m
    layer = spec.norms_per_layer * norm + attn + mlp + drop
    if w.mode in ("lora", "qlora"):
        layer += len(w.lora_targets) * w.lora_rank * e
    parts = f"{spec.norms_per_layer}·({norm_txt}) + {attn_txt} + {mlp_txt}" + (
        f" + 2·{h}·{m} masks" if m else ""
    )

    per_token = norm + 8 + (h * m)  # final norm, input ids, embedding dropout mask
    if spec.is_decoder:
        per_token += 8  # shifted labels
    per_seq = 8 if spec.learned_positions else 0
    if mt in _ROPE:
        per_seq += 2 * d * e
    return ActivationTerms(layer, score, per_token, per_seq, h * e, parts)


def activation_bytes(spec, w: Workload, b, s, device: str = "cuda"):
    """Saved-for-backward bytes of the layers and embeddings (not the loss) for batch b, length s."""
    t = terms(spec, w, device)
    n = b * s
    full_layer = n * t.per_token_layer + n * s * t.per_token_score
    if w.checkpointing == "selective":
        full_layer = n * t.per_token_layer
    if w.checkpointing == "full":
        layers = spec.num_layers * n * t.recompute_input + full_layer  # inputs + one layer recomputed
    else:
        layers = spec.num_layers * full_layer
    return layers // w.tp + n * t.per_token + s * t.per_seq_position


def logits_bytes(spec, w: Workload, b, s):
    """The loss's fp32 log-probabilities kept for backward (one chunk when the loss is chunked)."""
    if not spec.is_decoder:
        return 0 * b
    n = b * s
    if w.chunked_loss:
        n = n.clip(max=LOSS_CHUNK_TOKENS) if hasattr(n, "clip") else min(n, LOSS_CHUNK_TOKENS)
    return 4 * n * spec.vocab_size // w.tp + 4


#: vLLM's max_num_batched_tokens (API server on a large GPU) and TensorRT-LLM's max_num_tokens default.
ENGINE_BATCHED_TOKENS = 8192


def prefill_tokens(w: Workload, batch, seq):
    """Prompt tokens one prefill forward holds: every prompt at once (hf), or the engine's token budget.

    vLLM and TensorRT-LLM reserve the peak of a profile forward of max_num_batched_tokens tokens,
    whatever the concurrency; plain PyTorch (`hf`) prefills all sequences together unless capped.
    """
    if w.engine != "hf":
        return (w.max_batched_tokens or ENGINE_BATCHED_TOKENS) + 0 * batch * seq
    n = batch * seq
    if w.max_batched_tokens is None:
        return n
    return n.clip(max=w.max_batched_tokens) if hasattr(n, "clip") else min(n, w.max_batched_tokens)


def inference_activation_bytes(spec, w: Workload, batch, seq):
    """Peak transient of one layer during prefill (nothing is kept for backward)."""
    e = width(w.precision)
    h, a, k, d, i = spec.hidden_size, spec.num_heads, spec.num_kv_heads, spec.head_dim, spec.intermediate_size
    n = prefill_tokens(w, batch, seq)
    mlp = (3 if spec.gated_mlp else 2) * i * max(1, spec.experts_per_token)
    per_tok = (2 * h + a * d + 2 * k * d + mlp) * e
    # eager (hf only: engines run fused attention) materialises fp32 scores: n queries x seq keys
    scores = n * a * seq * 4 if (w.engine == "hf" and not w.flash) else 0
    return (n * per_tok + scores) // w.tp


def inference_logits_bytes(spec, w: Workload, batch):
    """Last-position logits in fp32 for sampling, one row per sequence."""
    return 4 * batch * spec.vocab_size


def formulas(spec, w: Workload, b: int, s: int, device: str) -> tuple[str, str]:
    t = terms(spec, w, device)
    n = b * s
    L = spec.num_layers
    tp = f" / {w.tp} tp" if w.tp > 1 else ""
    score = f" + {n:,}·{s}·{t.per_token_score} B scores" if t.per_token_score else ""
    if w.checkpointing == "full":
        core = (
            f"{L} layers · {n:,} tokens · {t.recompute_input} B inputs + one layer recomputed "
            f"({n:,} · {t.per_token_layer:,} B{score})"
        )
    elif w.checkpointing == "selective":
        core = f"{L} layers · {n:,} tokens · {t.per_token_layer:,} B [{t.parts}], scores recomputed"
    else:
        core = f"{L} layers · ({n:,} tokens · {t.per_token_layer:,} B [{t.parts}]{score})"
    act = (
        f"{core}{tp} + {n:,} · {t.per_token} B ids/labels/final norm + {s} · {t.per_seq_position} B positions"
    )
    if not spec.is_decoder:
        return act, "0 (encoder: no LM head loss)"
    if w.chunked_loss:
        lg = f"4 B · min({n:,}, {LOSS_CHUNK_TOKENS}) tokens · {spec.vocab_size:,} vocab (chunked loss){tp}"
    else:
        lg = f"4 B · {b} seqs · {s} tokens · {spec.vocab_size:,} vocab (fp32 log-probs){tp}"
    return act, lg
