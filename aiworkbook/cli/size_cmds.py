"""`aiworkbook size` and `aiworkbook fit`: the sizing engine on the command line.

`size` prints the itemised memory table (GiB, labelled) or, with --json, the Estimate's stable JSON
(`memory` holds exactly the component keys, in bytes). `fit` answers the capacity questions.
"""

import typer

from aiworkbook.persist import dumps_json
from aiworkbook.units import fmt_bytes, fmt_seconds

_TIMES = ("ttft_s", "tpot_s", "step_time_s")
_MODEL = typer.Argument(..., help="A preset name or a path to a config.json (or its folder).")


def register(app: typer.Typer) -> None:
    app.command("size")(size)
    app.command("fit")(fit)


def _workload(**kw):
    from aiworkbook.sizing import Workload

    kw = {k: v for k, v in kw.items() if k != "_vllm"}
    mode = kw["mode"]
    concurrency = kw.pop("concurrency") or (kw["batch"] if mode == "infer" else 1)
    gpus = kw.pop("gpus")
    return Workload(concurrency=concurrency, dp=gpus, **kw)


def _opts(
    mode: str = typer.Option("train", "--mode", help="train | lora | qlora | infer"),
    batch: int = typer.Option(1, "--batch", help="Micro-batch (train); concurrency when --mode infer."),
    seq: int = typer.Option(2048, "--seq", help="Tokens per sequence (the prompt for infer)."),
    new_tokens: int = typer.Option(0, "--new-tokens", help="Generated tokens (infer)."),
    precision: str = typer.Option(
        "bf16-mixed", "--precision", help="fp32 | bf16 | fp16 | bf16-mixed | fp16-mixed"
    ),
    recipe: str = typer.Option("megatron-bf16", "--recipe", help="Training recipe (see docs/sizing.md)."),
    attention: str = typer.Option("sdpa", "--attention", help="eager | sdpa"),
    checkpointing: str = typer.Option("none", "--checkpointing", help="none | selective | full"),
    chunked_loss: bool = typer.Option(False, "--chunked-loss", help="Loss computed in chunks."),
    gpus: int = typer.Option(1, "--gpus", help="Data-parallel GPUs."),
    zero: int = typer.Option(0, "--zero", help="ZeRO stage 0-3 (FSDP full shard = 3)."),
    tp: int = typer.Option(1, "--tp", help="Tensor-parallel size."),
    lora_rank: int = typer.Option(16, "--lora-rank"),
    weights_dtype: str = typer.Option(
        "bf16", "--weights-dtype", help="fp32 | bf16 | fp16 | fp8 | int8 | int4 | nf4"
    ),
    kv_dtype: str = typer.Option("bf16", "--kv-dtype", help="fp32 | bf16 | fp16 | fp8 | int8 | int4"),
    concurrency: int = typer.Option(0, "--concurrency", help="Served sequences (default: --batch)."),
    context: int = typer.Option(
        None, "--context", help="KV tokens per sequence (default: seq + new tokens)."
    ),
    engine: str = typer.Option("hf", "--engine", help="hf | vllm | trtllm"),
    gpu_util: float = typer.Option(0.9, "--gpu-util", help="Memory utilisation budget (fraction)."),
    max_batched_tokens: int = typer.Option(
        None,
        "--max-batched-tokens",
        help="Prompt tokens per prefill forward (vLLM max_num_batched_tokens; default: engine's, hf: all).",
    ),
):
    return dict(
        mode=mode,
        batch=batch,
        seq_len=seq,
        new_tokens=new_tokens,
        precision=precision,
        recipe=recipe,
        attention=attention,
        checkpointing=checkpointing,
        chunked_loss=chunked_loss,
        gpus=gpus,
        zero=zero,
        tp=tp,
        lora_rank=lora_rank,
        weights_dtype=weights_dtype,
        kv_dtype=kv_dtype,
        concurrency=concurrency,
        context=context,
        engine=engine,
        gpu_memory_utilization=gpu_util,
        max_batched_tokens=max_batched_tokens,
    )


def _with_opts(fn):
    """Give a command the workload options of `_opts` (typer reads the merged signature)."""
    import inspect

    from aiworkbook.cli.vllm_flags import apply_to_opts, vllm_flags

    own = [p for p in inspect.signature(fn).parameters.values() if p.name != "opts"]
    extra = list(inspect.signature(_opts).parameters.values())
    vllm = list(inspect.signature(vllm_flags).parameters.values())
    params = [own[0], *extra, *vllm, *own[1:]]

    def wrapper(**kw):
        names = set(inspect.signature(_opts).parameters)
        opts = _opts(**{k: kw.pop(k) for k in list(kw) if k in names})
        flags = vllm_flags(
            **{k: kw.pop(k) for k in list(kw) if k in inspect.signature(vllm_flags).parameters}
        )
        if opts["engine"] == "vllm":
            apply_to_opts(opts, flags)
        opts["_vllm"] = flags
        return fn(opts=opts, **kw)

    wrapper.__signature__ = inspect.Signature(params)
    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


@_with_opts
def size(
    model: str = _MODEL,
    opts: dict | None = None,
    gpu: str = typer.Option(
        None,
        "--gpu",
        help="Catalogue GPU (aiworkbook gpus), or a JSON of measured ceilings (prove roofline).",
    ),
    node: str = typer.Option(
        None, "--node", help="Node profile (aiworkbook nodes) or its JSON: GPU, storage speed and price."
    ),
    pool: str = typer.Option(
        None,
        "--pool",
        help="With a node that has pools (hybrid): the pool to size on, by name or its first word.",
    ),
    device: str = typer.Option(
        None,
        "--device",
        help="cuda | cpu (cpu: no context/workspace/reserve). Default: cpu for a measured host spec, else cuda.",
    ),
    train_tokens: float = typer.Option(
        None, "--train-tokens", help="Token budget for the run cost, e.g. 1e12."
    ),
    price: float = typer.Option(
        None, "--price", help="$ per GPU-hour (default: the catalogue's example price)."
    ),
    write_gbps: float = typer.Option(
        None, "--write-gbps", help="Checkpoint write throughput, GB/s (default 2)."
    ),
    read_gbps: float = typer.Option(
        None, "--read-gbps", help="Checkpoint read throughput, GB/s (default 4)."
    ),
    mtbf_hours: float = typer.Option(
        None, "--mtbf-hours", help="One GPU's MTBF in hours (default: Llama 3's)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Itemised memory (weights ... reserve, GiB), rules of thumb, roofline, fit, storage and cost."""
    from dataclasses import replace

    from aiworkbook.sizing import Assumptions, estimate
    from aiworkbook.specs import get_node, load_gpu, load_model

    spec = load_model(model)
    node_profile = get_node(node) if node else None
    if node_profile is not None:
        node_profile = _pick_pool(node_profile, pool, gpu_given=bool(gpu))
    elif pool:
        from aiworkbook.errors import SpecError

        raise SpecError("pool", pool, "a pool of the node given with --node")
    base = Assumptions.from_node(node_profile) if node_profile else Assumptions()
    overrides = {
        "train_tokens": train_tokens,
        "price_per_gpu_hour": price,
        "storage_write_bps": write_gbps * 1e9 if write_gbps is not None else None,
        "storage_read_bps": read_gbps * 1e9 if read_gbps is not None else None,
        "gpu_mtbf_hours": mtbf_hours,
    }
    assumptions = replace(base, **{k: v for k, v in overrides.items() if v is not None})
    gpu_spec = load_gpu(gpu) if gpu else None
    if device is None:  # a measured host ("CPU (measured)") is sized as the CPU: no CUDA context or reserve
        sized_on = gpu_spec or (node_profile.gpu_spec() if node_profile else None)
        device = "cpu" if sized_on is not None and sized_on.vendor == "host" else "cuda"
    est = estimate(
        spec, _workload(**opts), gpu=gpu_spec, device=device, assumptions=assumptions, node=node_profile
    )
    vllm = _vllm_startup(spec, gpu_spec or (node_profile.gpu_spec() if node_profile else None), opts)
    if as_json:
        typer.echo(dumps_json({**est.to_dict(), **vllm}, indent=2))
        return
    _print_estimate(spec, est)
    if vllm:
        _section("vLLM start-up (its own arithmetic: what `vllm serve` logs)", vllm["vllm"])


def _vllm_startup(spec, gpu_spec, opts: dict) -> dict:
    """With --engine vllm and a GPU: vLLM's start-up figures (aiworkbook.sizing.vllm), else nothing."""
    if opts.get("engine") != "vllm" or gpu_spec is None or opts.get("mode") != "infer":
        return {}
    from aiworkbook.cli.vllm_flags import startup_json

    return startup_json(spec, gpu_spec, opts, opts["_vllm"])


def _pick_pool(node, pool: str | None, gpu_given: bool):
    """The node itself, or the pool named by --pool (exact name, or the name before its " (" details).
    A node with pools and no GPU of its own needs --pool (or --gpu): say which pools there are."""
    from aiworkbook.errors import SpecError

    names = [p.name for p in node.pools]
    if pool is None:
        if node.pools and node.gpu is None and node.gpu_calibrated is None and not gpu_given:
            raise SpecError(
                "pool",
                None,
                f"one of the pools of {node.name} (it has no GPU of its own): "
                + ", ".join(repr(n) for n in names)
                + "; pass --pool NAME (the first word is enough), or --gpu",
            )
        return node
    for p in node.pools:
        if pool in (p.name, p.name.split(" (")[0], p.name.split()[0]):
            return p
    raise SpecError(
        "pool", pool, ", ".join(repr(n) for n in names) if names else f"none: {node.name} has no pools"
    )


def _print_estimate(spec, est) -> None:
    from aiworkbook.units import fmt_rate

    w = est.workload
    gpu_name = est.gpu.name if est.gpu is not None else "no GPU given"
    typer.echo(
        f"{spec.name}: {w.mode}, {spec.params:,} params, precision {w.precision}, {gpu_name}, device {est.device}"
    )
    typer.echo("\nmemory (GiB = 2^30 bytes)")
    for name, n, formula in est.memory.rows():
        if name == "total":
            typer.echo("  " + "-" * 40)
        typer.echo(f"  {name:<15} {fmt_bytes(n, 'GiB'):>14}   {formula if name != 'total' else ''}")
    r = est.rules_of_thumb
    typer.echo(
        f"  rule of thumb   {fmt_bytes(r['bytes'], 'GiB'):>14}   {r['formula']} "
        f"({r['ratio_to_itemised']:.2f}x the itemised total)"
    )
    if est.fits.get("gpu"):
        f = est.fits
        verdict = "fits" if f["fits"] else "does NOT fit"
        typer.echo(
            f"  {verdict} on one {f['gpu']}: budget {fmt_bytes(f['budget_bytes'])}, "
            f"headroom {fmt_bytes(f['headroom_bytes'])}"
        )
    _section("roofline (times are lower bounds at the GPU's ceilings)", est.roofline)
    _section("storage", est.storage)
    _section("cost (at the roofline's throughput: a lower bound on cost)", est.cost)
    a = est.assumptions
    typer.echo(
        f"\nassumptions ({a.source}): checkpoint write {fmt_rate(a.storage_write_bps)}, read "
        f"{fmt_rate(a.storage_read_bps)}, GPU MTBF {a.gpu_mtbf_hours:,.0f} h, utilisation {a.utilization:.0%}, "
        f"headroom {a.headroom:.0%}, PUE {a.pue}"
    )


@_with_opts
def fit(
    model: str = _MODEL,
    opts: dict | None = None,
    gpu: str = typer.Option("H100-SXM", "--gpu", help="Catalogue GPU (aiworkbook gpus)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Capacity: max concurrency and context, max micro-batch, GPUs needed, cheapest GPU, MIG profile."""
    from aiworkbook.sizing import capacity
    from aiworkbook.specs import get_gpu, load_model

    spec = load_model(model)
    w = _workload(**opts)
    w.check_against(spec)
    g = get_gpu(gpu)
    out = {
        "model": spec.name,
        "gpu": g.name,
        "fits": capacity.fits(spec, w, g)["fits"],
        "max_batch": capacity.max_batch(spec, w, g),
        "gpus_needed_tp": capacity.gpus_needed(spec, w, g),
        "cheapest_gpu": capacity.cheapest_gpu(spec, w),
        "mig_profile": capacity.mig_profile(spec, w, g),
    }
    if not w.training:
        out["max_concurrency"] = capacity.max_concurrency(spec, w, g)
        out["max_context"] = capacity.max_context(spec, w, g)
        out.update(_vllm_startup(spec, g, opts))  # --engine vllm: vLLM's own max_concurrency and KV
    if as_json:
        typer.echo(dumps_json(out, indent=2))
        return
    for k, v in out.items():
        typer.echo(f"{k:<16} {v if v is not None else 'none'}")


def _section(title: str, values: dict, prefix: str = "") -> None:
    """Print one section of an estimate, each value in its unit (nested dicts as parent.child)."""
    rows = {k: v for k, v in values.items() if v is not None}
    if not rows:
        return
    if not prefix:
        typer.echo(f"\n{title}")
    for k, v in rows.items():
        if isinstance(v, dict):
            _section(title, v, prefix=f"{prefix}{k}.")
        else:
            typer.echo(f"  {prefix + k:<30} {_fmt_value(k, v)}")


def _fmt_value(key: str, v) -> str:
    from aiworkbook.units import fmt_flops, fmt_rate

    if isinstance(v, bool) or not isinstance(v, int | float):
        return str(v)
    if key.endswith("bytes_per_s"):
        return fmt_rate(v)
    if key.endswith("_bytes") or key == "bytes":
        return fmt_bytes(v)
    if key.endswith("per_s"):
        return f"{v:,.1f}/s"
    if key.endswith("_s"):
        return fmt_seconds(v)
    if key == "peak_flops":
        return fmt_flops(v)
    if isinstance(v, float):
        return f"{v:,.3g}" if abs(v) < 1e4 else f"{v:,.0f}"
    return f"{v:,}"
