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

Fine-tuning options (each removes a named tensor, never a share):

- `compile` (torch.compile, Inductor's partitioner): an element-wise chain is fused; what a matmul or
  SDPA reads is still saved (their backward reads it and they cannot fuse with its producer), the
  chain's inputs and statistics are saved, and the intermediates inside the chain are recomputed. RMSNorm
  keeps its 16-bit input, fp32 1/rms and its output (2·e·h + 4: the fp32 up-cast copy goes), SwiGLU
  keeps gate, up and the product (3·I·e: act(gate) goes), a GELU MLP its fc output and the activation
  (gelu_new's inner tensors go); under AMP the norm's fp32 normalised value goes (its 16-bit casts stay:
  matmuls read them). q, k, v, the attention output and the log-sum-exp stay (SDPA's inputs).
  `compile_loss=False` compiles the layers only: the loss keeps its eager tensors (torchtune's full
  fine-tuning recipe at the 3B README's commit drops `compile_loss`'s return value, so an unchunked
  `nn.CrossEntropyLoss` ran eager in its "+ Compile" row; a chunked loss is compiled in place).
- `kv_repeat`: k and v are copied to every query head before SDPA/flex attention (torchtune's
  MultiHeadAttention expands and flattens them when num_heads != num_kv_heads), so attention saves the
  copies: 2·a·d·e instead of 2·k·d·e per token per layer (the un-repeated k and v are not saved: RoPE's
  multiply keeps its cos/sin, expand and flatten keep nothing; with one KV head the flatten is a view, no
  copy). Eager attention counts the repeat already. Exact against transformers' Llama with k and v
  repeated before SDPA (tests/test_sizing_finetune.py).
- `activation_offload`: saved tensors go to host memory; the GPU keeps the layers in flight (the one
  being copied out or prefetched and the one computing: IN_FLIGHT_LAYERS) and the recomputed layer.
- `loss_chunks` C (torchtune's CEWithChunkedOutputLoss, 8): the head's 16-bit output is split along
  the sequence and each chunk is up-cast to fp32 alone. Eager, every chunk's fp32 log-probs are still
  saved (4·n·V) and only the backward transient shrinks to one chunk; compiled, the chunk's up-cast is
  recomputed in backward, so the 16-bit logits (e·n·V) are kept and one chunk's fp32 gradient is the
  transient (4·n/C·V).

e is the activation width: 4 at fp32, 2 at 16-bit or mixed precision. b and s may be numpy arrays.

PyTorch AMP (fp32 working weights under torch.autocast, the `fp32-adamw` recipe at a `*-mixed`
precision) saves mixed widths, measured with `saved_tensors_hooks` on transformers' Llama and GPT-2 and
on the proof kit's decoder (tests/test_sizing_amp.py):

- Every matmul casts its fp32 weight to 16 bits and saves the copy: 2 B per matrix parameter of each
  layer plus 2·V·h for the LM head (tied or not), per micro-batch, independent of tokens. Biases are
  cast but not saved. Full checkpointing keeps only the recomputed layer's copies and the head's.
- The embeddings, the residual stream and the norms stay fp32 (the weights are fp32): RMSNorm saves
  its fp32 input and normalised value (8h + 4), LayerNorm its fp32 input (4h + 8), and each linear that
  reads a norm's fp32 output saves its own 16-bit cast of it: 2h per consumer (Llama q, k, v, gate, up
  and GPT-2's fused c_attn, c_fc), plus 2h for the head. A fully checkpointed layer keeps a 4h input.
- Matmul outputs are 16-bit, so q/k/v, SwiGLU and attention outputs keep width 2; RoPE's cos/sin are
  fp32 (2·d·4 per position); eager softmax runs in fp32 (fp32 mask or explicit dtype) and the 16-bit
  copy feeds the next matmul: a·s·(4 + 2) per token.
- CUDA autocast runs `pow` in fp32, CPU autocast does not: GPT-2's `gelu_new` saves 16·I B on CUDA
  (fp32 cast of the input, fp32 tanh, fp32 1 + tanh, 16-bit 0.5·x, a 16-bit cast for c_proj) and 10·I
  on CPU. `device` selects which list is modelled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiworkbook.message import Joined, Msg
from aiworkbook.sizing.expr import Term
from aiworkbook.sizing.states import recipe_bytes, width
from aiworkbook.sizing.workload import Workload
from aiworkbook.specs.mechanisms import of as mechanisms

if TYPE_CHECKING:
    from aiworkbook.sizing.expr import Num
    from aiworkbook.specs.protocol import ModelSpecLike

LOSS_CHUNK_TOKENS = 1024
#: Layers whose saved tensors stay on the GPU under activation offloading: one copied out (or prefetched
#: back) on the side stream while the next one computes (torchtune's OffloadActivations, use_streams).
IN_FLIGHT_LAYERS = 2


@dataclass(frozen=True)
class ActivationTerms:
    """Coefficients: bytes = L/t·(N·per_token_layer + N·s·per_token_score) + N·per_token + s·per_seq."""

    per_token_layer: int  # B per token per layer (no s² term)
    per_token_score: int  # B per token per layer per key position (the eager s² term)
    per_token: int  # B per token outside the layers (ids, labels, final norm, embedding dropout)
    per_seq_position: int  # B per position shared by the batch (RoPE cos/sin, position ids)
    recompute_input: int  # B per token per layer a fully checkpointed layer keeps (its input)
    parts: Msg  # the per-layer terms, for the formula
    layer_copies: int = 0  # B per layer: autocast's 16-bit copies of its fp32 matrices (AMP only)
    head_copy: int = 0  # B: autocast's 16-bit copy of the LM head matrix (AMP only)
    head_input: int = 0  # B per token: the head's 16-bit cast of the fp32 final-norm output (AMP only)
    selective_extra: int = 0  # B per token per layer: AMP keeps RoPE'd q and k in fp32 at the checkpoint
    first_layer_free: int = 0  # B per token LoRA's first layer does not record before its first adapter
    # SDPA given a materialised mask (a sliding layer when s > window): per such layer, B per token
    # (k and v repeated to every query head) and B per token per key position (the mask at width e)
    window_layers: int = 0
    window: int = 0
    window_per_token: int = 0
    window_per_key: int = 0
    # full checkpointing, eager attention, a mask the layers take positionally (Mechanisms.positional_mask):
    # B per token per key position of the one mask every checkpointed layer keeps as its input
    ckpt_mask_per_key: int = 0


def autocast_fp32_weights(w: Workload) -> bool:
    """PyTorch AMP: fp32 working weights under torch.autocast (a *-mixed precision with 4-byte weights).

    16-bit working-weight recipes (megatron-bf16, zero-mixed, pure-bf16, ...) are not this regime:
    their matmuls need no casts and their activations are uniformly 16-bit."""
    return (
        w.mode == "train" and w.precision.endswith("-mixed") and recipe_bytes(w.recipe, w.precision)[0] == 4
    )


def layer_matrix_params(spec: ModelSpecLike) -> int:
    """Matrix parameters of one layer (attention, MLP or every expert, router, a shared expert): what
    autocast copies. Experts that run through grouped_mm are not copied (Mechanisms.experts_grouped_mm)."""
    h, a, k, d, i = spec.hidden_size, spec.num_heads, spec.num_kv_heads, spec.head_dim, spec.intermediate_size
    mech, mats = mechanisms(spec), 3 if spec.gated_mlp else 2
    copied = 0 if mech.experts_grouped_mm and spec.num_experts else max(1, spec.num_experts)
    mlp = mats * h * i * copied + h * spec.num_experts + 3 * h * mech.shared_intermediate
    if mech.dense_layers and spec.num_experts:  # a layer's share of the dense layers' MLP matrices
        L, dl = spec.num_layers, mech.dense_layers
        mlp = (mlp * (L - dl) + mats * h * mech.dense_intermediate * dl) // L
    if mech.mla_kv_lora:  # q (through its latent), the kv latent with the rope key, kv_b, o
        rq, rk, dqk = mech.mla_q_lora, mech.mla_kv_lora, mech.mla_nope + mech.mla_rope
        q = h * rq + rq * a * dqk if rq else h * a * dqk
        return q + h * (rk + mech.mla_rope) + rk * a * (mech.mla_nope + d) + a * d * h + mlp
    return h * a * d + 2 * h * k * d + a * d * h + mlp


def dropout_p(spec: ModelSpecLike, w: Workload) -> float:
    if w.dropout is not None:
        return w.dropout
    if spec.dropout is not None:  # the config's own probabilities decide
        return spec.dropout
    return mechanisms(spec).dropout_default


def _frozen_base_drops(spec: ModelSpecLike, w: Workload, e: int, fused: bool) -> tuple[int, int, str]:
    """LoRA/QLoRA: bytes per token per layer (and outside the layers) autograd does not save because the
    base is frozen. A matmul saves its input only for its weight's gradient, so a frozen projection
    without an adapter keeps nothing (an adapter's A reads the same tensor and keeps it); a frozen
    RMSNorm weight does not keep the normalised value it multiplies; the frozen embedding keeps no ids
    and the frozen head no final-norm output. Pre-norm dense blocks; MoE experts are left as trained."""
    if w.mode not in ("lora", "qlora"):
        return 0, 0, ""
    mods = set(w.lora_modules(spec))
    h, i = spec.hidden_size, spec.intermediate_size
    mid = e * h if spec.norm == "rmsnorm" and not fused else 0  # the normalised value the weight scales
    layer = spec.norms_per_layer * mid
    if spec.norms_per_layer == 2 and not mechanisms(spec).fused_qkv:  # q/k/v adapted apart
        if not mods & {"q_proj", "k_proj", "v_proj"}:
            layer += e * h  # the first norm's output: only frozen q, k, v read it
        if not mods & {"gate_proj", "up_proj"}:
            layer += e * h  # the second norm's output: only frozen gate/up read it
        if not spec.num_experts and "down_proj" not in mods:
            layer += i * e  # the tensor the down projection reads
    token = mid + e * h + 8  # final norm's normalised value and output (frozen head), input ids
    return layer, token, "term.frozen_drops"


def _grad_free_prefix(spec: ModelSpecLike, w: Workload, norm: int, attn: int, mlp: int, e: int) -> int:
    """LoRA/QLoRA: bytes per token the first layer does not save before its first adapter. The frozen
    embedding's output needs no gradient, so nothing upstream of the first adapter is recorded: the
    first norm's internals (q/k/v adapters), the attention too (o_proj), the second norm's internals
    (gate/up), the MLP but the tensor down's adapter reads (down_proj). Pre-norm dense blocks only."""
    if w.mode not in ("lora", "qlora") or spec.norms_per_layer != 2 or mechanisms(spec).fused_qkv:
        return 0
    if spec.num_experts:
        return 0
    mods = set(w.lora_modules(spec))
    h, a, d, i = spec.hidden_size, spec.num_heads, spec.head_dim, spec.intermediate_size
    mid = e * h if spec.norm == "rmsnorm" and not w.compile else 0
    inner = norm - mid - e * h  # input and statistics of a norm
    if mods & {"q_proj", "k_proj", "v_proj"}:
        return inner
    if "o_proj" in mods:  # the attention output copy o_proj's adapter reads stays
        return inner + attn - a * d * e
    if mods & {"gate_proj", "up_proj"}:
        return inner + attn + inner
    return inner + attn + inner + mlp - i * e  # down_proj: only the tensor it reads


def _dot(*factors: int, note: str | None = None) -> Term:
    """The product of `factors` written tight ("2·2·4096"), the last one said by message `note`."""
    out = Term(factors[0], note if len(factors) == 1 else None)
    for k, f in enumerate(factors[1:], 2):
        out = out.tight(Term(f, note if k == len(factors) else None))
    return out


def _norm_term(
    h: int, e: int, amp: bool, fused: bool, rms: bool, fp32_scale: bool = False
) -> tuple[int, Msg]:
    """Bytes one norm saves per token, and its formula (`fp32_scale`: the weight scales the fp32
    normalised value, which is kept at 4 B instead of a copy at the activation width)."""
    if fused:  # input and fp32 statistics; the output only where a matmul reads it (not under AMP: casts)
        if amp:
            t = _dot(4, h) + Term(4 if rms else 8, "term.n_compiled")
        else:
            t = _dot(2, e, h) + Term(4 if rms else 8, "term.n_compiled")
        return t.value, t.text
    if rms:  # AMP: fp32 input + fp32 normalised (no up-cast copy, output not saved)
        if fp32_scale and not amp:  # fp32 input, fp32 normalised value, the output at width e
            t = _dot(8, h) + _dot(e, h) + Term(4)
        else:  # AMP: e is 2, 4h + 2·2·h is 8h
            t = (_dot(8, h) if amp else _dot(4, h) + _dot(2, e, h)) + Term(4)
        return t.value, t.text
    # AMP: fp32 input + mean/rstd (the fp32 output is not saved: its readers save casts)
    t = (_dot(4, h) if amp else _dot(2, e, h)) + Term(8)  # AMP: 2·2·h is 4h
    return t.value, t.text


def _attention_term(
    spec: ModelSpecLike, w: Workload, device: str, e: int, m: int, p: float, amp: bool
) -> tuple[int, int, Msg]:
    """(bytes per token, score bytes per token per key, formula) that attention saves in one layer."""
    a, k, d, mech = spec.num_heads, spec.num_kv_heads, spec.head_dim, mechanisms(spec)
    h = spec.hidden_size
    if mech.mla_kv_lora:
        return _mla_term(spec, w, device, e, m, p, amp)
    # CPU's flash kernel cannot take dropout: torch falls back to the math path (eager's tensors).
    flash = w.flash(spec) and not (device == "cpu" and p > 0)
    score, score_note = 0, None
    if flash:
        if mech.fused_qkv and not mech.rope:
            # q, k, v are views of the fused c_attn output. A training step runs without a KV cache:
            # transformers' GPT-2 with its default use_cache=True also keeps contiguous k and v copies
            # (+2·k·d·e per token per layer); pass use_cache=False when training.
            attn_t = (
                _dot(3, h, e, note="term.dot.qkv")
                + _dot(a, d, e, note="term.dot.out")
                + _dot(4, a, note="term.dot.lse")
            )
        else:
            # repeated to every query head first: the copies are saved (one KV head: a stride-0 view)
            kv = a if w.kv_repeat and k > 1 else k
            rep = "term.dot.repeated" if w.kv_repeat and kv != k else None
            if mech.fused_qkv and kv == k:  # RoPE makes new q and k; v stays a view of the fused output
                qkvo = _dot(a, d) + _dot(k, d) + _dot(a + 2 * k, d, note="term.dot.v_fused_qkv")
                qkvo = qkvo + _dot(a, d, note="term.dot.out")
            else:
                qkvo = _dot(a, d) + _dot(2, kv, d, note=rep) + _dot(a, d, note="term.dot.out")
            if mech.rope_concat:  # q leaves torch.cat head-major: SDPA's output too, the o-proj a copy
                qkvo = qkvo + _dot(a, d, note="term.dot.o_proj_copy")
            attn_t = qkvo.tight(Term(e)) + _dot(4, a, note="term.dot.lse")
    elif w.flash(spec):  # CPU math fallback (dropout): it up-casts 16-bit inputs to fp32 on CPU (AMP or pure)
        attn_t = _dot(3, a, d, 4) + _dot(a, d, e)  # scaled q, scaled k, v in fp32; the 16-bit o-proj input
        if mech.fused_qkv and k == a and e == 4 and w.batch == 1:  # fp32 v is not up-cast: a view of the
            attn_t = attn_t + _dot(2, a, d, e, note="term.dot.v_keeps_fused")  # fused output (see eager)
        score = a * 3 * 4  # fp32 probabilities, dropout mask and dropped probabilities
        score_note = Msg("term.score.cpu_math")
    else:
        attn_t = _dot(4, a, d, e)  # q, k, v (GQA repeated), o-proj input
        # v not repeated stays a view of the fused qkv output; torch.matmul folds batch and heads into
        # one dimension, which a view survives only at batch 1 (else it saves a contiguous copy)
        if mech.fused_qkv and mech.rope and k == a and w.batch == 1:
            attn_t = attn_t + _dot(2, a, d, e, note="term.dot.v_keeps_fused")
        if amp:
            # eager under autocast: fp32 softmax (the fp32 mask promotes it, or an explicit dtype), then
            # the 16-bit copy the next matmul reads; with dropout the mask and the dropped 16-bit probs
            # (RoPE families drop the fp32 probs: a 4-byte mask on CPU)
            mw = (1 if device == "cuda" else (4 if mech.rope else 2)) if p > 0 else 0
            score = a * (4 + mw + e)
        else:
            sm = 4 + e if (mech.softmax_fp32 and e != 4) else e
            score = a * (sm + ((m + e) if p > 0 else 0))
        if mech.attn_softcap:  # scores / cap -> tanh -> * cap: tanh keeps its output for backward
            score += a * e
            score_note = Msg("term.score.softcap")
        if mech.attention_sinks:  # the sink's column of the softmax (fp32 under autocast: the fp32 sink
            # promotes the scores) and the int64 indices of the row max subtracted before it
            sink = 4 if amp else (4 if mech.softmax_fp32 else e)
            attn_t = attn_t + _dot(a, sink + 8, note="term.dot.sinks")
    if mech.qk_norm and not w.compile:
        norms = _qk_norm_term(spec, mech.qk_norm, 4 if mech.norm_fp32_scale else e)
        if mech.qk_norm_rope_only and mech.no_rope_layers:  # a layer's share: the RoPE layers' norms
            L, roped = spec.num_layers, spec.num_layers - mech.no_rope_layers
            every = norms
            norms = Term(every.value * roped // L, render=lambda: every.text).said(
                Msg("term.rope_layers_only", n=roped, layers=L)
            )
        attn_t = attn_t + norms
    # the score term is per key position: said beside the layer's bytes, counted apart (per_token_score)
    if not score:
        return attn_t.value, score, attn_t.text
    said = Joined(" + ", Msg("term.n", n=a), "·s·", Msg("term.n", n=score // a))
    return attn_t.value, score, Joined(attn_t.text, said, *((" ", score_note) if score_note else ()))


def _mla_term(
    spec: ModelSpecLike, w: Workload, device: str, e: int, m: int, p: float, amp: bool
) -> tuple[int, int, Msg]:
    """`_attention_term` for multi-head latent attention (DeepSeek's, transformers' DeepseekV3Attention):
    the q latent's and the kv latent's RMSNorms (at fp32 the kv norm's input is a view of the projection
    output, whose rope columns it keeps too), then per head q and k of nope + rope width (torch.cat and
    a new tensor: both kept), v a view of kv_b_proj's output (its k columns kept with it) and the
    o-proj input. PyTorch's CPU SDPA has no fused kernel for a v narrower than q and k: it runs the math
    path, which keeps q, k and v up-cast to fp32 and the fp32 probabilities."""
    mech = mechanisms(spec)
    a, dv, dr, dn = spec.num_heads, spec.head_dim, mech.mla_rope, mech.mla_nope
    rq, rk, dqk = mech.mla_q_lora, mech.mla_kv_lora, mech.mla_nope + mech.mla_rope
    kv_norm = _norm_term(rk, e, False, w.compile, True)[0] + (4 * dr if e == 4 and not w.compile else 0)
    norms = Term(kv_norm, "term.mla_kv_norm")
    if rq:
        norms = Term(_norm_term(rq, e, False, w.compile, True)[0], "term.mla_q_norm") + norms
    v_kept = a * (dn + dv) * e  # v is a view of kv_b_proj's output: the whole output is kept
    score, score_note = 0, None
    math = device == "cpu" and dqk != dv and w.attention_for(spec) == "sdpa"
    if math:  # q, k and v at fp32 (16-bit ones up-cast: copies; fp32 v stays the view) and fp32 probs
        v32 = v_kept if e == 4 else 4 * a * dv
        attn_t = _dot(2, a, dqk, 4) + Term(v32, "term.dot.v_kept") + _dot(a, dv, e, note="term.dot.out")
        score, score_note = a * 4, Msg("term.score.cpu_math")
    elif w.flash(spec):
        attn_t = (
            _dot(2, a, dqk, e)
            + Term(v_kept, "term.dot.v_kept")
            + _dot(a, dv, e, note="term.dot.out")
            + _dot(4, a, note="term.dot.lse")
        )
    else:
        attn_t = _dot(2, a, dqk, e) + Term(v_kept, "term.dot.v_kept") + _dot(a, dv, e, note="term.dot.out")
        if amp:
            score = a * (4 + ((1 if device == "cuda" else 4) if p > 0 else 0) + e)
        else:
            sm = 4 + e if (mech.softmax_fp32 and e != 4) else e
            score = a * (sm + ((m + e) if p > 0 else 0))
    attn_t = norms + attn_t
    if not score:
        return attn_t.value, score, attn_t.text
    said = Joined(" + ", Msg("term.n", n=a), "·s·", Msg("term.n", n=score // a))
    return attn_t.value, score, Joined(attn_t.text, said, *((" ", score_note) if score_note else ()))


def _qk_norm_term(spec: ModelSpecLike, kind: str, e: int) -> Term:
    """Bytes per token a q/k norm saves (transformers' RMSNorm on q and k before RoPE): the fp32 input
    `pow` reads, 1/rms per normalised row, and (a weighted norm) the normalised value its weight scales,
    cast back to the activation width. "head": one row per head; "all": one row for all of q, one for k;
    "l2": weightless (Llama 4), no scaled copy."""
    a, k, d = spec.num_heads, spec.num_kv_heads, spec.head_dim
    rows = 2 if kind == "all" else a + k
    per = 4 if kind == "l2" else 4 + e
    return _dot(per, a + k, d, note="term.dot.qk_norms") + _dot(4, rows, note="term.dot.qk_rms")


#: B of int64 indices grouped_mm experts keep per (token, expert) pair: perm // top_k, perm, inv_perm
_GATHER_IDS = 3 * 8


def _router_term(spec: ModelSpecLike, e: int, amp: bool = False) -> Term:
    """Bytes per token an MoE layer's routing saves (transformers' top-k router and expert loop): the
    fp32 router softmax (4·E), the top-k indices (8·k), and per chosen expert the gathered input its
    first matmul reads, the expert output and routing weight the weighting multiply keeps, and the
    three int64 indices transformers' grouped_mm experts keep per (token, expert) pair: the token each
    sorted pair reads (`perm // top_k`), the sort order its routing weight is gathered by (`perm`) and
    the order that puts the outputs back (`inv_perm`): k·(2·e·h + e + 24); biased experts gather their
    bias rows by the sorted expert ids, kept too (integrations/moe.py, grouped_mm_experts_forward)."""
    E, top, h = spec.num_experts, spec.experts_per_token, spec.hidden_size
    if mechanisms(spec).experts_dense:  # fp32 sigmoid over every expert; per expert the copy of the
        # input its score scales and the score (the multiply keeps both), and the scaled input the bmm
        # reads (under AMP the copy is of the fp32 norm output, and the bmm keeps its cast: a cast)
        router = _dot(4, E, note="term.dot.router_sigmoid") + _dot(8, top, note="term.dot.topk_ids")
        per = 4 * h + e if amp else 2 * e * h + e
        return router + _dot(E, per, note="term.dot.expert_inputs")
    mech = mechanisms(spec)
    if mech.router_fp32_input or mech.router_groups or mech.router_renorm:  # DeepSeek's router
        G = mech.router_groups
        router = _dot(4, E, note="term.dot.router_sigmoid") + _dot(8, top, note="term.dot.topk_ids")
        if mech.router_fp32_input and e != 4 and not amp:  # under AMP the input is fp32 already
            router = _dot(4, h, note="term.dot.router_fp32_input") + router
        if G:
            group_ids = _dot(
                8, G * mech.router_group_ids + mech.router_topk_groups, note="term.dot.group_ids"
            )
            router = router + group_ids + _dot(1, E, note="term.dot.group_mask")
        if mech.router_renorm:
            router = router + _dot(4, top + 1, note="term.dot.router_renorm")
        return router + _dot(top, 2 * e * h + e + _GATHER_IDS, note="term.dot.expert_gathers")
    if mech.router_topk_first:  # softmax over the k chosen logits, at their width
        router = _dot(e, top, note="term.dot.router_softmax") + _dot(8, top, note="term.dot.topk_ids")
    else:
        router = _dot(4, E, note="term.dot.router_softmax") + _dot(8, top, note="term.dot.topk_ids")
    # biased experts gather their bias rows by the sorted expert ids: those ids are kept too
    ids = _GATHER_IDS + (8 if spec.mlp_bias else 0)
    gathers = _dot(top, 2 * e * h + e + ids, note="term.dot.expert_gathers")
    return router + gathers


def _mlp_term(spec: ModelSpecLike, device: str, e: int, amp: bool, fused: bool) -> tuple[int, Msg, int]:
    """(bytes per token, formula, autocast casts) of one layer's MLP; the casts exclude attention's."""
    i, h, mech = spec.intermediate_size, spec.hidden_size, mechanisms(spec)
    # compiled: a gated MLP keeps gate, up and the product the down projection reads (act(gate) is
    # recomputed), a GELU MLP its fc output and the activation the down projection reads
    per_mlp = (3 if spec.gated_mlp else 2) if fused else (4 if spec.gated_mlp else 2)
    if mech.activation == "clamped_swiglu" and not fused:  # gate_up, clamped gate, sigmoid, their
        per_mlp = 7  # product, up + 1, the gated output (and the down input it is)
    if spec.num_experts:
        # grouped_mm experts under autocast: the fp32 weights' width, no casts of their inputs
        grouped = amp and mech.experts_grouped_mm
        ex = 4 if grouped else e
        routing = (
            _router_term(spec, ex, amp)
            if mech.router and not fused
            else Term(8 * spec.num_experts, "term.router")
        )
        note = "term.dot.grouped_mm" if grouped else None
        runs = spec.num_experts if mech.experts_dense else spec.experts_per_token  # experts per token
        mlp_t = _dot(runs, per_mlp, i, ex, note=note) + routing
        # router + each expert's gate, up (one gate_up bmm when every expert runs every token)
        casts = 1 + (0 if grouped else (1 if mech.experts_dense else 2) * runs)
        if mech.shared_intermediate:  # every token's shared expert: a gated MLP of its own width
            mlp_t = mlp_t + _dot(per_mlp, mech.shared_intermediate, e, note="term.dot.shared_expert")
            casts += 2
            if mech.shared_gate:  # sigmoid(gate(x)) * shared(x): the multiply keeps both factors
                mlp_t = mlp_t + _dot(spec.hidden_size + 1, e, note="term.dot.shared_gate")
                casts += 1
    elif spec.gated_mlp:
        mlp_t = _dot(per_mlp, i, e)
        casts = 2  # gate, up
    elif mech.activation == "gelu_new" and not fused:  # composed in Python: its inner tensors saved
        if amp and device == "cuda":  # CUDA autocast runs pow in fp32 (CPU does not)
            mlp_t = _dot(16, i, note="term.dot.gelu_cuda")
        else:
            mlp_t = _dot(5, i, e, note="term.dot.gelu_new")
        casts = 1  # c_fc
    else:
        mlp_t = _dot(per_mlp, i, e)
        casts = 1  # fc1 / c_fc
    if mech.dense_layers and spec.num_experts:  # the dense layers' MLP: a layer's share of each
        L, dl = spec.num_layers, mech.dense_layers
        dense = _dot(per_mlp, mech.dense_intermediate, e)
        # under autocast each kind casts the norm output for its own readers (terms() adds the MoE
        # layer's casts to every layer: the dense layers' gate and up are counted here in their place)
        moe_casts, dense_casts = (2 * h * casts, 2 * h * 2) if amp else (0, 0)
        moe_t, shared = mlp_t, (mlp_t.value + moe_casts) * (L - dl) + (dense.value + dense_casts) * dl
        mlp_t = Term(shared // L - moe_casts, render=lambda: moe_t.text).said(
            Msg("term.dense_layers_share", n=dl, layers=L, dense=dense.value)
        )
    if fused:
        mlp_t = mlp_t.said(Msg("term.compiled"))
    return mlp_t.value, mlp_t.text, casts


def _per_token_and_seq(
    spec: ModelSpecLike,
    e: int,
    m: int,
    p: float,
    amp: bool,
    norm: int,
    frozen_token: int,
    device: str,
    tables: bool = True,
) -> tuple[int, int]:
    """Bytes saved once per token (final norm, ids, embedding mask, labels) and once per sequence.

    `tables`: the layers' per-position tables (RoPE's cos/sin or complex table, Llama 4's NoPE
    temperature) are kept. Not under transformers' full checkpointing: GradientCheckpointingLayer hands
    the checkpoint its keyword arguments bound in a partial (modeling_layers.py), so the reentrant
    checkpoint keeps none of them (position_embeddings is one), and the layers run without grad; the
    recomputed layer saves its tables again, a transient of the one layer in backward."""
    h, d = spec.hidden_size, spec.head_dim
    emb_mask = (1 if device == "cuda" else 4) if (amp and p > 0) else m  # AMP embeddings are fp32
    per_token = norm + 8 + (h * emb_mask) - frozen_token  # final norm, input ids, embedding dropout mask
    if spec.is_decoder:
        per_token += 8  # shifted labels
    per_seq = 8 if spec.learned_positions else 0
    mech = mechanisms(spec)
    if not tables:
        return per_token, per_seq
    if mech.nope_temperature:  # each NoPE layer's fp32 q scale per position
        per_seq += 4 * mech.no_rope_layers
    rotated = mech.mla_rope or d  # MLA rotates its rope part alone
    if mech.rope_complex:  # one complex64 table: d/2 complex numbers of 8 B at any precision
        per_seq += 4 * int(rotated * mech.rotary_fraction)
    elif mech.rope:  # cos/sin at the embeddings' dtype (fp32 under AMP), as wide as the rotated slice
        wide = int(rotated * mech.rotary_fraction) // (2 if mech.rope_half_tables else 1)
        per_seq += 2 * wide * (4 if amp else e)
    return per_token, per_seq


def terms(spec: ModelSpecLike, w: Workload, device: str = "cuda") -> ActivationTerms:
    e = width(w.precision)
    amp = autocast_fp32_weights(w)
    p = dropout_p(spec, w)
    m = (1 if device == "cuda" else e) if p > 0 else 0  # dropout mask bytes per element
    h, a, k, d = spec.hidden_size, spec.num_heads, spec.num_kv_heads, spec.head_dim
    mech = mechanisms(spec)

    fused = w.compile  # torch.compile: element-wise chains save their inputs only
    norm, norm_txt = _norm_term(h, e, amp, fused, spec.norm == "rmsnorm", mech.norm_fp32_scale)
    attn, score, attn_txt = _attention_term(spec, w, device, e, m, p, amp)
    mlp, mlp_txt, casts = _mlp_term(spec, device, e, amp, fused)
    # one fused projection (c_attn, qkv_proj), or q, k, v; MLA: the q (or q latent) and kv latent
    # projections (its q_b and kv_b read the latents' norms, whose outputs count the casts)
    casts += 2 if mech.mla_kv_lora else (1 if mech.fused_qkv else 3)
    # one layer's bytes per token as a Term: its value is per_token_layer, its text the "[...]" note
    # (eager attention's a·s·x score term is said there but counted apart, per key position)
    layer_t = (
        Term(spec.norms_per_layer).tight(Term(norm, render=lambda: norm_txt).grouped())
        + Term(attn, render=lambda: attn_txt)
        + Term(mlp, render=lambda: mlp_txt)
    )
    if mech.post_norms and not amp and not fused:  # their output feeds the residual add only
        layer_t = layer_t - Term(mech.post_norms).tight(_dot(e, h, note="term.dot.post_norm_outputs"))
    if mech.parallel_norms and spec.norms_per_layer > 1 and spec.norm != "rmsnorm":
        # both LayerNorms read the layer's input: it is saved once (fp32 under autocast)
        layer_t = layer_t - _dot(4 if amp else e, h, note="term.dot.shared_norm_input")
    if m:
        layer_t = layer_t + Term(2).tight(Term(h)).tight(Term(m, "term.masks"))
    frozen_layer, frozen_token, frozen_txt = (0, 0, "") if amp else _frozen_base_drops(spec, w, e, fused)
    prefix = 0 if amp else _grad_free_prefix(spec, w, norm, attn, mlp, e)
    if amp:
        layer_t = layer_t + Term(casts).tight(Term(2)).tight(Term(h, "term.autocast_casts"))
    if frozen_txt:
        layer_t = layer_t - Term(frozen_layer, frozen_txt)
    if w.mode in ("lora", "qlora"):  # each adapter's B saves A's rank-wide output (A shares x)
        adapters = Term(len(w.lora_modules(spec))).tight(Term(w.lora_rank))
        layer_t = layer_t + adapters.tight(Term(e, "term.adapter_outputs"))
    layer, parts = layer_t.value, layer_t.text

    per_token, per_seq = _per_token_and_seq(
        spec, e, m, p, amp, norm, frozen_token, device, tables=w.checkpointing != "full"
    )
    window: dict[str, int] = dict(_window_mask(spec, w, device, e, p))
    if mech.positional_mask and not w.flash(spec) and w.checkpointing == "full":
        window["ckpt_mask_per_key"] = 4 if amp else e  # the mask has the weights' dtype
    if not amp:
        return ActivationTerms(
            layer, score, per_token, per_seq, h * e, parts, first_layer_free=prefix, **window
        )
    head = 2 * spec.vocab_size * h if spec.is_decoder else 0
    return ActivationTerms(
        layer,
        score,
        per_token,
        per_seq,
        4 * h,  # a checkpointed layer keeps its fp32 residual input
        parts,
        layer_copies=2 * layer_matrix_params(spec),
        head_copy=head,
        head_input=2 * h if spec.is_decoder else 0,
        # selective recompute checkpoints the attention core: its q and k inputs come out of RoPE
        # in fp32 (cos/sin are fp32), so they are kept at 4 B instead of the 16-bit casts
        selective_extra=(a * d + k * d) * (4 - e) if mech.rope else 0,
        **window,
    )


def _window_mask(spec: ModelSpecLike, w: Workload, device: str, e: int, p: float) -> dict[str, int]:
    """A sliding layer under SDPA once the sequence reaches its window: transformers' sdpa_mask can no
    longer leave the mask to is_causal and builds a b x 1 x s x s boolean mask, which torch's SDPA turns
    into an additive mask of the query's dtype in every layer that reads it and saves for backward
    (e B per token per key position). With a mask transformers does not ask SDPA for grouped-query
    attention (use_gqa_in_sdpa), so repeat_kv copies k and v to every query head and SDPA saves the
    copies: 2·(a - k)·d·e B per token more. Full layers and sequences shorter than the window keep no mask (is_causal).
    Not on the CPU math fallback (dropout), which `_attention_term` counts apart, nor under FlashAttention
    (`flash`), whose kernel takes the window and the grouped heads itself."""
    sdpa = w.attention_for(spec) == "sdpa" and not (device == "cpu" and p > 0)
    if not (sdpa and spec.sliding_window and spec.sliding_window_layers):
        return {}
    a, k, d = spec.num_heads, spec.num_kv_heads, spec.head_dim
    if w.kv_repeat or k >= a:
        repeat = 0
    elif mechanisms(spec).fused_qkv:  # the copies replace RoPE'd k and the fused output v was a view of
        repeat = (2 * a - k - (a + 2 * k)) * d * e
    else:
        repeat = 2 * (a - k) * d * e
    return dict(
        window_layers=spec.sliding_window_layers,
        window=spec.sliding_window,
        window_per_token=repeat,
        window_per_key=e,
    )


def _layer_split(spec: ModelSpecLike, w: Workload, n: Num, s: Num, t: ActivationTerms) -> tuple[Num, Num]:
    """(bytes each layer keeps until its backward, bytes of the one layer recomputed at a time)."""
    kept, once = _layer_terms(w, n, s, t)
    return kept.value, (once.value if once is not None else 0 * n)


def _layer_terms(w: Workload, n: Num, s: Num, t: ActivationTerms) -> tuple[Term, Term | None]:
    """`_layer_split` as Terms, said as the formula says them: a layer's tokens times its bytes per
    token ("[...]": the terms they add up to), its scores and autocast copies; under full checkpointing
    a layer's input kept and one layer recomputed (None: none recomputed)."""
    tokens, per_n = Term(n, "term.tokens"), Term(n, "term.int")
    score = per_n.tight(Term(s)).tight(Term(t.per_token_score, "term.B_scores"))
    copies = Term(2, "term.B") * Term(t.layer_copies // 2, "term.matrix_copies")

    def plus(x: Term, *more: tuple[Term, bool]) -> Term:
        for y, shown in more:
            x = x + y if shown else x
        return x

    if w.checkpointing == "full":
        once = plus(
            per_n * Term(t.per_token_layer, "term.B_int"),
            (score, bool(t.per_token_score)),
            (copies, bool(t.layer_copies)),
        )
        if t.layer_copies:  # AMP: the recomputed layer's first norm saves the kept input itself
            once = once - per_n * Term(t.recompute_input, "term.B_kept_input")
        window = _window_term(t, n, s, 1)  # the recomputed layer, when one slides
        if window is not None:
            once = once + window
        return tokens * Term(t.recompute_input, "term.B_inputs"), once.grouped().introduced(
            Msg("term.recomputed"), " "
        )
    per_token = Term(
        t.per_token_layer, render=lambda: Joined(Msg("term.B_int", n=t.per_token_layer), " [", t.parts, "]")
    )
    if w.checkpointing == "selective":
        extra = Term(t.selective_extra, "term.B_qk_checkpoint")
        kept = plus(
            tokens * plus(per_token, (extra, bool(t.selective_extra))).grouped(),
            (copies, bool(t.layer_copies)),
        )
        return kept.grouped(), None
    kept = plus(tokens * per_token, (score, bool(t.per_token_score)), (copies, bool(t.layer_copies)))
    return kept.grouped(), None


def _window_term(t: ActivationTerms, n: Num, s: Num, layers: int) -> Term | None:
    """`layers` sliding layers' SDPA mask and repeated k, v (`_window_mask`), counted where the sequence
    reaches the window; None where no layer slides or (a plain int) the sequence is shorter."""
    if not (t.window_layers and layers):
        return None
    outgrows = s >= t.window  # masking_utils: kv_length >= local_attention_size keeps the mask
    if outgrows is False:
        return None
    per_n = Term(n * outgrows, "term.int")
    mask = per_n.tight(Term(s)).tight(Term(t.window_per_key, "term.B_window_mask"))
    if t.window_per_token > 0:
        both = per_n * Term(t.window_per_token, "term.B_kv_repeat") + mask
    elif t.window_per_token < 0:
        both = mask - per_n * Term(-t.window_per_token, "term.B_kv_repeat_fused")
    else:
        both = mask
    return Term(layers, "term.window_layers") * both.grouped()


def _resident_layers(spec: ModelSpecLike, w: Workload) -> int:
    """Layers whose kept tensors are on the GPU: all, or the layers in flight when offloading."""
    return min(spec.num_layers, IN_FLIGHT_LAYERS) if w.activation_offload else spec.num_layers


def activation_bytes(
    spec: ModelSpecLike, w: Workload, b: Num, s: Num, device: str = "cuda", t: ActivationTerms | None = None
) -> Num:
    """Saved-for-backward bytes of the layers and embeddings (not the loss) for batch b, length s.

    Under AMP each layer adds autocast's 16-bit copies of its matrices (only the recomputed layer's
    under full checkpointing). With activation offloading only the layers in flight stay on the GPU
    (`offloaded_activation_bytes` is the rest, on the host). `t`: the workload's terms when the caller
    already has them."""
    return activation_term(spec, w, b, s, device, t).value


def activation_term(
    spec: ModelSpecLike, w: Workload, b: Num, s: Num, device: str = "cuda", t: ActivationTerms | None = None
) -> Term:
    """`activation_bytes` with its formula, from one expression: the resident layers (each keeping its
    tensors, or its input and one layer recomputed), over tp, plus the per-token and per-position bytes
    outside the layers."""
    t = terms(spec, w, device) if t is None else t
    n = b * s
    per_n = Term(n, "term.int")
    kept, once = _layer_terms(w, n, s, t)
    resident = _resident_layers(spec, w)
    layers = Term(resident, "term.layers") * kept
    window = None if once is not None else _window_term(t, n, s, min(t.window_layers, resident))
    if window is not None:
        layers = layers + window
    if once is not None:
        layers = layers + once
    if t.ckpt_mask_per_key:  # one mask, the same tensor in every checkpointed layer's inputs
        layers = layers + per_n.tight(Term(s)).tight(Term(t.ckpt_mask_per_key, "term.B_ckpt_mask"))
    if w.checkpointing == "selective":
        layers = layers.said(Msg("term.scores_recomputed"), ", ")
    if t.first_layer_free and w.checkpointing != "full" and not _first_layer_offloaded(spec, w):
        free = Term(t.first_layer_free, "term.B_first_adapter")
        layers = layers - per_n * free
    if w.tp > 1:
        layers = layers // Term(w.tp, "term.tp")
    out = (
        layers
        + per_n * Term(t.per_token, "term.B_ids")
        + Term(s) * Term(t.per_seq_position, "term.B_positions")
    )
    if w.activation_offload:
        out = out.introduced(Msg("term.act_offload", n=resident, layers=spec.num_layers))
    if autocast_fp32_weights(w):
        out = out.introduced(Msg("term.amp"))
    return _said_attention(spec, w, out)


def _said_attention(spec: ModelSpecLike, w: Workload, out: Term) -> Term:
    """`out` introduced by the attention that runs where the family offers no sdpa (transformers runs
    it eagerly when none is asked for: Mechanisms.attentions), so the reader sees why no sdpa."""
    offered = mechanisms(spec).attentions
    if "sdpa" in offered:
        return out
    said = Msg(
        "term.attention_offered",
        attention=w.attention_for(spec),
        family=spec.model_type,
        offered=", ".join(offered),
    )
    return out.introduced(said)


def _first_layer_offloaded(spec: ModelSpecLike, w: Workload) -> bool:
    return w.activation_offload and spec.num_layers > IN_FLIGHT_LAYERS


def offloaded_activation_bytes(
    spec: ModelSpecLike, w: Workload, b: Num, s: Num, device: str = "cuda", t: ActivationTerms | None = None
) -> Num:
    """Host bytes activation offloading moves off the GPU: every kept layer but those in flight."""
    if not w.activation_offload or not w.training:
        return 0 * b * s
    t = terms(spec, w, device) if t is None else t
    kept, _ = _layer_split(spec, w, b * s, s, t)
    moved = (spec.num_layers - _resident_layers(spec, w)) * kept
    if w.checkpointing != "full" and _first_layer_offloaded(spec, w):
        moved = moved - b * s * t.first_layer_free
    return moved // w.tp


def logits_bytes(spec: ModelSpecLike, w: Workload, b: Num, s: Num) -> Num:
    """The loss's tensors kept for backward: fp32 log-probs (one 1,024-token chunk with the fused
    chunked loss); with `loss_chunks` under compile, the head's 16-bit output and a fp32 log-sum-exp
    per token (each chunk's up-cast is recomputed in backward)."""
    return _loss_term(spec, w, b, s).value


def _loss_term(spec: ModelSpecLike, w: Workload, b: Num, s: Num) -> Term:
    """`logits_bytes` with its formula (the fp32 scalar loss included)."""
    if not spec.is_decoder:
        return Term(0 * b, "term.loss.encoder")
    n = b * s
    vocab = Term(spec.vocab_size, "term.vocab")
    if w.chunked_loss:
        capped = n.clip(max=LOSS_CHUNK_TOKENS) if hasattr(n, "clip") else min(n, LOSS_CHUNK_TOKENS)
        chunk = Term(capped, render=lambda: Msg("term.min_tokens", n=n, cap=LOSS_CHUNK_TOKENS))
        kept = Term(4, "term.B") * chunk * vocab.said(Msg("term.chunked_loss"))
    elif w.loss_chunks is not None and w.loss_compiled:
        head_out = (
            Term(width(w.precision), "term.B")
            * Term(n, "term.tokens")
            * vocab.said(Msg("term.head_out_chunks", n=w.loss_chunks))
        )
        kept = (head_out + Term(4, "term.B") * Term(n, "term.tokens_lse")).grouped()
    elif w.loss_chunks is not None:
        kept = (
            Term(4, "term.B") * Term(n, "term.tokens") * vocab.said(Msg("term.each_chunk", n=w.loss_chunks))
        )
    else:
        kept = (
            Term(4, "term.B")
            * Term(b, "term.seqs")
            * Term(s, "term.tokens_n")
            * vocab.said(Msg("term.fp32_logprobs"))
        )
    if mechanisms(spec).final_softcap:  # logits / cap -> tanh -> * cap: tanh keeps its output
        capped = (
            Term(width(w.precision), "term.B") * Term(n, "term.tokens") * vocab.said(Msg("term.softcap_tanh"))
        )
        kept = (kept + capped).grouped()
    if w.tp > 1:
        kept = kept // Term(w.tp, "term.tp")
    return kept + Term(4, "term.B_loss")  # the fp32 scalar loss


def logits_term(spec: ModelSpecLike, w: Workload, b: Num, s: Num, t: ActivationTerms | None = None) -> Term:
    """The training breakdown's logits: the loss's kept tensors and, under AMP, the head's autocast
    copies saved with them, with the formula."""
    t = terms(spec, w) if t is None else t
    loss = _loss_term(spec, w, b, s)
    head = _head_autocast_term(spec, w, b, s, t)
    if not t.head_copy:  # outside AMP the head's term is 0 (an array of them for arrays): not said
        return Term(loss.value + head.value, render=lambda: loss.text)
    return loss + head


def loss_transient_bytes(spec: ModelSpecLike, w: Workload, b: Num, s: Num) -> Num:
    """Backward through the loss, beside the saved tensors: the fp32 gradient of the log-probs and of the
    logits (2 x 4 B per logit); compiled, one fused gradient in the dtype of the loss's input (fp32 logits
    unchunked; with `loss_chunks` the 16-bit chunk, whose fp32 up-cast is fused away: a CPU profile of
    the compiled chunk's backward allocates nothing larger than the 16-bit gradient). With `loss_chunks`
    one chunk's worth at a time, but eager chunks also hold every 16-bit chunk beside the fp32 log-probs
    at the end of the forward (the larger of the two)."""
    if not spec.is_decoder:
        return 0 * b
    n = b * s
    if w.chunked_loss:
        n = n.clip(max=LOSS_CHUNK_TOKENS) if hasattr(n, "clip") else min(n, LOSS_CHUNK_TOKENS)
    grads = 1 if w.loss_compiled else 2
    if w.loss_chunks is None:
        return grads * 4 * n * spec.vocab_size // w.tp
    per_chunk = -(-n // w.loss_chunks) * spec.vocab_size
    if w.loss_compiled:  # the fused gradient of a 16-bit chunk is 16-bit
        return width(w.precision) * per_chunk // w.tp
    chunk = grads * 4 * per_chunk // w.tp
    head_out = width(w.precision) * n * spec.vocab_size // w.tp
    return _max(head_out, chunk)


def _max(a: Num, b: Num) -> Num:
    """max for ints or numpy arrays (numpy is not imported here)."""
    if hasattr(a, "clip"):
        return a.clip(min=b)
    return b.clip(min=a) if hasattr(b, "clip") else max(a, b)


def _head_autocast_term(
    spec: ModelSpecLike, w: Workload, b: Num, s: Num, t: ActivationTerms | None = None
) -> Term:
    """AMP only: the LM head's 16-bit weight copy and its 16-bit cast of the fp32 final-norm output.

    Saved for backward by the head matmul (so they sit with the logits); 0 outside the AMP regime."""
    t = terms(spec, w) if t is None else t
    h = Term(spec.hidden_size)
    copy = (
        Term(2, "term.B")
        * Term(t.head_copy // (2 * spec.hidden_size), "term.int")
        * h.said(Msg("term.head_copy"))
    )
    cast = (
        Term(t.head_input // spec.hidden_size, "term.B")
        * Term(b * s, "term.tokens")
        * h.said(Msg("term.head_cast"))
    )
    both = copy + cast
    return both // Term(w.tp, "term.tp") if w.tp > 1 else both


#: vLLM's max_num_batched_tokens (API server on a large GPU) and TensorRT-LLM's max_num_tokens default.
ENGINE_BATCHED_TOKENS = 8192


def prefill_tokens(w: Workload, batch: Num, seq: Num) -> Num:
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


def inference_activation_bytes(spec: ModelSpecLike, w: Workload, batch: Num, seq: Num) -> Num:
    """Peak transient of one layer during prefill (nothing is kept for backward)."""
    return inference_activation_term(spec, w, batch, seq).value


def inference_activation_term(spec: ModelSpecLike, w: Workload, batch: Num, seq: Num) -> Term:
    """`inference_activation_bytes` with its formula: the prefill's tokens · the bytes one layer makes
    per token (hidden in and out, q, k, v, the MLP's intermediates) + eager attention's fp32 scores."""
    e = width(w.precision)
    h, a, k, d, i = spec.hidden_size, spec.num_heads, spec.num_kv_heads, spec.head_dim, spec.intermediate_size
    n = prefill_tokens(w, batch, seq)
    mlp = (3 if spec.gated_mlp else 2) * i * max(1, spec.experts_per_token)
    if w.engine != "hf":
        tokens = Term(n, "term.engine_forward", engine=w.engine)
    else:
        tokens = Term(n, render=lambda: _prefill_tokens(batch, seq, n))
    per_tok = Term(2 * h + a * d + 2 * k * d + mlp, "term.per_token_width")
    # eager (hf only: engines run fused attention) materialises fp32 scores: n queries x seq keys
    eager = w.engine == "hf" and not w.flash(spec)
    out = tokens * per_tok * Term(e, "term.B")
    if eager:
        out = out + Term(n * a * seq * 4, "term.fp32_scores")
    if w.tp > 1:
        out = out // Term(w.tp, "term.tp")
    out = out.introduced(Msg("term.prefill_transient"))
    return _said_attention(spec, w, out) if w.engine == "hf" else out


def _prefill_tokens(batch: Num, seq: Num, n: Num) -> Msg:
    """The prefill's tokens said: every prompt's, or capped (rendered at one shape only: no arrays)."""
    said = "term.prefill_capped" if n < batch * seq else "term.prefill_tokens"
    return Msg(said, b=batch, s=seq, n=n)


def inference_logits_bytes(spec: ModelSpecLike, w: Workload, batch: Num) -> Num:
    """Last-position logits in fp32 for sampling, one row per sequence; none for an encoder-only model
    (no LM head: it does not sample)."""
    return inference_logits_term(spec, batch).value


def inference_logits_term(spec: ModelSpecLike, batch: Num) -> Term:
    """`inference_logits_bytes` with its formula, from one expression."""
    if not spec.is_decoder:
        return Term(0 * batch, "term.logits.encoder")
    logits = Term(4, "term.B") * Term(batch, "term.seqs") * Term(spec.vocab_size, "term.vocab")
    return logits.said(Msg("term.last_logits"))
