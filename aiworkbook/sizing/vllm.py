"""vLLM's own start-up arithmetic: what `vllm serve` logs as "Available KV cache memory", "GPU KV
cache size: N tokens" and "Maximum concurrency for L tokens per request".

The worker (`determine_available_memory`) asks for `requested = total x gpu_memory_utilization`,
where total is what CUDA reports (cudaMemGetInfo: less than nvidia-smi's figure), and subtracts the
non-KV memory it measured around one profiling forward:

    available = requested - (weights + torch peak increase of the profile run + non-torch increase)

- weights: the checkpoint at its dtype or quantisation, split by tensor and pipeline parallelism, plus
  what PyTorch's caching allocator counts beyond it (load_slack: blocks handed out whole, the padded
  vocabulary), since "Model loading took" reads torch.cuda.max_memory_allocated;
- the profile run: one forward of `max_num_batched_tokens` tokens (its largest live set is the MLP's:
  the gate/up output, the activation output, the hidden state and the residual; for fused MoE the
  per-token top-k intermediate caches), then the sampler over `min(max_num_seqs, tokens)` dummy rows
  of fp32 logits (top-k/top-p sort values and int64 indices, probabilities, masks: 28 B per logit in
  the V1 sampler, 14 B in vLLM 0.19's sort-free one, 40 B in V0's gather-based one), with the
  forward's hidden states still alive (and in 0.19 the sampled rows, their rand_like and the cuBLAS
  workspace: profile_peak_bytes);
- non-torch memory: CUDA/NCCL allocations outside PyTorch since the baseline (the CUDA context
  predates it and is not counted); larger under tensor parallelism (communication buffers).

CUDA graphs are captured after the KV cache is allocated and do not come out of it (V1 up to
0.11; `VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS` later subtracts an estimate: option
`cudagraph_bytes`). The KV cache is whole blocks: `num_blocks = available // page // layers` with
`page = block_size x kv_heads_per_rank x width x bytes`; tensor parallelism splits KV heads
(replicated when fewer heads than ranks), MLA's latent is one unsplit "head". Pipeline parallelism: each
stage's worker profiles its own share (its layers as get_pp_indices splits them, the embedding on the first,
the head and the dummy sampler on the last, the receive buffers of the previous stage's hidden states on
every later one) and sizes its own blocks; the engine keeps the fewest (get_kv_cache_configs), and the
figures reported are that stage's. Models with sliding and full layers
follow the hybrid allocator: layers are grouped in groups of equal size (the smallest layer-type
count, or the largest when within 1.5x), each group shares the pooled blocks and "GPU KV cache size"
reports `num_blocks // groups x block_size` (engine "v1"; the current source, "v1-092", reports the
group-aware `int(max_concurrency x max_model_len)` and defaults the utilisation to 0.92: ENGINES).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiworkbook.errors import SpecError
from aiworkbook.message import Joined, Msg
from aiworkbook.sizing.sections import Section, figure
from aiworkbook.specs.kv import kv_bytes, one_layer
from aiworkbook.units import DTYPE_BITS

if TYPE_CHECKING:
    from aiworkbook.specs.gpu import GPUSpec
    from aiworkbook.specs.protocol import ModelSpecLike

GiB = 1 << 30
#: Engine versions whose start-up semantics differ. "v1": the V1 engine from 0.8 on with the long-standing
#: default `gpu_memory_utilization` 0.9 and "GPU KV cache size" = blocks // groups x block_size
#: (kv_cache_utils._report_kv_cache_config at commit 001cabc1be16a59a70d720ed61a13b678c060a18);
#: "v1-092": the current source: CacheConfig defaults the utilisation to 0.92 (vllm/config/cache.py,
#: `Field(default=0.92, gt=0, le=1)` at commit 002f10e0cfa1373a19a0d2756598a34b700d20e5; public quotes
#: place it in v0.25.0 and v0.30.0) and "GPU KV cache size" is the group-aware int(max_concurrency x
#: max_model_len) (get_kv_cache_capacity); the first release of either change is not pinned here;
#: "v0": the V0 engine of 0.6.4-0.7 (its profile and sampler differ, see NON_TORCH and SAMPLER_BYTES);
#: "v1-019": the V1 engine of the 0.19 releases: "v1" defaults and reporting (0.19.0 still prints
#: blocks // groups x block: vllm-project/vllm#40691, fixed after it by #40694), its own sampler and
#: non-torch memory (SAMPLER_BYTES, NON_TORCH).
ENGINES = ("v1", "v1-092", "v0", "v1-019")
#: vLLM releases (major.minor) this project models, each with the arithmetic it uses: V0 up to 0.7,
#: V1 from 0.8 (the default engine since 0.8.0), 0.19's own sampler and non-torch memory.
RELEASES: dict[str, str] = {
    **{f"0.{m}": "v0" for m in (6, 7)},
    **{f"0.{m}": "v1" for m in range(8, 19)},
    "0.19": "v1-019",
}
OLDEST_V0_PATCH = 4  # 0.6.4: the first V0 release this arithmetic follows
#: The newest vLLM release this project models: the default --engine-version
NEWEST_RELEASE = max(RELEASES, key=lambda r: tuple(map(int, r.split("."))))


def known_releases() -> str:
    """The release numbers and arithmetic names --engine-version accepts, for an error or a help text."""
    return f"vLLM 0.6.{OLDEST_V0_PATCH} ... {NEWEST_RELEASE}.x, or " + ", ".join(ENGINES)


def releases_of(engine: str) -> str:
    """The modelled releases that use arithmetic `engine` ("0.8-0.18", "0.19.x"; "" where none is
    pinned)."""
    mine = [r for r, e in RELEASES.items() if e == engine]
    if not mine:
        return ""
    first = f"{mine[0]}.{OLDEST_V0_PATCH}" if mine[0] == "0.6" else mine[0]
    return f"{first}.x" if len(mine) == 1 else f"{first}-{mine[-1]}"


def engine_of(version: str) -> str:
    """The arithmetic for `version`: an arithmetic name (ENGINES) as is, or a vLLM release number
    ("0.19.1", "v0.8.5", "0.10", "0.19.x" as known_releases writes it: any patch) mapped by RELEASES; an
    unknown one is refused naming the known ones (0.6.x too: only 0.6.4 on is modelled)."""
    if version in ENGINES:
        return version
    parts = version.strip().lstrip("v").split(".")
    key = ".".join(parts[:2])
    any_patch = len(parts) == 3 and parts[2].lower() == "x"
    digits = parts[:2] if any_patch else parts
    ok = len(parts) in (2, 3) and all(p.isdigit() for p in digits) and key in RELEASES
    if ok and key == "0.6" and len(parts) == 3 and (any_patch or int(parts[2]) < OLDEST_V0_PATCH):
        ok = False
    if not ok:
        raise SpecError("engine_version", version, known_releases())
    return RELEASES[key]


def release_label(version: str) -> str:
    """What an output names: "vLLM 0.19.1 (arithmetic v1-019)" for a release number, "arithmetic v1
    (vLLM 0.8-0.18)" for an arithmetic named as such (engine_of refuses anything else)."""
    engine = engine_of(version)
    from aiworkbook.message import Msg

    if version in ENGINES:
        span = releases_of(engine)
        return (
            Msg("vllm.arithmetic.span", engine=engine, span=span)
            if span
            else Msg("vllm.arithmetic", engine=engine)
        )
    number = version.strip().lstrip("v")
    series = number.count(".") == 1  # "0.19": any patch of it
    return Msg("vllm.release", release=number + (".x" if series else ""), engine=engine)


#: --quantization methods this arithmetic knows, and the weight width each loads at (weights_bytes)
QUANTIZATION_WEIGHTS = {"fp8": "fp8", "awq": "int4", "gptq": "int4", "bitsandbytes": "nf4", "w8a8": "int8"}
#: --block-size values vLLM accepts (vllm/config/cache.py: BlockSize)
BLOCK_SIZES = (1, 8, 16, 32, 64, 128, 256)
#: The default `--gpu-memory-utilization` per engine version (0.9: vllm/config.py and the engine-args
#: docs up to 0.2x, vllm-project/vllm#2162; 0.92: the CacheConfig above).
DEFAULT_UTILIZATION = {"v1": 0.9, "v1-092": 0.92, "v0": 0.9, "v1-019": 0.9}
#: The most ranks (tensor x pipeline) one engine is sized for. vLLM's engines span a few nodes (hundreds
#: of ranks at most); a larger number is a typo, and refusing it before use keeps anything built per rank
#: (a device list, a table) small.
MAX_RANKS = 65536
#: vLLM's usage contexts whose batch defaults differ: `vllm serve` and the offline `LLM` class.
USAGES = ("serve", "llm")

#: Memory outside PyTorch's allocator that the profile measures (bytes), by engine and tp == 1 / > 1.
#: V1: ~0.25 GiB alone (REFERENCE.md, "Inference memory"); 0.55 GiB with tensor parallelism, as V1 logs
#: itemise it (llm-d-benchmark config_explorer, H100 tp 2: Llama-3.3-70B-FP8 0.55 GiB, Qwen3-32B
#: 0.54 GiB; no V1 log found shows the 2.1 GiB REFERENCE.md gives, and a Qwen2-7B tp 2 run on two A100
#: 40 GB leaves 0.51 GiB for it: tests/data/vllm_startup_cases.json); V0 (0.6.4-0.6.6): 0.35 GiB alone
#: (vllm#10517), 1.79 / 3.58 GiB on H100 at tp 1 / 2 (vllm#10511).
#: vLLM 0.19 on H100 (REFERENCE.md, "Inference memory": the 0.19 V1 logs of issue 23): 0.24 GiB alone and
#: 2.1 GiB at tp 2 and 4 (communication buffers set up during the profile forward's first all-reduces;
#: the worker takes its baseline after init_worker_distributed_environment, vllm/v1/worker/gpu_worker.py).
#: Among them FlashInfer's all-reduce + RMSNorm fusion workspace (tp > 1 on Hopper, pp 1: vllm/config/vllm.py
#: enable_allreduce_rms_fusion), allocated outside torch for min(64 MiB // (hidden x 2 B), max_num_batched_
#: tokens) tokens at tp 2 (compilation/passes/fusion/allreduce_rms_fusion.py, v0.19.0): one 64 MiB message
#: for hidden 8,192 and 4,096 alike, so the 72B and Mixtral runs log the same figure.
NON_TORCH = {
    "v1": (int(0.25 * GiB), int(0.55 * GiB)),
    "v0": (int(0.35 * GiB), int(3.58 * GiB)),
    "v1-019": (int(0.24 * GiB), int(2.1 * GiB)),
}
#: Bytes per logit the sampler keeps alive at its peak (see the module docstring). "v1-019": the
#: sort-free top-k/top-p path (sampler_bytes_per_logit), plus its cached scratch (topk_topp_buffer_rows)
#: and, for Gemma 3, the profile's dummy images (mm_dummy_batch_bytes).
SAMPLER_BYTES = {"v1": 28, "v0": 40, "v1-019": 14}


@dataclass(frozen=True)
class VllmSettings:
    """vLLM's own flags (None: the engine's default for the GPU)."""

    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    gpu_memory_utilization: float | None = None  # None: DEFAULT_UTILIZATION of the engine version
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    kv_cache_dtype: str = "auto"
    dtype: str = "auto"
    quantization: str | None = None
    block_size: int = 16
    engine: str = NEWEST_RELEASE  # a vLLM release or an arithmetic (ENGINES); held as the arithmetic
    usage: str = "serve"  # vLLM's usage context: `vllm serve` or the offline `LLM` class ("llm")
    non_torch_bytes: int | None = None  # None: NON_TORCH for the engine and tp
    cudagraph_bytes: int = 0  # subtracted only where the engine version does (opt-in estimate)
    version: str = ""  # what was asked for: the release number or arithmetic name ("" : engine's)

    def __post_init__(self) -> None:
        if isinstance(self.engine, str) and not self.version:
            object.__setattr__(self, "version", self.engine.strip())
        if isinstance(self.engine, str) and self.engine not in ENGINES:  # a release number
            object.__setattr__(self, "engine", engine_of(self.engine))

    @property
    def label(self) -> str:
        """The release (and arithmetic) every output names: release_label."""
        return release_label(self.version)

    @property
    def family(self) -> str:
        """ "v0" or "v1": the engine generation whose profile, sampler and defaults apply."""
        return "v0" if self.engine == "v0" else "v1"

    @property
    def release(self) -> str:
        """The key of the release-specific profile tables (NON_TORCH, SAMPLER_BYTES): the engine version
        where it has its own entry, else its generation."""
        return self.engine if self.engine in NON_TORCH else self.family

    @property
    def utilization(self) -> float:
        """--gpu-memory-utilization as given, else the engine version's default."""
        if self.gpu_memory_utilization is None:
            return DEFAULT_UTILIZATION[self.engine]
        return self.gpu_memory_utilization

    def check(self) -> None:
        for name in ("tensor_parallel_size", "pipeline_parallel_size", "block_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise SpecError(name, v, Msg("allowed.int_min", low=1))
        tp, pp = self.tensor_parallel_size, self.pipeline_parallel_size
        for name, v in (("tensor_parallel_size", tp), ("pipeline_parallel_size", pp)):
            if v > MAX_RANKS or tp * pp > MAX_RANKS:
                raise SpecError(name, v, Msg("allowed.vllm_ranks", n=MAX_RANKS))
        if self.block_size not in BLOCK_SIZES:
            raise SpecError("block_size", self.block_size, ", ".join(map(str, BLOCK_SIZES)))
        if self.quantization is not None and self.quantization not in QUANTIZATION_WEIGHTS:
            raise SpecError("quantization", self.quantization, ", ".join(QUANTIZATION_WEIGHTS))
        if self.engine not in ENGINES:
            raise SpecError("engine_version", self.engine, ", ".join(ENGINES))
        if self.gpu_memory_utilization is not None and not 0 < self.gpu_memory_utilization <= 1:
            from aiworkbook.sizing.workload import allowed_words

            raise SpecError(
                "gpu_memory_utilization", self.gpu_memory_utilization, allowed_words("gpu_memory_utilization")
            )
        for name in ("max_model_len", "max_num_seqs", "max_num_batched_tokens"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise SpecError(name, v, Msg("allowed.int_min_or_default", low=1))
        if self.usage not in USAGES:
            raise SpecError("usage", self.usage, ", ".join(USAGES))
        if self.kv_cache_dtype not in ("auto", "bf16", "fp16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp32"):
            raise SpecError(
                "kv_cache_dtype", self.kv_cache_dtype, "auto, bf16, fp16, fp8, fp8_e4m3, fp8_e5m2"
            )
        if self.dtype not in ("auto", "bf16", "bfloat16", "fp16", "float16", "half", "fp32", "float32"):
            raise SpecError("dtype", self.dtype, "auto, bfloat16, float16, float32")


@dataclass(frozen=True)
class VllmStartup(Section):
    """What vLLM logs at start-up, and the items it subtracted (one GPU of the first stage)."""

    total_bytes: int = figure("B", "CUDA-visible memory of one GPU (cudaMemGetInfo total)")
    requested_bytes: int = figure("B", "total x gpu_memory_utilization")
    weights_bytes: int = figure("B", "weights on one GPU (vLLM's 'Model loading took')")
    activation_peak_bytes: int = figure("B", "torch peak of the profile run (forward or sampler)")
    non_torch_bytes: int = figure("B", "memory outside PyTorch's allocator (NCCL, CUDA runtime)")
    cudagraph_bytes: int = figure("B", "CUDA graphs subtracted (0 where captured after the KV cache)")
    available_kv_bytes: int = figure("B", "vLLM's 'Available KV cache memory'")
    num_blocks: int = figure("", "KV blocks allocated")
    kv_cache_tokens: int = figure("tokens", "vLLM's 'GPU KV cache size: N tokens'")
    kv_cache_bytes: int = figure("B", "bytes the KV blocks take")
    max_concurrency: float = figure("ratio", "vLLM's 'Maximum concurrency for L tokens per request'")
    one_request_kv_bytes: int = figure("B", "KV cache one request of max_model_len needs on this GPU")
    starts: bool = figure("", "whether vLLM starts: the available memory holds one such request")
    refusal: str | None = figure("", "why vLLM refuses to start (its own check), else none", omit_none=True)
    max_model_len: int = figure("tokens", "context per request (--max-model-len)")
    max_num_seqs: int = figure("", "sequences per step (--max-num-seqs)")
    max_num_batched_tokens: int = figure("tokens", "tokens per step (--max-num-batched-tokens)")
    kv_groups: int = figure("", "KV cache groups (hybrid allocator)")
    page_bytes: int = figure("B", "bytes of one block across the layers of a group")
    engine_version: str = figure("", "the vLLM release (or arithmetic) asked for: --engine-version")
    arithmetic: str = figure("", "the start-up arithmetic that release uses (sizing.vllm.ENGINES)")
    formulas: dict[str, str] = field(default_factory=dict, metadata={"unit": "", "doc": "formula per item"})


def _act_bytes(s: VllmSettings, spec: ModelSpecLike) -> int:
    d = s.dtype
    if d in ("fp32", "float32"):
        return 4
    return 2


def _kv_bytes(s: VllmSettings, spec: ModelSpecLike) -> float:
    if s.kv_cache_dtype == "auto":
        return _act_bytes(s, spec)
    return DTYPE_BITS[{"fp8_e4m3": "fp8", "fp8_e5m2": "fp8"}.get(s.kv_cache_dtype, s.kv_cache_dtype)] / 8


def defaults(
    gpu_cuda_bytes: int, gpu_name: str, engine: str, max_model_len: int, usage: str = "serve"
) -> tuple[int, int]:
    """(max_num_seqs, max_num_batched_tokens) the engine picks when not given.

    V1, by usage context (vllm/engine/arg_utils.py, the batch-defaults table, unchanged up to v0.30.0):
    on GPUs with >= 70 GiB that are not A100s, `vllm serve` 1024 and 8192, the offline `LLM` class
    1024 and 16384; on others 256 and 2048 (serve), 256 and 8192 (`LLM`). V0: 256, and
    max(max_model_len, 2048) tokens (no chunked prefill up to 32K tokens; above, chunked prefill with
    2048 tokens, the OpenAI server's default)."""
    if engine == "v0":
        return 256, (max(max_model_len, 2048) if max_model_len <= 32768 else 2048)
    big = gpu_cuda_bytes >= 70 * GiB and "a100" not in gpu_name.lower()
    seqs = 1024 if big else 256
    tokens = {("serve", True): 8192, ("llm", True): 16384, ("serve", False): 2048, ("llm", False): 8192}
    return seqs, tokens[(usage, big)]


def weight_bytes(spec: ModelSpecLike, s: VllmSettings, stage: int | None = None) -> int:
    """One rank's weights: everything split over tp; with pp, pipeline stage `stage` (0-based; None: the
    heaviest) holds its layers as vLLM partitions them (pp_partition), the first stage the embedding and
    a multimodal tower, the last the head (a tied head too: the last stage builds its own ParallelLMHead
    and loads the embedding into it), and every rank the rotary tables.

    A multimodal wrapper's vision tower and projector load with the language model, at the model's
    dtype, tensor-parallel like it, on the first pipeline stage: vLLM's
    Gemma3ForConditionalGeneration.__init__ builds `SiglipVisionModel` and `Gemma3MultiModalProjector`
    next to the language model (vllm/model_executor/models/gemma3_mm.py), so "Model loading took"
    counts them (gemma-3-27b-it: 0.79 GiB of its 51.79 GiB). The language model is built from the
    text_config alone (`init_vllm_registered_model(hf_config=config.text_config)` in mistral3.py and
    gemma3_mm.py; LlamaForCausalLM ties only `if config.tie_word_embeddings`), so its head is tied as the
    text_config says, not as transformers' wrapper does: Mistral Small 3.x keeps an untied head
    (MistralConfig's default), 0.625 GiB more than the wrapper's tied count.

    On top of the checkpoint's bytes, what "Model loading took" counts of the tensors this rank builds:
    the caching allocator's whole blocks and the padded vocabulary (load_slack)."""
    from aiworkbook.sizing.states import inference_weight_bytes

    wd = QUANTIZATION_WEIGHTS.get(s.quantization or "", "bf16")
    if _act_bytes(s, spec) == 4 and wd == "bf16":
        wd = "fp32"
    width = 4 if wd == "fp32" else 2
    total, _ = inference_weight_bytes(spec, wd)
    total += rope_cache_bytes(spec, s) * tp_pp(s)  # every rank holds the whole table
    vision = getattr(spec, "vision_params", 0) * width
    head = spec.params_head
    text_tie = getattr(spec, "text_tie_word_embeddings", None)
    if text_tie is not None and text_tie != spec.tie_word_embeddings:  # vLLM ties as text_config says
        head = 0 if text_tie else spec.params_embedding
        total += (head - spec.params_head) * width
    pp, tp = s.pipeline_parallel_size, s.tensor_parallel_size
    if pp == 1:
        return (total + vision) // tp + load_slack(spec, s, width, None, bool(head))
    if stage is None:
        return max(weight_bytes(spec, s, i) for i in range(pp))
    rope = rope_cache_bytes(spec, s)
    layers = total - rope * tp_pp(s) - (spec.params_embedding + head) * width
    parts = pp_partition(spec.num_layers, pp)
    mine = -(-layers * parts[stage] // spec.num_layers)
    if stage == 0:
        mine += spec.params_embedding * width + vision
    if stage == pp - 1:
        mine += (head or spec.params_embedding) * width
    return mine // tp + rope + load_slack(spec, s, width, stage, stage == pp - 1)


def load_slack(spec: ModelSpecLike, s: VllmSettings, width: int, stage: int | None, head: bool) -> int:
    """What "Model loading took" counts on one rank of pipeline stage `stage` (None: the only one) beyond
    the checkpoint's bytes: vLLM's padded vocabulary rows and the blocks PyTorch's caching allocator
    hands out whole (sizing.vllm_tensors, sizing.cuda_allocator). Qwen2.5-72B at tp 2: each layer's
    231 MiB down projection takes a 232 MiB block, 80 MiB in all (67.72 + 0.08 = 67.80 GiB, logged
    67.8); R1-Distill-Qwen-14B at tp 2 (vllm#13061): 3.5 MiB a layer, 0.16 GiB (13.95 GiB logged);
    Qwen2-7B at tp 2: 0.02 GiB (7.12 logged). 0 for a quantised checkpoint (its packed tensors are not
    listed) and for layers that are not alike (vllm_tensors.alike_layers)."""
    from aiworkbook.sizing.vllm_tensors import load_slack_bytes, stage_tensors

    if s.quantization or getattr(spec, "quant", None) is not None:
        return 0
    pp, tp = s.pipeline_parallel_size, s.tensor_parallel_size
    first = stage is None or stage == 0
    layers = spec.num_layers if stage is None else pp_partition(spec.num_layers, pp)[stage]
    positions = getattr(spec, "rope_table_positions", ()) or (spec.max_position_embeddings,)
    tables = (
        () if spec.learned_positions else tuple(n * spec.head_dim * _act_bytes(s, spec) for n in positions)
    )
    tensors = stage_tensors(
        spec, tp=tp, width=width, layers=layers, embedding=first, head=head, rope_tables=tables
    )
    return load_slack_bytes(spec, tensors, tp, width, first + head)


def pp_partition(layers: int, pp: int) -> list[int]:
    """Layers per pipeline stage as vLLM splits them (get_pp_indices, vllm/distributed/utils.py): an even
    share each, the remainder one by one to the stages before the last (the last runs the final norm, the
    head and the sampler): 61 layers at pp 4 are [15, 15, 16, 15]."""
    per, extra = divmod(layers, pp)
    parts = [per] * pp
    for i in range(2, extra + 2):
        parts[-i] += 1
    return parts


def tp_pp(s: VllmSettings) -> int:
    return s.tensor_parallel_size * s.pipeline_parallel_size


def rope_cache_bytes(spec: ModelSpecLike, s: VllmSettings) -> int:
    """The rotary cos/sin tables vLLM builds at load (positions x rotary dim, model dtype): part of
    "Model loading took" (Llama 3.1's 131,072 positions: 32 MiB). get_rope caches one table per
    distinct (base, scaling): Gemma 3's local layers use rope_local_base_freq unscaled and its global
    layers the config's rope_scaling (vllm/model_executor/models/gemma3.py), and a linear factor f
    builds f x max_position_embeddings positions (LinearScalingRotaryEmbedding._compute_cos_sin_cache:
    gemma-3-27b-it's global table holds 1,048,576 positions, 256 MiB)."""
    if spec.learned_positions:
        return 0
    positions = sum(getattr(spec, "rope_table_positions", ())) or spec.max_position_embeddings
    return positions * spec.head_dim * _act_bytes(s, spec)


def profile_peak_bytes(
    spec: ModelSpecLike,
    s: VllmSettings,
    seqs: int,
    tokens: int,
    *,
    sm_count: int = 0,
    compute_capability: str = "",
    max_len: int = 0,
    stage: int | None = None,
) -> tuple[int, Msg]:
    """Torch peak increase of the profile run over the weights (see the module docstring); `sm_count`
    (the GPU's streaming multiprocessors, 0 if not recorded), `compute_capability` ("9.0"; "" if not
    recorded) and `max_len` (--max-model-len) size the vLLM 0.19 items (topk_topp_buffer_rows,
    cublas_workspace_bytes, mm_dummy_batch_bytes).

    vLLM 0.19 keeps two more things alive through the dummy sampler (vllm/v1/worker/gpu_model_runner.py,
    v0.19.0): the sampled rows `hidden_states[logit_indices_device]` that _dummy_run returns (an indexed
    copy, [rows x hidden], held by profile_run as last_hidden_states) and the `torch.rand_like` of them
    that _dummy_sampler_run feeds compute_logits: 2 x rows x hidden x bytes (32 MiB on a 72B at 1,024
    rows). Its torch peak also holds the cuBLAS workspace the profile's first GEMM allocates
    (cublas_workspace_bytes), under the forward and the sampler alike.

    With pipeline parallelism, on stage `stage` (0-based; None: one stage that is first and last): only
    the last stage runs the dummy sampler (gpu_model_runner.profile_run: `if get_pp_group().is_last_rank`),
    and every stage after the first allocates, in its first dummy run, the buffers it receives the
    previous stage's hidden states and residual into, [max_num_batched_tokens x hidden] each, kept for
    the engine's life (`self.intermediate_tensors = make_empty_intermediate_tensors(batch_size=
    self.max_num_tokens, ...)` in _dummy_run), so they sit under both the forward and the sampler."""
    # Three hidden-sized tensors live through the MLP: the layer's input (the model loop still
    # references it until the layer returns), the residual, and the normalised attention output.
    b, tp = _act_bytes(s, spec), s.tensor_parallel_size
    h, i = spec.hidden_size, spec.intermediate_size
    if spec.num_experts:
        k = spec.experts_per_token
        m = min(tokens, 32768)  # fused_moe processes at most VLLM_FUSED_MOE_CHUNK_SIZE tokens at once
        moe = m * (k * (3 * i // tp + h) * b + 4 * spec.num_experts + 8 * k)
        fwd = tokens * 3 * h * b + moe
        fwd_txt: Msg = Msg("term.vllm.fwd_moe", tokens=tokens, h=h, b=b, m=m, k=k, i=i, tp=tp)
    else:
        mats = 3 if spec.gated_mlp else 2
        fwd = tokens * (mats * i // tp + 3 * h) * b
        fwd_txt = Msg("term.vllm.fwd", tokens=tokens, mats=mats, i=i, tp=tp, h=h, b=b)
    first = stage is None or stage == 0
    last = stage is None or stage == s.pipeline_parallel_size - 1
    if not first:
        received = 2 * tokens * h * b
        fwd += received
        fwd_txt = Joined(fwd_txt, " + ", Msg("term.vllm.received", tokens=tokens, h=h, b=b))
    rows = min(seqs, tokens)
    per_logit = sampler_bytes_per_logit(s)
    sampler = rows * spec.vocab_size * per_logit + tokens * h * b
    samp_txt: Msg = Msg(
        "term.vllm.sampler", rows=rows, vocab=spec.vocab_size, per=per_logit, tokens=tokens, h=h, b=b
    )
    if s.release == "v1-019":
        held, held_txt = mm_dummy_batch_bytes(spec, s, seqs, tokens, max_len)
        if held:  # the dummy images and their embeddings outlive the encoder run
            fwd, sampler = fwd + held, sampler + held
            fwd_txt, samp_txt = Joined(fwd_txt, held_txt), Joined(samp_txt, held_txt)
        buf_rows = topk_topp_buffer_rows(rows, sm_count)
        if buf_rows:
            sampler += buf_rows * spec.vocab_size * 4
            samp_txt = Joined(
                samp_txt, " + ", Msg("term.vllm.topk_buffer", rows=buf_rows, vocab=spec.vocab_size)
            )
        elif rows >= 8:
            samp_txt = Joined(samp_txt, " ", Msg("term.vllm.topk_not_counted"))
        sampler += 2 * rows * h * b
        samp_txt = Joined(samp_txt, " + ", Msg("term.vllm.sampled_rows", rows=rows, h=h, b=b))
        ws = cublas_workspace_bytes(compute_capability)
        ws_txt = Msg("term.vllm.cublas", size=ws) if ws else Msg("term.vllm.cublas_not_counted")
        fwd, sampler = fwd + ws, sampler + ws
        fwd_txt = Joined(fwd_txt, " + " if ws else " ", ws_txt)
        samp_txt = Joined(samp_txt, " + " if ws else " ", ws_txt)
    if s.release == "v1-019" and spec.num_experts:  # the MoE scratch outlives the forward
        sampler += moe_workspace_bytes(spec, s, tokens)
        samp_txt = Joined(samp_txt, " + ", Msg("term.vllm.moe_workspace"))
    if not first:
        sampler += received
        samp_txt = Joined(samp_txt, " + ", Msg("term.vllm.received", tokens=tokens, h=h, b=b))
    if not last:
        return fwd, Msg("term.vllm.not_last_stage", forward=fwd_txt)
    if sampler > fwd:
        return sampler, Msg("term.vllm.sampler_peak", sampler=samp_txt, forward=fwd_txt)
    return fwd, Msg("term.vllm.forward_peak", sampler=samp_txt, forward=fwd_txt)


def cublas_workspace_bytes(compute_capability: str) -> int:
    """The cuBLAS workspace PyTorch allocates from its caching allocator on a stream's first GEMM and
    keeps for the process (getNewWorkspace in aten/src/ATen/cuda/CublasHandlePool.cpp: `CUDACaching
    Allocator::get()->allocate(getChosenWorkspaceSize())`, kept in cublas_handle_stream_to_workspace;
    cuBLASLt shares it, TORCH_CUBLASLT_UNIFIED_WORKSPACE on by default). vLLM 0.19 pins torch 2.10.0
    (requirements/cuda.txt), whose parseChosenWorkspaceSize gives 32 MiB (:4096:8) on Hopper,
    compute capability 9.x, and :4096:2:16:8 (8 MiB + 128 KiB) on others (32 MiB on Blackwell came
    later: pytorch/pytorch#175344, February 2026). vLLM runs no GEMM before its profile (loading copies
    weights in), so the workspace is allocated inside it and counted in its torch peak. 0 where the
    compute capability is not recorded or is not NVIDIA's (ROCm's default differs and is not read)."""
    major = compute_capability.split(".")[0]
    if not major.isdigit():
        return 0
    return 4096 * 1024 * 8 if int(major) == 9 else 4096 * 1024 * 2 + 16 * 1024 * 8


def topk_topp_buffer_rows(rows: int, sm_count: int) -> int:
    """Rows of the fp32 [rows x vocab] scratch buffer vLLM 0.19's Triton top-k/top-p kernel allocates on
    its first call (the profile's dummy sampler) and keeps in a module-level cache, so it is still held
    at the sampler's peak: vllm/v1/sample/ops/topk_topp_triton.py (v0.19.0), apply_top_k_top_p_triton:
    NUM_PROGRAMS = min(num_sm, batch_size); size = min(next_power_of_2(NUM_PROGRAMS), num_sm);
    `buffer = logits.new_empty((size, vocab_size))` stored in _TRITON_BUFFER_CACHE. The Triton path
    runs for 8 rows or more (topk_topp_sampler.py, apply_top_k_top_p); 0 when the SM count is unknown."""
    if rows < 8 or sm_count < 1:
        return 0
    programs = min(sm_count, rows)
    return min(1 << (programs - 1).bit_length(), sm_count)


def mm_dummy_batch_bytes(
    spec: ModelSpecLike, s: VllmSettings, seqs: int, tokens: int, max_len: int
) -> tuple[int, Msg]:
    """What Gemma 3's multimodal profile leaves alive through the decoder's dummy forward and the dummy
    sampler (vLLM 0.19.0, vllm/v1/worker/gpu_model_runner.py, profile_run): the batch of dummy images
    (`batched_dummy_mm_inputs`, a local of profile_run, pixel values cast to the model dtype by
    multimodal/processing/context.py _postprocess_output) and the projected image embeddings it puts in
    `self.encoder_cache` (cleared only after the sampler). The image count is MultiModalBudget's
    (multimodal/encoder_budget.py): encoder budget max(max_num_batched_tokens, tokens per image) //
    tokens per image, at most max_num_seqs x min(999, max_model_len // tokens per image) (999: the
    default limit per prompt, config/multimodal.py). Gemma 3's dummy image is one image_size^2 crop of
    mm_tokens_per_image embeddings (gemma3_mm.py, pan-and-scan off by default). The encoder's own
    activation peak (SigLIP over those images) is not sized here: about 3.4 GiB for 32 images of
    896 px, below the dummy sampler's at the default 1,024 sequences."""
    image = getattr(spec, "mm_dummy_image", ())
    if not image:
        return 0, Joined()
    ch, size, per_item = image
    b = _act_bytes(s, spec)
    budget = max(tokens, per_item)
    per_prompt = max(1, min(999, max_len // per_item)) if max_len else 1
    n = max(1, min(budget // per_item, seqs * per_prompt))
    held = n * (ch * size * size + per_item * spec.hidden_size) * b
    images = Msg(
        "term.vllm.dummy_images", n=n, ch=ch, size=size, b=b, per_item=per_item, hidden=spec.hidden_size
    )
    return held, Joined(" + ", images)


def moe_workspace_bytes(spec: ModelSpecLike, s: VllmSettings, tokens: int) -> int:
    """Fused MoE's scratch, which vLLM 0.19 takes from the worker's WorkspaceManager: one buffer that
    grows to the largest request and is never freed (vllm/v1/worker/workspace.py), so it is still held
    while the dummy sampler runs. FusedMoEModularKernel._allocate_buffers asks for workspace13 (shared
    with the output) and workspace2 together; TritonExperts.workspace_shapes gives them as
    (M, topk, max(N/2, K)) and (M, topk, max(N, K)), N = 2 x the expert's intermediate size / tp (gate
    and up), K = hidden, M = the tokens of one chunk (vllm/model_executor/layers/fused_moe/; chunking on
    by default, VLLM_FUSED_MOE_CHUNK_SIZE 16 x 1024 in vllm/envs.py)."""
    if not spec.num_experts:
        return 0
    b, k, hdim = _act_bytes(s, spec), spec.experts_per_token, spec.hidden_size
    n = 2 * spec.intermediate_size // s.tensor_parallel_size
    m = min(tokens, 16 * 1024)
    return m * k * (max(n // 2, hdim) + max(n, hdim)) * b


def sampler_bytes_per_logit(s: VllmSettings) -> int:
    """Bytes per logit alive at the dummy sampler's peak (profile_run -> _dummy_sampler_run, top-k
    vocab-1 and top-p 0.9 over one row per dummy request; vllm/v1/worker/gpu_model_runner.py).

    V1 up to the sort-based top-k/top-p (vllm/v1/sample/ops/topk_topp_sampler.py, apply_top_k_top_p):
    the model's bf16 logits 2 + their fp32 copy 4 (Sampler.forward) + sorted values 4 + int64 indices 8
    + top-k and top-p masks 1 + 1 + the softmax/cumsum of the sorted values 4 + the scattered result 4
    = 28. vLLM 0.19 ("v1-019") masks in place with the Triton top-k/top-p kernel (apply_top_k_top_p_triton,
    vllm-project/vllm#33538, "float32 tensor, modified in-place" from v0.18.0 on:
    https://docs.vllm.ai/en/v0.18.0/api/vllm/v1/sample/ops/topk_topp_triton/; the dummy run's 1024 rows
    take it), no sort: bf16 logits 2 + fp32 copy 4 (temperature divides it in place) +
    probabilities 4 + the exponential noise of random_sample 4 = 14; the kernel's own [SMs x vocab] fp32
    buffer (~0.1 GiB on an H100) is left out. V0's gather-based sampler: 40."""
    return SAMPLER_BYTES[s.release]


def _kv_layout(
    spec: ModelSpecLike, s: VllmSettings, stage_layers: int | None = None
) -> list[tuple[str, int, int, int | None]]:
    """(kind, layers on one pipeline stage, page bytes per layer, window) per layer type: the stage holding
    `stage_layers` of the model's layers (each type's share of them, rounded up), else the busiest stage."""
    from math import ceil

    bits = int(_kv_bytes(s, spec) * 8)
    tp, pp = s.tensor_parallel_size, s.pipeline_parallel_size
    out = []
    for g in spec.kv_layer_groups():
        page = kv_bytes((one_layer(g),), s.block_size, bits, tp, windowed=False)
        n = ceil(g.layers / pp) if stage_layers is None else ceil(g.layers * stage_layers / spec.num_layers)
        out.append((g.kind, n, page, g.window))
    return out


def _max_usage_blocks(kind: str, window: int | None, s: VllmSettings, max_len: int, batched: int) -> int:
    """Blocks one request of max_model_len needs in a layer of this kind (vLLM's max_memory_usage)."""
    bs = s.block_size
    if kind == "sliding" and window:
        return -(-min(window - 1 + batched, max_len) // bs) + 1
    if kind == "chunked" and window:
        return -(-min(window + batched, max_len) // bs)
    return -(-max_len // bs)


def one_request_bytes(
    spec: ModelSpecLike, s: VllmSettings, max_len: int, batched: int, stage_layers: int | None = None
) -> int:
    """The KV cache one request of `max_len` tokens needs on one GPU, layer by layer as vLLM's
    `max_memory_usage_bytes` sums it (a sliding layer holds its window, not the whole request)."""
    return sum(
        n * _max_usage_blocks("full" if s.family == "v0" else kind, w, s, max_len, batched) * page
        for kind, n, page, w in _kv_layout(spec, s, stage_layers)
    )


def refusal(
    spec: ModelSpecLike,
    s: VllmSettings,
    available: int,
    needed: int,
    max_len: int,
    batched: int,
    stage_layers: int | None = None,
) -> str | None:
    """vLLM's reason for refusing to start (`_check_enough_kv_cache_memory` in v1/core/kv_cache_utils.py):
    nothing left for the cache blocks, or less than the `needed` bytes of one request (one_request_bytes),
    with its estimated maximum model length (the longest request the available memory holds); None when
    it starts."""
    from aiworkbook.message import Msg

    if available <= 0:
        return Msg("vllm.refusal.no_memory", available=available)
    if needed <= available:
        return None
    lo, hi = 0, max_len  # the longest request that fits: vLLM's binary search (estimate_max_model_len)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        fits = one_request_bytes(spec, s, mid, batched, stage_layers) <= available
        lo, hi = (mid, hi) if fits else (lo, mid - 1)
    longest = Msg("vllm.refusal.longest", tokens=lo) if lo > 0 else ""
    return Msg("vllm.refusal.too_long", max_len=max_len, needed=needed, available=available, longest=longest)


def startup(spec: ModelSpecLike, gpu: GPUSpec, s: VllmSettings | None = None) -> VllmStartup:
    """vLLM's start-up figures for `spec` served on `gpu` (a GPUSpec) with settings `s`."""
    s = s or VllmSettings()
    s.check()
    if not spec.is_decoder:
        raise SpecError("model", spec.name, Msg("allowed.vllm_decoder"))
    total = cuda_total_bytes(gpu)
    max_len = s.max_model_len or spec.max_position_embeddings
    d_seqs, d_tokens = defaults(total, gpu.name, s.family, max_len, s.usage)
    seqs = s.max_num_seqs or d_seqs
    tokens = s.max_num_batched_tokens or d_tokens
    requested = int(total * s.utilization)
    tp, pp = s.tensor_parallel_size, s.pipeline_parallel_size
    non_torch = s.non_torch_bytes if s.non_torch_bytes is not None else NON_TORCH[s.release][tp * pp > 1]
    sm_count, cc = getattr(gpu, "sm_count", 0), getattr(gpu, "compute_capability", "")
    # One worker per stage (tp ranks of a stage are alike): each profiles its own weights and peak and
    # sizes its own blocks; the engine keeps the fewest blocks of any worker (get_kv_cache_configs, "the
    # smallest among all ranks") and each worker checks one request against its own cache first.
    parts = pp_partition(spec.num_layers, pp) if pp > 1 else [None]
    stages = []
    for i, layers in enumerate(parts):
        stage = i if pp > 1 else None
        weights = weight_bytes(spec, s, stage)
        peak, peak_txt = profile_peak_bytes(
            spec, s, seqs, tokens, sm_count=sm_count, compute_capability=cc, max_len=max_len, stage=stage
        )
        available = requested - weights - peak - non_torch - s.cudagraph_bytes
        kv = kv_from_available(spec, s, available, max_len, tokens, layers)
        needed = one_request_bytes(spec, s, max_len, tokens, layers)
        why = refusal(spec, s, available, needed, max_len, tokens, layers)
        stages.append((kv["num_blocks"], i, weights, peak, peak_txt, available, kv, needed, why))
    bound = min(stages, key=lambda st: (st[0], -st[1]))  # the fewest blocks (ties: the later stage)
    _, at, weights, peak, peak_txt, available, kv, needed, why = bound
    why = why or next((st[-1] for st in stages if st[-1]), None)
    num_blocks, n_groups, group_size, page = (
        kv["num_blocks"],
        kv["kv_groups"],
        kv["group_size"],
        kv["page_bytes"],
    )
    if pp > 1:
        roles = [
            Msg(r)
            for r, on in (("term.vllm.pp_role_embedding", at == 0), ("term.vllm.pp_role_head", at == pp - 1))
            if on
        ]
        peak_txt = Joined(
            peak_txt,
            "; ",
            Msg(
                "term.vllm.pp_stage",
                stage=at + 1,
                pp=pp,
                layers=parts[at],
                total=spec.num_layers,
                roles=Joined(*(x for r in roles for x in (", ", r))),
            ),
        )
    non_torch_said = (
        "term.vllm.non_torch_measured" if s.non_torch_bytes is not None else "term.vllm.non_torch_default"
    )
    formulas: dict[str, str] = {
        "requested": Msg("term.vllm.requested", total=total, util=s.utilization),
        "activation_peak": peak_txt,
        "non_torch": Msg(non_torch_said, engine=s.engine, tp=tp),
        "kv": Joined(
            Msg("term.vllm.kv", blocks=num_blocks, block=s.block_size, page=page, layers=group_size),
            *((", ", Msg("term.vllm.kv_groups", n=n_groups)) if n_groups > 1 else ()),
        ),
    }
    return VllmStartup(
        total_bytes=total,
        requested_bytes=requested,
        weights_bytes=weights,
        activation_peak_bytes=peak,
        non_torch_bytes=non_torch,
        cudagraph_bytes=s.cudagraph_bytes,
        available_kv_bytes=available,
        num_blocks=num_blocks,
        kv_cache_tokens=kv["kv_cache_tokens"],
        kv_cache_bytes=num_blocks * page * group_size,
        max_concurrency=kv["max_concurrency"],
        one_request_kv_bytes=needed,
        starts=why is None,
        refusal=why,
        max_model_len=max_len,
        max_num_seqs=seqs,
        max_num_batched_tokens=tokens,
        kv_groups=n_groups,
        page_bytes=page,
        engine_version=s.version,
        arithmetic=s.engine,
        formulas=formulas,
    )


def kv_from_available(
    spec: ModelSpecLike,
    s: VllmSettings,
    available: int,
    max_len: int,
    tokens: int,
    stage_layers: int | None = None,
) -> dict[str, Any]:
    """Blocks, "GPU KV cache size" tokens and "Maximum concurrency" from the bytes left for the cache (on
    the pipeline stage holding `stage_layers` layers; None: the busiest stage)."""
    layout = _kv_layout(spec, s, stage_layers)
    kinds = {k for k, *_ in layout}
    page = max(p for _, _, p, _ in layout)
    if len(kinds) == 1 or s.family == "v0":  # one group: every layer holds every token
        layers = sum(n for _, n, _, _ in layout)
        n_groups, group_size = 1, layers
        num_blocks = max(0, available // page // layers)
        kind, window = ("full", None) if s.family == "v0" else (layout[0][0], layout[0][3])
        per_req = _max_usage_blocks(kind, window, s, max_len, tokens)
    else:  # hybrid allocator: equal-size groups share the pooled blocks
        counts = [n for _, n, _, _ in layout]
        group_size = min(counts) if max(counts) >= 1.5 * min(counts) else max(counts)
        n_groups = sum(-(-n // group_size) for n in counts)
        num_blocks = max(0, available // page // group_size)
        per_req = sum(
            -(-n // group_size) * _max_usage_blocks(kind, w, s, max_len, tokens) for kind, n, _, w in layout
        )
    concurrency = num_blocks / per_req if per_req else 0.0
    # "GPU KV cache size": whole blocks per group up to the 0.2x releases; the current source reports
    # the group-aware capacity int(max_concurrency x max_model_len) (kv_cache_utils.get_kv_cache_capacity)
    tokens = int(concurrency * max_len) if s.engine == "v1-092" else num_blocks // n_groups * s.block_size
    return {
        "num_blocks": num_blocks,
        "kv_groups": n_groups,
        "group_size": group_size,
        "page_bytes": page,
        "kv_cache_tokens": tokens,
        "max_concurrency": concurrency,
    }


def cuda_total_bytes(gpu: GPUSpec) -> int:
    """What cudaMemGetInfo reports as total (the catalogue's cuda_memory_bytes), else the driver total."""
    return getattr(gpu, "cuda_memory_bytes", None) or gpu.usable_memory_bytes
