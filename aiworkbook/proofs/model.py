"""A decoder in plain torch, built from a ModelSpec, that mirrors the Hugging Face modules' ops.

Llama-style (RMSNorm with an fp32 up-cast, q/k/v/o linears, RoPE, GQA through sdpa's enable_gqa or
repeat_kv for eager, SwiGLU, untied head) and GPT-2-style (learned positions, LayerNorm, biases,
tanh-GELU MLP, tied head) follow transformers' LlamaForCausalLM / GPT2LMHeadModel op for op, so what
autograd saves here is what it saves there. Other families get the same parameter shapes and count
(MoE experts with a top-k router, four norms per layer) but not every detail (Gemma's (1 + w) norm,
GPT-NeoX's partial rotary and parallel residual, sliding windows): enough for memory, not for logits.

torch is imported here at module level: this module belongs to the proofs layer, never to sizing.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable
from contextlib import nullcontext
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

from aiworkbook.errors import SpecError
from aiworkbook.sizing.workload import ATTENTIONS  # one list for the sizing, the CLI and this model
from aiworkbook.specs.mechanisms import of as mechanisms
from aiworkbook.specs.protocol import ModelSpecLike

#: "flash" runs torch's SDPA, which picks the flash kernel where it can (sizing counts both alike).
SDPA_ATTENTIONS = ("sdpa", "flash")
#: torch dtypes of the precision names the proofs run at (tf32: fp32 tensors, TF32 matmuls)
TORCH_DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
CHECKPOINTING = ("none", "selective", "full")


class RMSNorm(nn.Module):
    def __init__(self, h: int, eps: float = 1e-5, **fk) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(h, **fk))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # LlamaRMSNorm.forward, op for op
        dtype = x.dtype
        x = x.to(torch.float32)
        var = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(var + self.eps)
        return self.weight * x.to(dtype)


def _norm(spec: ModelSpecLike, **fk) -> nn.Module:
    if spec.norm == "layernorm":
        return nn.LayerNorm(spec.hidden_size, eps=1e-5, **fk)
    return RMSNorm(spec.hidden_size, **fk)


class KVCache:
    """A growing per-layer K/V cache (torch.cat per step, like transformers' DynamicCache)."""

    def __init__(self, num_layers: int) -> None:
        self.k: list[torch.Tensor | None] = [None] * num_layers
        self.v: list[torch.Tensor | None] = [None] * num_layers

    @property
    def length(self) -> int:
        """Tokens cached, read from layer 0: between forward passes every layer holds the same."""
        return self.length_at(0)

    def length_at(self, layer: int) -> int:
        """Tokens cached in `layer`: during a forward pass the layers before it have already grown, so
        a layer's own past is its own length, not layer 0's."""
        k = self.k[layer]
        return 0 if k is None else int(k.shape[2])

    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        past_k, past_v = self.k[layer], self.v[layer]
        if past_k is not None and past_v is not None:
            k = torch.cat([past_k, k], dim=2)
            v = torch.cat([past_v, v], dim=2)
        self.k[layer], self.v[layer] = k, v
        return k, v

    def nbytes(self) -> int:
        """Bytes of the unique storages the cache holds (the measurement, not a formula)."""
        from aiworkbook.proofs.memory_accounting import unique_bytes

        return unique_bytes([*self.k, *self.v])


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class Attention(nn.Module):
    def __init__(self, spec: ModelSpecLike, idx: int, attention: str, **fk) -> None:
        super().__init__()
        h, a, k, d = spec.hidden_size, spec.num_heads, spec.num_kv_heads, spec.head_dim
        self.a, self.k, self.d, self.idx, self.attention = a, k, d, idx, attention
        # a family that declares fused_qkv (GPT-2's c_attn, GPT-NeoX's query_key_value, Phi-3's qkv_proj)
        # projects q, k, v in one matmul: one saved input (under autocast one cast) instead of three
        mech = mechanisms(spec)
        self.fused = mech.fused_qkv
        self.fp32_softmax = mech.softmax_fp32
        if self.fused:
            self.qkv_proj = nn.Linear(h, (a + 2 * k) * d, bias=spec.qkv_bias, **fk)
        else:
            self.q_proj = nn.Linear(h, a * d, bias=spec.qkv_bias, **fk)
            self.k_proj = nn.Linear(h, k * d, bias=spec.qkv_bias, **fk)
            self.v_proj = nn.Linear(h, k * d, bias=spec.qkv_bias, **fk)
        self.o_proj = nn.Linear(a * d, h, bias=spec.o_bias, **fk)
        self.scaling = d**-0.5
        self.selective = False
        self.tracker = None

    def forward(self, x, rope, cache: KVCache | None) -> torch.Tensor:
        b, s, _ = x.shape
        if self.fused:
            q, k, v = self.qkv_proj(x).split([self.a * self.d, self.k * self.d, self.k * self.d], dim=-1)
        else:
            q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        q = q.view(b, s, self.a, self.d).transpose(1, 2)
        k = k.view(b, s, self.k, self.d).transpose(1, 2)
        v = v.view(b, s, self.k, self.d).transpose(1, 2)
        if rope is not None:
            cos, sin = rope
            q = (q * cos) + (_rotate_half(q) * sin)
            k = (k * cos) + (_rotate_half(k) * sin)
        past = cache.length_at(self.idx) if cache is not None else 0
        if cache is not None:
            k, v = cache.update(self.idx, k, v)
        if self.selective and torch.is_grad_enabled():
            from torch.utils.checkpoint import checkpoint

            if self.tracker is not None:
                self.tracker.note(q, k, v)  # inputs the checkpoint keeps, hidden from saved-tensor hooks
            out = checkpoint(self._core, q, k, v, past, use_reentrant=False)
        else:
            out = self._core(q, k, v, past)
        out = out.transpose(1, 2).reshape(b, s, self.a * self.d)
        return self.o_proj(out)

    def _core(self, q, k, v, past: int) -> torch.Tensor:
        sq, sk = q.shape[2], k.shape[2]
        mask = None
        causal = sq > 1 and past == 0
        if sq > 1 and past > 0:  # a chunk after a cached prefix: explicit bottom-right causal mask
            mask = torch.ones(sq, sk, dtype=torch.bool, device=q.device).tril(diagonal=past)
        if self.attention in SDPA_ATTENTIONS:
            return F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, is_causal=causal, scale=self.scaling, enable_gqa=self.a != self.k
            )
        rep = self.a // self.k  # eager_attention_forward: repeat_kv, matmul, mask, fp32 softmax, matmul
        if rep > 1:
            k = k[:, :, None].expand(-1, -1, rep, -1, -1).reshape(k.shape[0], self.a, sk, self.d)
            v = v[:, :, None].expand(-1, -1, rep, -1, -1).reshape(v.shape[0], self.a, sk, self.d)
        w = torch.matmul(q, k.transpose(2, 3)) * self.scaling
        if causal:
            mask = torch.ones(sq, sk, dtype=torch.bool, device=q.device).tril()
        if mask is not None:
            # transformers adds a float mask in the parameters' dtype (fp32 under AMP: it promotes the
            # scores); an addition saves nothing for backward, unlike masked_fill's boolean mask
            dt = self.o_proj.weight.dtype
            w = w + torch.zeros(sq, sk, dtype=dt, device=q.device).masked_fill(~mask, torch.finfo(dt).min)
        if self.fp32_softmax:  # Llama's eager_attention_forward: fp32 softmax, back to the query's dtype
            w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        else:  # GPT-2's: softmax in the scores' dtype, then to v's
            w = F.softmax(w, dim=-1).type(v.dtype)
        return torch.matmul(w, v)


class MLP(nn.Module):
    def __init__(self, spec: ModelSpecLike, **fk) -> None:
        super().__init__()
        h, i = spec.hidden_size, spec.intermediate_size
        self.gated = spec.gated_mlp
        if self.gated:
            self.gate_proj = nn.Linear(h, i, bias=spec.mlp_bias, **fk)
        self.up_proj = nn.Linear(h, i, bias=spec.mlp_bias, **fk)
        self.down_proj = nn.Linear(i, h, bias=spec.mlp_bias, **fk)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.gated:  # LlamaMLP: down(silu(gate(x)) * up(x))
            return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))
        return self.down_proj(_gelu_new(self.up_proj(x)))  # GPT2MLP


def _gelu_new(x: torch.Tensor) -> torch.Tensor:
    """transformers' NewGELUActivation, the same Python composition (so the same saved tensors)."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class MoE(nn.Module):
    """Top-k routed experts (Mixtral's sparse MoE block): fp32 router softmax, renormalised weights."""

    def __init__(self, spec: ModelSpecLike, **fk) -> None:
        super().__init__()
        self.top_k = spec.experts_per_token
        self.gate = nn.Linear(spec.hidden_size, spec.num_experts, bias=False, **fk)
        self.experts = nn.ModuleList(MLP(spec, **fk) for _ in range(spec.num_experts))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        flat = x.reshape(-1, h)
        probs = F.softmax(self.gate(flat), dim=-1, dtype=torch.float32)
        w, idx = torch.topk(probs, self.top_k, dim=-1)
        w = (w / w.sum(dim=-1, keepdim=True)).to(x.dtype)
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            rows, slot = torch.where(idx == e)
            if rows.numel():
                out = out.index_add(0, rows, expert(flat[rows]) * w[rows, slot, None])
        return out.view(b, s, h)


class Block(nn.Module):
    def __init__(self, spec: ModelSpecLike, idx: int, attention: str, **fk) -> None:
        super().__init__()
        self.input_norm = _norm(spec, **fk)
        self.attn = Attention(spec, idx, attention, **fk)
        self.post_attention_norm = _norm(spec, **fk)
        self.mlp = MoE(spec, **fk) if spec.num_experts else MLP(spec, **fk)
        self.four_norms = spec.norms_per_layer == 4
        if self.four_norms:  # Gemma-2: norms after attention and after the MLP as well
            self.post_attn_out_norm = _norm(spec, **fk)
            self.post_mlp_out_norm = _norm(spec, **fk)

    def forward(self, x, rope, cache):
        return self.after_attention(x, self.attn(self.input_norm(x), rope, cache))

    def after_attention(self, x, a):
        """The rest of the layer once attention gave `a`: its residual add, then the MLP's (with the
        extra output norms of a four-norm layer)."""
        if self.four_norms:
            a = self.post_attn_out_norm(a)
        x = x + a
        m = self.mlp(self.post_attention_norm(x))
        if self.four_norms:
            m = self.post_mlp_out_norm(m)
        return x + m


#: transformers' rotary base when a config does not give one
DEFAULT_ROPE_THETA = 10000.0


def rope_theta(spec: ModelSpecLike) -> float:
    """The rotary base of the model's config: `rope_theta` (GPT-NeoX: `rotary_emb_base`), from
    spec.extra when a loader filled it, else from the config.json the spec was read from (spec.source);
    10,000 (transformers' default) when neither says. It changes the values, never the bytes."""
    for cfg in (spec.extra or {}, _source_config(spec)):
        for key in ("rope_theta", "rotary_emb_base"):
            v = cfg.get(key)
            if not isinstance(v, bool) and isinstance(v, int | float) and math.isfinite(v) and v > 0:
                return float(v)
    return DEFAULT_ROPE_THETA


def _source_config(spec: ModelSpecLike) -> dict:
    from pathlib import Path

    from aiworkbook.specs.reader import load_config_file

    src = Path(spec.source) if spec.source else None
    if src is None or not (src.is_file() or (src / "config.json").is_file()):
        return {}
    try:
        cfg = load_config_file(src)
    except (ValueError, OSError):  # unreadable now: the default, as transformers would use
        return {}
    return cfg if isinstance(cfg, dict) else {}


def built_bytes(spec: ModelSpecLike, dtype: torch.dtype) -> int:
    """The bytes a DecoderModel of `spec` allocates at `dtype` (parameters and buffers), counted on the
    meta device without allocating. A quantised config (fp8, mxfp4) is built unquantised, so this, not the
    sizing library's checkpoint bytes, is what a proof or the embedded server holds and writes. Kept per
    spec and dtype: building deepseek-v3's 15,000 modules takes 3 s, and a proof form re-plans on every
    change."""
    return _built_bytes(spec, dtype) if isinstance(spec, Hashable) else _count_built(spec, dtype)


@functools.lru_cache(maxsize=32)
def _built_bytes(spec: Hashable, dtype: torch.dtype) -> int:
    return _count_built(cast(ModelSpecLike, spec), dtype)


def _count_built(spec: ModelSpecLike, dtype: torch.dtype) -> int:
    model = DecoderModel(spec, device="meta", dtype=dtype)
    return sum(t.numel() * t.element_size() for t in [*model.parameters(), *model.buffers()])


class DecoderModel(nn.Module):
    """Embedding, L blocks, final norm, head, cross-entropy: the training graph the VRAM proof measures."""

    def __init__(
        self,
        spec: ModelSpecLike,
        *,
        attention: str = "sdpa",
        checkpointing: str = "none",
        device=None,
        dtype: torch.dtype = torch.float32,
        rope_base: float | None = None,
    ) -> None:
        super().__init__()
        if not spec.is_decoder:
            raise SpecError("model", spec.name, "a decoder (causal LM) architecture")
        if attention not in ATTENTIONS:
            raise SpecError("attention", attention, ", ".join(ATTENTIONS))
        if checkpointing not in CHECKPOINTING:
            raise SpecError("checkpointing", checkpointing, ", ".join(CHECKPOINTING))
        fk = {"device": device, "dtype": dtype}
        self.spec = spec
        self.checkpointing = checkpointing
        self.embed_tokens = nn.Embedding(spec.vocab_size, spec.hidden_size, **fk)
        self.embed_positions = (
            nn.Embedding(spec.max_position_embeddings, spec.hidden_size, **fk)
            if spec.learned_positions
            else None
        )
        self.layers = nn.ModuleList(Block(spec, i, attention, **fk) for i in range(spec.num_layers))
        for layer in self.blocks():
            layer.attn.selective = checkpointing == "selective"
        self.norm = _norm(spec, **fk)
        self.lm_head = (
            None
            if spec.tie_word_embeddings
            else nn.Linear(spec.hidden_size, spec.vocab_size, bias=False, **fk)
        )
        theta = rope_theta(spec) if rope_base is None else float(rope_base)
        inv = 1.0 / (theta ** (torch.arange(0, spec.head_dim, 2, dtype=torch.float32) / spec.head_dim))
        self.register_buffer("inv_freq", inv.to(device=device), persistent=False)
        self.tracker = None
        if (
            self.embed_tokens.weight.device.type != "meta"
        ):  # HF's initializer_range; N(0, 1) would blow up logits
            with torch.no_grad():
                for emb in (self.embed_tokens, self.embed_positions):
                    if emb is not None:
                        emb.weight.normal_(0.0, 0.02)

    def set_tracker(self, tracker) -> None:
        """Route checkpoint inputs (invisible to saved-tensor hooks) to a SavedTensorTracker."""
        self.tracker = tracker
        for layer in self.blocks():
            layer.attn.tracker = tracker

    def blocks(self) -> list[Block]:
        """The decoder blocks, typed (nn.ModuleList yields plain Modules)."""
        return [cast(Block, m) for m in self.layers]

    def _rope(self, positions: torch.Tensor, dtype: torch.dtype):
        # LlamaRotaryEmbedding: fp32 outer product, cat(freqs, freqs), cos/sin cast to the activations' dtype
        inv_freq = cast(torch.Tensor, self.inv_freq)  # a registered buffer
        freqs = positions[:, :, None].float() * inv_freq[None, None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(dtype)[:, None], emb.sin().to(dtype)[:, None]

    def forward(
        self,
        input_ids: torch.Tensor,
        labels: torch.Tensor | None = None,
        cache: KVCache | None = None,
        logits_to_keep: int = 0,
    ):
        """Logits, or the mean next-token cross-entropy when labels are given (HF's ForCausalLMLoss).

        logits_to_keep=n > 0 computes the head for the last n positions only, as transformers' generate
        does (logits_to_keep=1): a prefill never materialises batch x context x vocabulary logits."""
        b, s = input_ids.shape
        past = cache.length if cache is not None else 0
        positions = torch.arange(past, past + s, device=input_ids.device)[None].expand(b, s)
        x = self.embed_tokens(input_ids)
        rope = None
        if self.embed_positions is not None:
            x = x + self.embed_positions(positions)
        else:
            rope = self._rope(positions, x.dtype)
        full = self.checkpointing == "full" and torch.is_grad_enabled()
        from aiworkbook.proofs.control import checkpoint as cancel_point

        for i, layer in enumerate(self.layers):
            cancel_point(f"layer {i + 1} of {len(self.layers)}")  # a cancel lands within one layer
            if full:
                from torch.utils.checkpoint import checkpoint

                if self.tracker is not None:
                    self.tracker.note(x)  # the layer input the checkpoint keeps
                x = checkpoint(layer, x, rope, cache, use_reentrant=False)
            else:
                x = layer(x, rope, cache)
        x = self.norm(x)
        if logits_to_keep > 0 and labels is None:
            x = x[:, -logits_to_keep:]
        phase = self.tracker.phase("logits") if self.tracker is not None else nullcontext()
        with phase:
            w = self.embed_tokens.weight if self.lm_head is None else self.lm_head.weight
            logits = F.linear(x, w)
            if labels is None:
                return logits
            shift = F.pad(labels, (0, 1), value=-100)[..., 1:]
            return F.cross_entropy(
                logits.float().view(-1, logits.shape[-1]), shift.reshape(-1), ignore_index=-100
            )


def param_count(model: nn.Module) -> int:
    """Unique parameters (tied weights once), as transformers counts them."""
    seen = {id(p): p.numel() for p in model.parameters()}
    return sum(seen.values())
