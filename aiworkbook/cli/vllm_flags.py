"""vLLM's own flag names for `size` and `fit` with `--engine vllm`, and the JSON they add.

The flags keep vLLM's spelling (--tensor-parallel-size, --gpu-memory-utilization, ...) so a user can
paste a `vllm serve` command line; they also set the workbook's own options they mean (tp, context,
concurrency, KV dtype) so the rest of the estimate agrees with them.
"""

from __future__ import annotations

from typing import Any

import typer

_DTYPES = {"auto": None, "bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32"}


def vllm_flags(
    tensor_parallel_size: int = typer.Option(None, "--tensor-parallel-size", help="vLLM: TP ranks."),
    pipeline_parallel_size: int = typer.Option(1, "--pipeline-parallel-size", help="vLLM: PP stages."),
    gpu_memory_utilization: float = typer.Option(
        None, "--gpu-memory-utilization", help="vLLM: fraction of the CUDA-visible total."
    ),
    max_model_len: int = typer.Option(None, "--max-model-len", help="vLLM: tokens per request."),
    max_num_seqs: int = typer.Option(None, "--max-num-seqs", help="vLLM: sequences per step."),
    max_num_batched_tokens: int = typer.Option(
        None, "--max-num-batched-tokens", help="vLLM: tokens per step (and in the profile run)."
    ),
    kv_cache_dtype: str = typer.Option("auto", "--kv-cache-dtype", help="vLLM: auto | fp8 | fp8_e4m3 | ..."),
    dtype: str = typer.Option("auto", "--dtype", help="vLLM: auto | bfloat16 | float16 | float32."),
    quantization: str = typer.Option(None, "--quantization", help="vLLM: fp8 | awq | gptq | ..."),
    block_size: int = typer.Option(16, "--block-size", help="vLLM: tokens per KV block."),
    engine_version: str = typer.Option(
        None,
        "--engine-version",
        help="vLLM release (0.6.4 ... 0.19.x, mapped to the arithmetic it uses; default: the newest, "
        "0.19.x; preflight: the installed vLLM's) or that arithmetic: "
        "v1 (0.8-0.18, default utilisation 0.9) | "
        "v1-092 (releases defaulting --gpu-memory-utilization to 0.92, e.g. 0.25-0.30) | v0 (0.6.4-0.7) | "
        "v1-019 (0.19: sort-free sampler, larger non-torch memory under tensor parallelism).",
    ),
) -> dict[str, Any]:
    return dict(
        tensor_parallel_size=tensor_parallel_size,
        pipeline_parallel_size=pipeline_parallel_size,
        gpu_memory_utilization=gpu_memory_utilization,
        max_model_len=max_model_len,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens,
        kv_cache_dtype=kv_cache_dtype,
        dtype=dtype,
        quantization=quantization,
        block_size=block_size,
        engine=engine_version,
    )


def given(flags: dict[str, Any]) -> list[str]:
    """The vLLM flags the user set (those away from their typer defaults), by their command-line names."""
    import inspect

    out = []
    for name, p in inspect.signature(vllm_flags).parameters.items():
        key = "engine" if name == "engine_version" else name
        if flags.get(key) != p.default.default:  # the typer.Option's default
            out.append(p.default.param_decls[0])
    return out


def implied_mode(opts: dict[str, Any], flags: dict[str, Any]) -> str:
    """The mode: the one given; else infer when a serving engine or any vLLM flag is given (they size
    `vllm serve`), else train. A training mode given with them is a conflict (SpecError, exit 2)."""
    from aiworkbook.errors import SpecError

    serving = ([f"--engine {opts['engine']}"] if opts.get("engine") not in (None, "hf") else []) + given(
        flags
    )
    mode = opts.get("mode")
    if mode is None:
        return "infer" if serving else "train"
    if serving and mode != "infer":
        raise SpecError("mode", mode, f"infer with {', '.join(serving)} (vLLM flags size inference)")
    return mode


def apply_to_opts(opts: dict[str, Any], flags: dict[str, Any]) -> None:
    """The workbook options the vLLM flags mean (only those the user gave)."""
    if flags["tensor_parallel_size"] is not None:
        opts["tp"] = flags["tensor_parallel_size"]
    if flags["gpu_memory_utilization"] is not None:
        opts["gpu_memory_utilization"] = flags["gpu_memory_utilization"]
    if flags["max_num_batched_tokens"] is not None:
        opts["max_batched_tokens"] = flags["max_num_batched_tokens"]
    if flags["max_model_len"] is not None and opts.get("context") is None:
        opts["context"] = flags["max_model_len"]
    if flags["kv_cache_dtype"] not in ("auto", None):
        opts["kv_dtype"] = "fp8" if flags["kv_cache_dtype"].startswith("fp8") else flags["kv_cache_dtype"]


def settings(opts: dict[str, Any], flags: dict[str, Any]):
    from aiworkbook.errors import SpecError
    from aiworkbook.sizing.vllm import NEWEST_RELEASE, VllmSettings

    if flags["dtype"] not in _DTYPES:
        raise SpecError("dtype", flags["dtype"], ", ".join(_DTYPES))
    return VllmSettings(
        tensor_parallel_size=(
            opts.get("tp", 1) if flags["tensor_parallel_size"] is None else flags["tensor_parallel_size"]
        ),
        pipeline_parallel_size=flags["pipeline_parallel_size"],
        gpu_memory_utilization=_utilization(opts, flags),
        max_model_len=flags["max_model_len"],
        max_num_seqs=flags["max_num_seqs"],
        max_num_batched_tokens=flags["max_num_batched_tokens"],
        kv_cache_dtype=flags["kv_cache_dtype"],
        dtype=_DTYPES[flags["dtype"]] or "auto",
        quantization=flags["quantization"],
        block_size=flags["block_size"],
        engine=flags["engine"] or NEWEST_RELEASE,
    )


def _utilization(opts: dict[str, Any], flags: dict[str, Any]) -> float | None:
    """--gpu-memory-utilization, else a --gpu-util the user changed, else None: the engine version's
    own default (0.9, or 0.92 for --engine-version v1-092)."""
    if flags["gpu_memory_utilization"] is not None:
        return flags["gpu_memory_utilization"]
    own = opts.get("gpu_memory_utilization")
    return None if own in (None, 0.9) else own


def startup_section(spec, gpu, opts: dict[str, Any], flags: dict[str, Any]):
    """vLLM's start-up figures (a typed section) for these command-line settings."""
    from aiworkbook.sizing.vllm import startup

    return startup(spec, gpu, settings(opts, flags))


def startup_json(r) -> dict[str, Any]:
    """The stable keys `--engine vllm` adds: kv_cache_tokens, kv_cache_bytes, max_concurrency (vLLM's
    "Maximum concurrency"; also under vllm_max_concurrency, which never means anything else) and the
    itemised non-KV memory vLLM subtracted (under "vllm")."""
    return {
        "kv_cache_tokens": r.kv_cache_tokens,
        "kv_cache_bytes": r.kv_cache_bytes,
        "max_concurrency": r.max_concurrency,
        "vllm_max_concurrency": r.max_concurrency,
        "vllm": r.to_dict(),
    }
