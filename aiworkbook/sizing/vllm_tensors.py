"""The weight tensors one vLLM rank builds, in the order it builds them, and what PyTorch's allocator
counts for them beyond the checkpoint's bytes (sizing.cuda_allocator).

vLLM allocates every parameter on the GPU as the model's modules are constructed (DefaultModelLoader
.load_model: `with target_device: initialize_model(...)`, then copies the checkpoint in;
vllm/model_executor/model_loader/base_loader.py, v0.19.0) and frees none of them before "Model loading
took" is read, so the allocator sees one run of requests. A decoder layer's tensors, per rank at
tensor parallelism tp (vllm/model_executor/layers/linear.py, fused_moe/layer.py):

- QKVParallelLinear: (heads/tp + 2 x kv heads per rank) x head_dim rows of hidden, kv heads per rank
  max(1, kv/tp) (replicated when fewer than tp); its bias if the model has one;
- RowParallelLinear o_proj: hidden x heads/tp x head_dim; its bias (hidden, whole) if any;
- the rotary cos/sin tables, once (get_rope caches them), in the first layer the rank builds;
- a gated MLP as MergedColumnParallelLinear gate_up (2 x intermediate/tp x hidden) and down (hidden x
  intermediate/tp), an ungated one as up and down; fused MoE as the router (experts x hidden,
  replicated), w13 (experts x 2 x intermediate/tp x hidden) and w2 (experts x hidden x intermediate/tp);
- the layer's norms (hidden each);

then the final norm and the head; the token table first. VocabParallelEmbedding and ParallelLMHead pad
the vocabulary to a multiple of 64 before splitting it (pad_vocab_size, DEFAULT_VOCAB_PADDING_SIZE in
vllm/model_executor/layers/vocab_parallel_embedding.py), and the padded rows are allocated too.

Only a stack of alike layers is listed: a spec whose per-layer matrix count is not the one above (MLA,
dense layers before MoE ones, shared experts) gets no list, and nothing is added for it. Neither is a
quantised checkpoint (packed weights and scales), nor a multimodal tower (its tensors are not in the
spec), nor the attention layer's scalar scales (seven 4-byte buffers a layer, 512 B each in the small
pool) or the rotary tables' fp32 intermediates freed during construction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiworkbook.sizing.cuda_allocator import slack_bytes

if TYPE_CHECKING:
    from aiworkbook.specs.protocol import ModelSpecLike

VOCAB_PADDING = 64  # DEFAULT_VOCAB_PADDING_SIZE


def padded_vocab(vocab: int) -> int:
    """The vocabulary as vLLM's embedding and head allocate it (pad_vocab_size)."""
    return -(-vocab // VOCAB_PADDING) * VOCAB_PADDING


def alike_layers(spec: ModelSpecLike) -> bool:
    """Whether every layer is the standard attention + MLP/MoE block sized by the spec's fields: its
    matrix count per layer is the spec's own (spec.params_linear / layers)."""
    h, a, k, d = spec.hidden_size, spec.num_heads, spec.num_kv_heads, spec.head_dim
    mats = 3 if spec.gated_mlp else 2
    per_layer = 2 * h * a * d + 2 * h * k * d + mats * h * spec.intermediate_size * max(1, spec.num_experts)
    return spec.num_layers > 0 and spec.params_linear == spec.num_layers * per_layer


def layer_tensors(spec: ModelSpecLike, tp: int, width: int) -> tuple[list[int], list[int]]:
    """One decoder layer's tensors on one rank, bytes each, in construction order: (attention, MLP or
    MoE and the norms); the first layer a rank builds puts the rotary tables between the two."""
    h, d, i, e = spec.hidden_size, spec.head_dim, spec.intermediate_size, spec.num_experts
    heads, kv = spec.num_heads // tp, max(1, spec.num_kv_heads // tp)
    qkv = (heads + 2 * kv) * d
    attn = [qkv * h * width] + ([qkv * width] if spec.qkv_bias else [])
    attn += [h * heads * d * width] + ([h * width] if spec.o_bias else [])
    up, down = (2 if spec.gated_mlp else 1) * i // tp * h * width, h * (i // tp) * width
    mlp = [e * h * width, e * up, e * down] if e else [up, down]
    return attn, mlp + [h * width] * spec.norms_per_layer


def stage_tensors(
    spec: ModelSpecLike,
    *,
    tp: int,
    width: int,
    layers: int,
    embedding: bool,
    head: bool,
    rope_tables: tuple[int, ...],
) -> list[int]:
    """One rank's weight tensors in build order (bytes each): the token table (if `embedding`), `layers`
    decoder layers with the rotary tables `rope_tables` in the first, the final norm and the head (if
    `head`); [] where the layers are not alike (alike_layers)."""
    if not alike_layers(spec):
        return []
    out = [table_bytes(spec, tp, width)] if embedding else []
    attn, rest = layer_tensors(spec, tp, width)
    for n in range(layers):
        out += attn + (list(rope_tables) if n == 0 else []) + rest
    if head:
        out += [spec.hidden_size * width, table_bytes(spec, tp, width)]
    return out


def table_bytes(spec: ModelSpecLike, tp: int, width: int) -> int:
    """One rank's token table or head as vLLM allocates it: the padded vocabulary split over tp."""
    return padded_vocab(spec.vocab_size) // tp * spec.hidden_size * width


def load_slack_bytes(spec: ModelSpecLike, tensors: list[int], tp: int, width: int, tables: int) -> int:
    """What "Model loading took" counts beyond the checkpoint's bytes for one rank's `tensors` holding
    `tables` vocabulary tables (token table, head): the padded vocabulary rows (each table's
    (padded - vocab) x hidden / tp) and the allocator's whole blocks (cuda_allocator.slack_bytes)."""
    if not tensors:
        return 0
    padding = tables * (table_bytes(spec, tp, width) - spec.vocab_size * spec.hidden_size * width // tp)
    return slack_bytes(tensors) + padding
