"""`aiworkbook env | models | gpus | params`: the specs layer on the command line."""

from __future__ import annotations

import typer

from aiworkbook.persist import dumps_json
from aiworkbook.units import KV_DTYPES, fmt_bytes, fmt_count, fmt_flops, fmt_rate


def register(app: typer.Typer) -> None:
    app.command("env")(env)
    app.command("models")(models)
    app.command("gpus")(gpus)
    app.command("nodes")(nodes)
    app.command("params")(params)


def env(as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
    """This node: CPU, RAM, disk, GPUs through NVML (or why none), torch and CUDA."""
    from aiworkbook.specs import detect

    node = detect()
    if as_json:
        typer.echo(dumps_json(node.model_dump(mode="json"), indent=2))
        return
    rows = [
        ("node", node.name),
        ("os / python", f"{node.os} / Python {node.python}"),
        ("CPU", f"{node.cpu_model} ({node.cpu_cores} cores, {node.cpu_threads} threads)"),
        ("RAM", fmt_bytes(node.ram_bytes)),
        (
            "disk",
            f"{fmt_bytes(node.disk_free_bytes or 0)} free of {fmt_bytes(node.local_storage_bytes)} ({node.storage_type})",
        ),
        ("GPU", node.gpu_status),
    ]
    for g in node.gpus_detected:
        rows.append(
            (
                f"  gpu {g.index}",
                f"{g.name}, {fmt_bytes(g.memory_total_bytes)}, cc {g.compute_capability}, "
                f"MIG {g.mig_mode}, catalogue: {g.catalogue_name or 'not in catalogue'}",
            )
        )
    rows += [
        ("driver", node.driver_version or "n/a"),
        ("torch", node.torch_version or "not installed"),
        ("CUDA (torch build)", node.cuda_version or "none (CPU build)"),
    ]
    _table(rows)


def models(as_json: bool = typer.Option(False, "--json")) -> None:
    """The model presets shipped with aiworkbook."""
    from aiworkbook.specs import list_presets, load_model

    specs = [load_model(n) for n in list_presets()]
    if as_json:
        typer.echo(dumps_json([{"preset": s.name, **s.summary()} for s in specs], indent=2))
        return
    typer.echo(
        f"{'preset':<18} {'family':<9} {'params':>16} {'layers':>6} {'hidden':>6} {'heads':>5} {'kv':>3} {'KV/token bf16':>14}"
    )
    for s in specs:
        typer.echo(
            f"{s.name:<18} {s.model_type:<9} {s.params:>16,} {s.num_layers:>6} {s.hidden_size:>6} {s.num_heads:>5} "
            f"{s.num_kv_heads:>3} {fmt_bytes(s.kv_bytes_per_token('bf16')):>14}"
        )
    from aiworkbook.specs.families import family_examples

    typer.echo("\nfamilies (model_type -> example preset):")
    for fam, example in family_examples().items():
        typer.echo(f"  {fam:<12} {example}")


def gpus(as_json: bool = typer.Option(False, "--json")) -> None:
    """The GPU catalogue: memory, bandwidth, dense peaks, power, MIG."""
    from aiworkbook.specs import list_gpus

    items = list_gpus()
    if as_json:
        typer.echo(dumps_json([g.model_dump(mode="json") for g in items], indent=2))
        return
    typer.echo(
        f"{'gpu':<14} {'memory':>12} {'driver total':>12} {'bandwidth':>11} {'bf16 dense':>14} {'TDP':>6}  MIG"
    )
    for g in items:
        typer.echo(
            f"{g.name:<14} {fmt_bytes(g.memory_bytes):>12} {fmt_bytes(g.usable_memory_bytes):>12} "
            f"{fmt_rate(g.memory_bandwidth_bps, 'TB/s'):>11} {fmt_flops(g.peak_flops_dense.get('bf16', 0)):>14} "
            f"{(f'{g.tdp_watts:.0f}W' if g.tdp_watts else '—'):>6}  {len(g.mig_profiles) and max(p.max_instances for p in g.mig_profiles) or 'no'}"
        )


def nodes(as_json: bool = typer.Option(False, "--json")) -> None:
    """The reference node profiles, one per workload pattern."""
    from aiworkbook.specs import list_nodes

    items = list_nodes()
    if as_json:
        typer.echo(dumps_json([n.model_dump(mode="json", exclude_defaults=True) for n in items], indent=2))
        return
    for n in items:
        gpu = (
            f"{n.gpu_count}x {n.gpu}"
            if n.gpu
            else ("pools: " + ", ".join(p.name for p in n.pools) if n.pools else "no GPU")
        )
        typer.echo(
            f"{n.name:<22} {n.pattern or '':<17} {n.cpu_cores:>4} cores {fmt_bytes(n.ram_bytes):>11} RAM  {gpu}"
        )


def params(
    model: str = typer.Argument(..., help="A preset name or a path to a config.json (or its folder)."),
    kv_dtype: str = typer.Option("bf16", "--kv-dtype", help="KV-cache dtype: " + ", ".join(KV_DTYPES) + "."),
    as_json: bool = typer.Option(False, "--json"),
    family: str | None = typer.Option(
        None, "--family", help="Read an unknown model_type as this known family's shape (said in the output)."
    ),
) -> None:
    """Exact parameter counts and KV-cache bytes per token of a model."""
    from aiworkbook.specs import load_model

    spec = load_model(model, family=family)
    summary = spec.summary(kv_dtype)
    if as_json:
        typer.echo(dumps_json(summary, indent=2))
        return
    extra_rows = []
    vision, mtp = getattr(spec, "vision_params", 0), getattr(spec, "mtp_params", 0)  # family specs only
    if vision:
        extra_rows.append(("vision tower (apart)", f"{vision:,}"))
    if mtp:
        extra_rows.append(("MTP layers (apart)", f"{mtp:,}"))
    for g in getattr(spec, "kv_groups", ()):
        win = f", window {g.window}" if g.window else ""
        extra_rows.append((f"KV group {g.kind}", f"{g.layers} layers x {g.heads} x {g.width}{win}"))
    asserted = f", shape asserted with --family {spec.asserted_family}" if spec.asserted_family else ""
    _table(
        [
            ("model", f"{spec.name} ({spec.model_type}{asserted})"),
            ("parameters", f"{spec.params:,} ({fmt_count(spec.params)})"),
            ("non-embedding", f"{spec.params_non_embedding:,}"),
            (
                "active per token",
                f"{spec.params_active:,}"
                + (f" ({spec.experts_per_token} of {spec.num_experts} experts)" if spec.num_experts else ""),
            ),
            ("embedding tables", f"{spec.params_embedding:,}"),
            (
                "output head",
                f"{spec.params_head:,}"
                + (" (tied to the embedding)" if spec.tie_word_embeddings and spec.is_decoder else ""),
            ),
            (
                "layers x hidden",
                f"{spec.num_layers} x {spec.hidden_size}, {spec.num_heads} heads ({spec.num_kv_heads} KV) x {spec.head_dim}",
            ),
            (
                f"KV cache / token ({kv_dtype})",
                f"{summary['kv_bytes_per_token']:,} B ({fmt_bytes(summary['kv_bytes_per_token'])})"
                + ("" if spec.is_decoder else " (encoder-only: no KV cache)"),
            ),
            (
                "sliding window",
                f"{spec.sliding_window} tokens on {spec.sliding_window_layers} of {spec.num_layers} layers"
                if spec.sliding_window
                else "none",
            ),
            *extra_rows,
        ]
    )


def _table(rows: list[tuple[str, str]]) -> None:
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        typer.echo(f"{k:<{width}}  {v}")
