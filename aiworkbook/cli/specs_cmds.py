"""`aiworkbook env | models | gpus | params`: the specs layer on the command line."""

from __future__ import annotations

import typer

from aiworkbook.cli.lang import cli_lang, said
from aiworkbook.i18n_format import integer
from aiworkbook.message import Msg
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
    from aiworkbook.message import restore
    from aiworkbook.specs import detect

    node = detect()
    if as_json:
        typer.echo(dumps_json(node.model_dump(mode="json"), indent=2))
        return
    lang, said = cli_lang(), node.messages or {}
    rows: list[tuple[str, object]] = [
        (Msg("cli.env.node"), restore(node.name, said.get("name"))),
        (Msg("cli.env.os"), f"{node.os} / Python {node.python}"),
        ("CPU", Msg("cli.env.cpu", model=node.cpu_model, cores=node.cpu_cores, threads=node.cpu_threads)),
        ("RAM", fmt_bytes(node.ram_bytes, lang=lang)),
        (
            Msg("cli.env.disk"),
            Msg(
                "cli.env.disk_free",
                free=node.disk_free_bytes or 0,
                total=node.local_storage_bytes,
                kind=node.storage_type,
            ),
        ),
        ("GPU", restore(node.gpu_status, said.get("gpu_status"))),
    ]
    for g in node.gpus_detected:
        mig = {"enabled": Msg("cli.env.mig_on"), "disabled": Msg("cli.env.mig_off")}.get(
            g.mig_mode, Msg("value.na")
        )
        rows.append(
            (
                f"  gpu {g.index}",
                Msg(
                    "cli.env.gpu",
                    name=g.name,
                    memory=g.memory_total_bytes,
                    cc=g.compute_capability,
                    mig=mig,
                    catalogue=g.catalogue_name or Msg("cli.env.not_in_catalogue"),
                ),
            )
        )
    rows += [
        (Msg("cli.env.driver"), node.driver_version or Msg("value.na")),
        ("torch", node.torch_version or Msg("cli.env.not_installed")),
        (Msg("cli.env.cuda"), node.cuda_version or Msg("cli.env.cpu_build")),
    ]
    _table(rows)


def _cell(x: object, width: int, right: bool = False) -> str:
    """`x` in the CLI's language, padded to `width` (right-aligned for a figure)."""
    text = said(x)
    return f"{text:>{width}}" if right else f"{text:<{width}}"


def models(as_json: bool = typer.Option(False, "--json")) -> None:
    """The model presets shipped with aiworkbook."""
    from aiworkbook.specs import list_presets, load_model

    specs = [load_model(n) for n in list_presets()]
    if as_json:
        typer.echo(dumps_json([{"preset": s.name, **s.summary()} for s in specs], indent=2))
        return
    lang = cli_lang()
    head: list[tuple[str, int]] = [(Msg("cli.col.preset"), 18), (Msg("cli.col.family"), 9)]
    head += [(Msg("cli.col.params"), -16), (Msg("cli.col.layers"), -6), (Msg("cli.col.hidden"), -6)]
    head += [(Msg("cli.col.heads"), -5), ("kv", -3), (Msg("cli.col.kv_token", dtype="bf16"), -14)]
    typer.echo(" ".join(_cell(t, abs(w), w < 0) for t, w in head))
    for s in specs:
        typer.echo(
            f"{s.name:<18} {s.model_type:<9} {integer(s.params, lang):>16} {s.num_layers:>6} {s.hidden_size:>6} "
            f"{s.num_heads:>5} {s.num_kv_heads:>3} {fmt_bytes(s.kv_bytes_per_token('bf16'), lang=lang):>14}"
        )
    from aiworkbook.specs.catalog import family_examples

    typer.echo("\n" + said(Msg("cli.models.families")))
    for fam, example in family_examples().items():
        typer.echo(f"  {fam:<12} {example}")


def gpus(as_json: bool = typer.Option(False, "--json")) -> None:
    """The GPU catalogue: memory, bandwidth, dense peaks, power, MIG."""
    from aiworkbook.specs import list_gpus

    items = list_gpus()
    if as_json:
        typer.echo(dumps_json([g.model_dump(mode="json") for g in items], indent=2))
        return
    lang = cli_lang()
    head: list[tuple[str, int]] = [
        ("gpu", 14),
        (Msg("cli.col.memory"), -12),
        (Msg("cli.col.driver_total"), -12),
    ]
    head += [(Msg("cli.col.bandwidth"), -11), (Msg("cli.col.dense", dtype="bf16"), -14), ("TDP", -6)]
    typer.echo(" ".join(_cell(t, abs(w), w < 0) for t, w in head) + "  MIG")
    for g in items:
        mig = len(g.mig_profiles) and max(p.max_instances for p in g.mig_profiles) or said(Msg("value.no"))
        typer.echo(
            f"{g.name:<14} {fmt_bytes(g.memory_bytes, lang=lang):>12} {fmt_bytes(g.usable_memory_bytes, lang=lang):>12} "
            f"{fmt_rate(g.memory_bandwidth_bps, 'TB/s', lang):>11} {fmt_flops(g.peak_flops_dense.get('bf16', 0), lang):>14} "
            f"{(f'{g.tdp_watts:.0f}W' if g.tdp_watts else '—'):>6}  {mig}"
        )


def nodes(as_json: bool = typer.Option(False, "--json")) -> None:
    """The reference node profiles, one per workload pattern."""
    from aiworkbook.specs import list_nodes

    items = list_nodes()
    if as_json:
        typer.echo(dumps_json([n.model_dump(mode="json", exclude_defaults=True) for n in items], indent=2))
        return
    lang = cli_lang()
    for n in items:
        gpu = (
            f"{n.gpu_count}x {n.gpu}"
            if n.gpu
            else said(
                Msg("cli.nodes.pools", pools=", ".join(p.name for p in n.pools))
                if n.pools
                else Msg("cli.nodes.no_gpu")
            )
        )
        cores = said(Msg("cli.nodes.cores", cores=f"{n.cpu_cores:>4}"))
        typer.echo(
            f"{n.name:<22} {n.pattern or '':<17} {cores} {fmt_bytes(n.ram_bytes, lang=lang):>11} RAM  {gpu}"
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
    from aiworkbook.catalogue import catalogue

    lang = cli_lang()
    n = lambda x: integer(x, lang)  # noqa: E731 (an exact count, grouped in the language)
    extra_rows: list[tuple[str, object]] = []
    vision, mtp = getattr(spec, "vision_params", 0), getattr(spec, "mtp_params", 0)  # family specs only
    if vision:
        extra_rows.append((Msg("cli.params.vision"), n(vision)))
    if mtp:
        extra_rows.append((Msg("cli.params.mtp"), n(mtp)))
    for g in getattr(spec, "kv_groups", ()):
        win = Msg("cli.params.window", window=g.window) if g.window else ""
        group = Msg("cli.params.kv_group_shape", layers=g.layers, heads=g.heads, width=g.width, window=win)
        kind = f"cli.params.kv_kind.{g.kind}"  # a kind the catalogue names in words, else as it is
        said_kind = Msg(kind) if kind in catalogue("en") else g.kind
        extra_rows.append((Msg("cli.params.kv_group", kind=said_kind), group))
    asserted = Msg("cli.params.asserted", family=spec.asserted_family) if spec.asserted_family else ""
    experts = (
        Msg("cli.params.experts", active=spec.experts_per_token, experts=spec.num_experts)
        if spec.num_experts
        else ""
    )
    tied = Msg("cli.params.tied") if spec.tie_word_embeddings and spec.is_decoder else ""
    kv = summary["kv_bytes_per_token"]
    heads = {"heads": spec.num_heads, "kv_heads": spec.num_kv_heads, "head_dim": spec.head_dim}
    shape = Msg("cli.params.shape", layers=spec.num_layers, hidden=spec.hidden_size, **heads)
    sliding = Msg("cli.params.none")
    if spec.sliding_window:
        window = {"window": spec.sliding_window, "layers": spec.sliding_window_layers}
        sliding = Msg("cli.params.sliding_on", **window, of=spec.num_layers)
    _table(
        [
            (Msg("cli.params.model"), f"{spec.name} ({spec.model_type}{said(asserted)})"),
            (Msg("cli.params.parameters"), f"{n(spec.params)} ({fmt_count(spec.params, lang)})"),
            (Msg("cli.params.non_embedding"), n(spec.params_non_embedding)),
            (Msg("cli.params.active"), n(spec.params_active) + said(experts)),
            (Msg("cli.params.embedding"), n(spec.params_embedding)),
            (Msg("cli.params.head"), n(spec.params_head) + said(tied)),
            (Msg("cli.params.layers_hidden"), shape),
            (
                Msg("cli.params.kv_token", dtype=kv_dtype),
                f"{n(kv)} B ({fmt_bytes(kv, lang=lang)})"
                + ("" if spec.is_decoder else said(Msg("cli.params.encoder"))),
            ),
            (Msg("cli.params.sliding"), sliding),
            *extra_rows,
        ]
    )


def _table(rows: list[tuple[str, object]]) -> None:
    """Label and value a row, each in the CLI's language, the labels padded to the longest."""
    said_rows = [(said(k), said(v)) for k, v in rows]
    width = max(len(k) for k, _ in said_rows)
    for k, v in said_rows:
        typer.echo(f"{k:<{width}}  {v}")
