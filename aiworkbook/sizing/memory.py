"""The memory breakdown: every byte of a workload on one GPU, itemised, each with its formula.

`components(spec, w, b, s)` is the vectorised core (b and s may be numpy arrays, for sweeps and
capacity solvers); `memory_breakdown` adds the one-line formulas for people. For training b is the
micro-batch and s the sequence length; for inference b is the concurrency and s the context.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiworkbook.message import Joined, Msg
from aiworkbook.sizing import activations as act
from aiworkbook.sizing import timeline
from aiworkbook.sizing.expr import Term
from aiworkbook.sizing.onepass import SizingPass, sizing_pass
from aiworkbook.sizing.workload import Workload
from aiworkbook.specs.kv import WINDOWED_KINDS, KVGroup
from aiworkbook.specs.kv import kv_bytes as kv_cache_bytes
from aiworkbook.units import DTYPE_BITS, GiB, MiB

if TYPE_CHECKING:
    from aiworkbook.sizing.expr import Num
    from aiworkbook.specs.protocol import ModelSpecLike

#: What moves off the GPU, per GPU: FSDP CPU offload's states, offloaded activations, and a paged
#: optimizer's state (CUDA unified memory outside PyTorch's allocator, on the host under pressure).
HOST_KEYS = ("offloaded_states", "offloaded_activations", "paged_optimizer")
COMPONENTS = (
    "weights",
    "gradients",
    "optimizer",
    "master_weights",
    "activations",
    "logits",
    "kv_cache",
    "workspace",
    "cuda_context",
    "reserve",
)
#: CUDA context with PyTorch loaded: ~290 MB lazy loading to ~670 MB eager
#: (https://github.com/pytorch/pytorch/pull/86509); the middle.
CUDA_CONTEXT_BYTES = 500 * MiB
#: One cuBLAS workspace: torch allocates one per (handle, stream) through its caching allocator, of
#: CUBLAS_WORKSPACE_CONFIG's size, by default 32 MiB on Hopper (sm 9.0) and 8 MiB + 128 KiB elsewhere
#: (aten/src/ATen/cuda/CublasHandlePool.cpp: parseChosenWorkspaceSize, setWorkspaceForHandle).
CUBLAS_WORKSPACE_BYTES = 32 * MiB


def cublas_handles(w: Workload) -> int:
    """cuBLAS handles, so workspaces: each thread reserves its own handle from torch's pool (a thread-local
    PoolWindow), and training's backward runs on the autograd engine's own thread for the CUDA device:
    two for training (forward and the optimizer on the main thread, backward on autograd's), one for
    inference."""
    return 2 if w.training else 1


#: NCCL and other non-torch buffers when more than one GPU talks (~0.4 GiB: docs/architecture.md).
NCCL_BYTES = int(0.4 * GiB)
#: CUDA graphs captured by serving engines (0.4–2.4 GiB: docs/architecture.md).
CUDA_GRAPH_BYTES = int(0.5 * GiB)
#: Caching-allocator fragmentation allowance for plain PyTorch (share of allocated bytes).
ALLOCATOR_RESERVE_PERCENT = 5


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes per GPU by component (ints), their sum, and the formula behind each one."""

    weights: int = 0
    gradients: int = 0
    optimizer: int = 0
    master_weights: int = 0
    activations: int = 0
    logits: int = 0
    kv_cache: int = 0
    workspace: int = 0
    cuda_context: int = 0
    reserve: int = 0
    total: int = 0
    #: each component's formula: a message (aiworkbook.message), its str the English text
    formulas: dict[str, str] = field(default_factory=dict, compare=False)
    #: Bytes that options keep off the GPU (not in `total`): see `HOST_KEYS`.
    host: dict[str, int] = field(default_factory=dict, compare=False)

    def as_dict(self) -> dict[str, int]:
        """The bytes by component and the total (the formulas are not copied: asdict would deep-copy
        each message, rebuilding it)."""
        return {c: getattr(self, c) for c in (*COMPONENTS, "total")}

    @property
    def host_bytes(self) -> int:
        """Host memory the workload needs per GPU for what it moved off the GPU (paged state counted
        whole: the driver keeps it on the host when the GPU has no room)."""
        return sum(self.host.values())

    @property
    def summed(self) -> int:
        """Every component added up: what each holds at its own largest. For training `total` is less
        (the step's peak phase, `timeline`): gradients, activations and the loss's tensors are not all
        alive at once."""
        return sum(getattr(self, c) for c in COMPONENTS)

    def rows(self) -> list[tuple[str, int, str]]:
        """(component, bytes, formula) for a table."""
        return [(c, getattr(self, c), self.formulas.get(c, "")) for c in (*COMPONENTS, "total")]


def _cap(x: Num, limit: int) -> Num:
    """min(x, limit) for an int or a numpy array (numpy is not imported here, to keep imports cheap)."""
    return x.clip(max=limit) if hasattr(x, "clip") else min(x, limit)


def kv_tokens(w: Workload, context: Num) -> Num:
    """Tokens a paged cache holds per sequence: the context rounded up to whole blocks."""
    return -(-context // w.block_size) * w.block_size


def kv_bytes(spec: ModelSpecLike, w: Workload, sequences: Num, context: Num) -> Num:
    """KV cache of `sequences` each holding `context` tokens, per GPU (each tp rank holds max(1, k/t) heads)."""
    tokens = kv_tokens(w, context)
    return sequences * kv_cache_bytes(spec.kv_layer_groups(), tokens, DTYPE_BITS[w.kv_dtype], w.tp)


def _kv_shape(g: KVGroup, tp: int) -> Term:
    """One KV group's elements per token on a rank, said as the cache holds them."""
    if g.kind == "mla":
        return Term(g.layers, "term.kv.mla_layers") * Term(g.width, "term.kv.latent")
    if g.kind == "full":
        layers = Term(g.layers, "term.layers")
    else:  # a kind's word where the catalogue has one (sliding, chunked), else its name
        kind = Msg(f"term.kv.kind.{g.kind}") if g.kind in WINDOWED_KINDS else g.kind
        layers = Term(g.layers, "term.kv.window_layers", kind=kind, window=g.window)
    return Term(2) * layers * Term(g.heads_per_rank(tp), "term.kv.heads") * Term(g.width // 2)


def kv_term(spec: ModelSpecLike, w: Workload, b: int, s: int) -> Term:
    """The KV cache of b sequences of s tokens per GPU with its formula, built group by group from the
    same `KVGroup`s `kv_bytes` sums (a full-attention model reads "2 · L layers · k kv heads · d · 2 B ·
    T tokens (16-token blocks) · b seqs"; windowed and MLA groups say what they keep)."""
    groups = spec.kv_layer_groups()
    if not groups:
        return Term(0, "term.kv.encoder")
    tokens = int(kv_tokens(w, s))
    blocks = Msg("term.kv.blocks", n=w.block_size)
    width = Term(DTYPE_BITS[w.kv_dtype] / 8, "term.B_g")
    per_group = [(_kv_shape(g, w.tp), Term(int(g.tokens_kept(tokens)), "term.tokens")) for g in groups]
    if len(per_group) == 1:
        shape, kept = per_group[0]
        per_seq = shape * width * kept.said(blocks)
    else:
        total = per_group[0][0] * per_group[0][1]
        for shape, kept in per_group[1:]:
            total = total + shape * kept
        per_seq = (total.grouped() * width).said(blocks)
    out = per_seq * Term(b, "term.seqs")
    return Term(int(out.value), render=lambda: out.text)


def components(
    spec: ModelSpecLike, w: Workload, b: Num, s: Num, device: str = "cuda", p: SizingPass | None = None
) -> dict[str, Any]:
    """All components for batch b and length s (scalars or broadcastable numpy arrays); `p`: the
    workload's SizingPass when the caller has it (its terms are reused, nothing recomputed)."""
    return evaluate(p if p is not None else sizing_pass(spec, w, device), b, s).components


@dataclass(frozen=True)
class Evaluated:
    """The breakdown at one shape: the components, a training step's peak phase ("" for inference or
    arrays), the loss's backward transient (in the workspace) and the Terms the device's components and
    the total were computed as (their texts are the formulas)."""

    components: dict[str, Any]
    phase: str
    transient: Any
    terms: dict[str, Term] = field(default_factory=dict)


def evaluate(p: SizingPass, b: Num, s: Num) -> Evaluated:
    """The components of `p`'s workload at batch b and length s, from the pass's terms."""
    spec, w, device = p.spec, p.w, p.device
    st = p.states
    c = dict(
        weights=st.weights, gradients=st.gradients, optimizer=st.optimizer, master_weights=st.master_weights
    )
    zero = 0 * b * s
    t = p.terms
    said: dict[str, Term] = {}
    if t is not None:
        said["activations"] = act.activation_term(spec, w, b, s, device, t)
        # AMP: the head's 16-bit weight copy and input cast are saved with the logits
        said["logits"] = act.logits_term(spec, w, b, s, t)
        c.update((k, v.value) for k, v in said.items())
        c["kv_cache"] = zero
        # backward through the loss: the fp32 gradient of the log-probs and the fp32 gradient of the
        # logits (log_softmax's backward) live beside the saved log-probs: 2 x 4 B per logit
        transient = act.loss_transient_bytes(spec, w, b, s) + zero
    else:
        prompt = _cap(s, w.seq_len)
        said["activations"] = act.inference_activation_term(spec, w, b, prompt)
        said["logits"] = act.inference_logits_term(spec, b)
        c["activations"] = said["activations"].value
        c["logits"] = said["logits"].value + zero
        c["kv_cache"] = kv_bytes(spec, w, b, s)
        transient = zero
    # the CPU's components count no workspace, so no loss transient either: only the optimizer step's
    apart, phase = _not_at_once(spec, w, b, s, c, transient if device == "cuda" else zero, t, p.step.bytes)
    terms = _device_terms(p, c, transient, zero, apart)
    c.update((k, v.value) for k, v in terms.items())
    total = _total_term(w, c, apart, phase)
    c["total"] = total.value
    return Evaluated(c, phase, transient, {**said, **terms, "total": total})


def _bytes(value: Num, id: str, **args: Any) -> Term:
    """A byte count (`size`, said as fmt_bytes says it) and what it is: message `id`."""
    return Term(value, render=lambda: Msg(id, size=int(value), **args))


def _sum_shown(parts: list[tuple[Term, bool]]) -> Term:
    """The sum of every part; its text names the parts marked shown (the others are 0 here: a loss
    transient of an encoder, an absent optimizer step or gathered unit)."""
    value = parts[0][0].value
    for part, _ in parts[1:]:
        value = value + part.value
    return Term(value, render=lambda: _plus([t.text for t, shown in parts if shown]))


def _plus(texts: list[Msg]) -> Joined:
    """Texts joined by " + "."""
    out: list[Any] = []
    for t in texts:
        out += [" + ", t] if out else [t]
    return Joined(*out)


def _loss_note(w: Workload) -> Msg:
    """Which tensors the loss's backward transient is."""
    lc = w.loss_compiled
    what = "fp32_grads" if not lc else "fused_fp32"
    if lc and w.loss_chunks is not None:
        what = "fused_16bit" if w.precision != "fp32" else what
    note = Msg(f"term.loss.{what}")
    if w.loss_chunks is not None:
        chunks = "term.loss.one_chunk" if lc else "term.loss.one_chunk_eager"
        note = Joined(note, ", ", Msg(chunks, n=w.loss_chunks))
    if w.compile and not lc:
        note = Joined(note, "; ", Msg("term.loss.eager"))
    return note


def _device_terms(p: SizingPass, c: dict[str, Any], transient: Num, zero: Num, apart: Num) -> dict[str, Term]:
    """Workspace, CUDA context and allocator reserve as Terms (values and formulas from one expression);
    `c`: the components so far (the reserve is a share of what they allocate)."""
    spec, w, step = p.spec, p.w, p.step
    if p.device != "cuda":
        cpu = Term(zero, "term.ws.cpu")
        ws = cpu
        if step.bytes:
            ws = _bytes(zero + step.bytes, "term.ws.step_cpu", formula=step.formula)
        return {"workspace": ws, "cuda_context": cpu, "reserve": cpu}
    n = cublas_handles(w)
    cublas = ("term.ws.cublas_handles", {"n": n}) if n > 1 else ("term.ws.cublas", {})
    parts = [
        (_bytes(CUBLAS_WORKSPACE_BYTES * n, cublas[0], **cublas[1]), True),
        (_bytes(transient, "term.ws.loss", note=_loss_note(w)), w.training and spec.is_decoder),
        (_bytes(step.bytes, "term.ws.step", formula=step.formula), bool(step.bytes)),
        (_bytes(p.zero3_gather, "term.ws.zero3_unit"), bool(p.zero3_gather)),
    ]
    if w.dp * w.tp > 1:
        parts.append((_bytes(NCCL_BYTES, "term.ws.nccl"), True))
    if w.engine != "hf":
        parts.append((_bytes(CUDA_GRAPH_BYTES, "term.ws.cuda_graphs"), True))
    ws = _sum_shown(parts)
    context = _bytes(CUDA_CONTEXT_BYTES + zero, "term.cuda_context")
    if w.engine == "hf":
        allocated = sum(c[k] for k in COMPONENTS[:7]) + ws.value - apart
        pct = ALLOCATOR_RESERVE_PERCENT
        reserve = Term(allocated * pct // 100, "term.reserve", pct=pct)
    else:
        reserve = Term(zero, "term.reserve.engine", engine=w.engine)
    return {"workspace": ws, "cuda_context": context, "reserve": reserve}


def _total_term(w: Workload, c: dict[str, Any], apart: Num, phase: str) -> Term:
    """The total: every component less what a training step does not hold at its peak phase."""
    summed = sum(c[k] for k in COMPONENTS)

    def render() -> Msg:
        named = _plus([Msg(f"term.component.{k}") for k in COMPONENTS if int(c[k])])
        if w.training and int(apart) > 0:
            said = Msg(f"term.phase.{phase.replace(' ', '_')}")
            return Msg("term.total.peak", phase=said, named=named, apart=int(apart))
        return named

    return Term(summed - apart, render=render)


def _not_at_once(spec: ModelSpecLike, w: Workload, b: Num, s: Num, c: dict[str, Any], transient: Num, t: act.ActivationTerms | None, step_tmp: Num = 0) -> tuple[Num, str]:  # fmt: skip
    """Training: (bytes the components hold at different times of the step: their sum less the step's
    peak phase, `timeline`; that phase's name); (0, "") for inference."""
    if not w.training:
        return 0 * b * s, ""
    summed = c["gradients"] + c["activations"] + c["logits"] + transient + step_tmp
    peak, phase = timeline.step_peak(timeline.phase_bytes(spec, w, b, s, c, transient, t, step_tmp))
    return summed - peak, phase


def shape(w: Workload) -> tuple[int, int]:
    """The workload's own (b, s): micro-batch and sequence for training, concurrency and context else."""
    return (w.batch, w.seq_len) if w.training else (w.concurrency, w.context_len)


def memory_breakdown(
    spec: ModelSpecLike, w: Workload, device: str = "cuda", p: SizingPass | None = None
) -> MemoryBreakdown:
    """The itemised breakdown of one workload with a formula per component (`p`: its SizingPass)."""
    p = p if p is not None else sizing_pass(spec, w, device)
    return breakdown_of(p, evaluate(p, *shape(w)))


def breakdown_of(p: SizingPass, ev: Evaluated) -> MemoryBreakdown:
    """The MemoryBreakdown of `ev` (evaluated at the workload's own shape), with the formulas."""
    spec, w, device = p.spec, p.w, p.device
    b, s = shape(w)
    c = ev.components
    vals = {k: int(v) for k, v in c.items()}
    f = dict(p.states.formulas)
    for k in ("gradients", "optimizer", "master_weights"):
        f.setdefault(k, Msg("term.zero.inference"))
    if w.training:
        f["kv_cache"] = Msg("term.zero.training_kv")
    else:
        f["kv_cache"] = kv_term(spec, w, int(b), int(s)).text
    f.update((k, t.text) for k, t in ev.terms.items())
    f = {k: f[k] for k in (*COMPONENTS, "total")}
    return MemoryBreakdown(**vals, formulas=f, host=host_components(spec, w, b, s, device, p))


def host_components(
    spec: ModelSpecLike, w: Workload, b: int, s: int, device: str = "cuda", p: SizingPass | None = None
) -> dict[str, int]:
    """Bytes per GPU the options keep off the GPU, by HOST_KEYS."""
    p = p if p is not None else sizing_pass(spec, w, device)
    st = p.states
    return {
        "offloaded_states": int(st.host),
        "offloaded_activations": int(act.offloaded_activation_bytes(spec, w, b, s, device, p.terms)),
        "paged_optimizer": int(st.paged),
    }
