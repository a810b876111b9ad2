"""`aiworkbook size` and `aiworkbook fit`: thin printers over `sizing.estimate` and `capacity.report`.

`size` prints the itemised memory table (GiB, labelled) or, with --json, the Estimate's stable JSON
(`memory` holds exactly the component keys, in bytes). `fit` answers the capacity questions. Every
figure is printed in the unit its typed section declares (never guessed from a key's name).
"""

import inspect
from typing import Any

import typer

from aiworkbook.cli import size_text
from aiworkbook.cli.lang import cli_lang
from aiworkbook.cli.options import option
from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.persist import dumps_json

_MODEL = typer.Argument(..., help="A preset name or a path to a config.json (or its folder).")


def register(app: typer.Typer) -> None:
    app.command("size")(size)
    app.command("fit")(fit)


def _workload(spec: Any = None, **kw):
    from aiworkbook.sizing import Workload

    kw = {k: v for k, v in kw.items() if k != "_vllm"}
    mode = kw["mode"]
    concurrency = kw.pop("concurrency") or (kw["batch"] if mode == "infer" else 1)
    if kw.get("seq_len") is None:
        kw["seq_len"] = default_seq(spec, mode, kw.get("new_tokens") or 0)
    return Workload(concurrency=concurrency, **kw)


def _seq_default() -> int:
    from aiworkbook.sizing.workload import Workload

    return int(next(d["default"] for d in Workload.fields() if d["name"] == "seq_len"))


def default_seq(spec: Any, mode: str, new_tokens: int) -> int:
    """--seq when not given: the Workload's default, or what the model's positions leave when fewer
    (`size gpt2` sized 2,048 tokens on 1,024 positions and was refused; a default is not a user's
    number, so following the model is not clamping it)."""
    default = _seq_default()
    room = int(getattr(spec, "max_position_embeddings", 0) or 0) - (new_tokens if mode == "infer" else 0)
    return room if 0 < room < default else default


def _seq_note(spec: Any, opts: dict[str, Any], w: Any) -> None:
    """Say so when --seq followed the model instead of the default."""
    default = _seq_default()
    if opts.get("seq_len") is None and w.seq_len != default:
        typer.echo(size_text.seq_note(spec, w, default, cli_lang()))


def _print_vllm(opts: dict[str, Any], vllm: Any) -> None:
    """The vLLM section, titled with the release (and arithmetic) that made it."""
    if vllm:
        _echo(size_text.vllm_lines(vllm, cli_lang()))


def _echo(lines: list[str]) -> None:
    for line in lines:
        typer.echo(line)


#: How the command line spells a Workload field where it is not `--field-name`, and what it says
#: beyond the field's own doc (the doc, choices, bounds and default come from `Workload.fields()`).
#: block_size is not an option: vLLM's `--block-size` (cli/vllm_flags.py) sets it.
_CLI: dict[str, dict[str, Any]] = {
    "mode": {"default": None, "note": "Default: train; infer with --engine vllm/trtllm or a vLLM flag."},
    "batch": {"note": "Concurrency when --mode infer and no --concurrency."},
    "seq_len": {
        "param": "seq",
        "decls": ("--seq",),
        "default": None,
        "note": "Default: 2,048, or what the model's positions leave (less --new-tokens) when fewer.",
    },
    "recipe": {"note": "See docs/sizing.md. Default: megatron-bf16, fp32-adamw at fp32."},
    "compile": {"param": "compile_"},
    "compile_loss": {"decls": ("--compile-loss/--no-compile-loss",)},
    "lora_targets": {"default": None, "note": "Comma-separated (default q,k,v,o)."},
    "dp": {"decls": ("--dp", "--gpus"), "note": "--gpus: its old name; GPUs in all = dp x tp."},
    "concurrency": {"default": 0, "note": "Default: --batch."},
    "gpu_memory_utilization": {"param": "gpu_util", "decls": ("--gpu-util",)},
    "block_size": {"skip": True},
}
_TYPES: dict[str, type] = {"int": int, "float": float, "bool": bool, "choice": str, "choices": str}


def _help(d: dict[str, Any], note: str = "") -> str:
    doc = d["doc"]
    choices = " | ".join(d.get("choices", ())) if d["type"] == "choice" else ""
    if d["low"] is not None and d["type"] == "int":
        doc += f"; {d['low']:,} to {d['high']:,}"
    return " ".join(x for x in (f"{choices}:" if choices else "", doc + ".", note) if x)


def _parser(name: str, flag: str, default: Any) -> Any:
    """A numeric option's text as the Workload field takes it (`parse_field`: its bounds), or a
    SpecError naming the option and the range ("--seq = 'abc' …; allowed: an integer from 1 to …");
    the option's own default (concurrency's 0: "the batch") is accepted as the help shows it."""
    from aiworkbook.sizing.workload import parse_field

    def parse(text: Any) -> Any:
        if not isinstance(text, str) or text.strip() == str(default):
            return default if isinstance(text, str) else text
        try:
            return parse_field(name, text)
        except SpecError as exc:
            raise SpecError(flag, exc.value, exc.allowed) from None

    return parse


#: A Workload field's option as a user types it: seq_len -> --seq, dp -> --dp; and each vLLM flag's
#: (engine_version -> --engine-version), whose settings the library names by the parameter.
def _flags() -> dict[str, str]:
    from aiworkbook.cli.vllm_flags import vllm_flags
    from aiworkbook.sizing.workload import Workload

    vllm = {n: p.default.param_decls[0] for n, p in inspect.signature(vllm_flags).parameters.items()}
    own = {
        d["name"]: _CLI.get(d["name"], {})
        .get("decls", ("--" + d["name"].replace("_", "-"),))[0]
        .split("/")[0]
        for d in Workload.fields()
    }
    return vllm | own


def _workload_params() -> list[inspect.Parameter]:
    """The Workload's options for `size` and `fit`, one per `Workload.fields()` entry: the option's
    type, default and help come from the field; `_CLI` keeps the command line's own names."""
    from aiworkbook.sizing.workload import Workload

    out = []
    for d in Workload.fields():
        cli = _CLI.get(d["name"], {})
        if cli.get("skip"):
            continue
        flag = "--" + d["name"].replace("_", "-")
        decls = cli.get("decls", (flag,))
        default = cli.get("default", d["default"])
        extra: dict[str, Any] = {}
        if d["type"] in ("int", "float"):  # typed text checked by the library, named as typed (--seq)
            extra = {"parser": _parser(d["name"], decls[0], default), "metavar": f"<{d['type']}>"}
        option = typer.Option(default, *decls, help=_help(d, cli.get("note", "")), **extra)
        out.append(
            inspect.Parameter(
                cli.get("param", d["name"]),
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                default=option,
                annotation=_TYPES[d["type"]],
            )
        )
    return out


def _opts(**kw: Any) -> dict[str, Any]:
    """The parsed options as Workload fields (lora_targets split at commas)."""
    names = {c["param"]: name for name, c in _CLI.items() if "param" in c}
    out = {names.get(k, k): v for k, v in kw.items()}
    targets = out.pop("lora_targets", None)
    if targets:
        out["lora_targets"] = tuple(x.strip() for x in targets.split(","))
    return out


_opts.__signature__ = inspect.Signature(_workload_params())  # type: ignore[attr-defined]


def _with_opts(fn):
    """Give a command the workload options of `_opts` (typer reads the merged signature)."""
    from aiworkbook.cli.vllm_flags import apply_to_opts, given, implied_mode, settings, vllm_flags

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
        try:
            opts["mode"] = implied_mode(opts, flags)
            if opts["engine"] == "vllm":
                apply_to_opts(opts, flags)
            if opts["engine"] == "vllm" or given(flags):
                settings(opts, flags).check()  # bad vLLM flags are refused with or without a GPU
            opts["_vllm"] = flags
            return fn(opts=opts, **kw)
        except SpecError as exc:  # the library names a field or vLLM setting; the user typed its option
            flag = _flags().get(exc.field)
            if flag is None or exc.source:
                raise
            # a field with two options (--gpu-util, vLLM's --gpu-memory-utilization): the one typed
            flag = next((f for f in given(flags) if f.lstrip("-").replace("-", "_") == exc.field), flag)
            raise SpecError(flag, exc.value, exc.allowed) from None

    wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


@_with_opts
def size(
    model: str = _MODEL,
    opts: dict[str, Any] = {},  # noqa: B006  (filled by _with_opts from the workload options)
    gpu: str = option(
        "--gpu", "Catalogue GPU (aiworkbook gpus), or a JSON of measured ceilings (prove roofline)."
    ),
    node: str = option(
        "--node", "Node profile (aiworkbook nodes) or its JSON: GPU, storage speed and price."
    ),
    pool: str = option(
        "--pool", "With a node that has pools (hybrid): the pool to size on, by name or its first word."
    ),
    device: str = option(
        "--device",
        "cuda | cpu (cpu: no context/workspace/reserve). Default: cpu for a measured host spec, else cuda.",
    ),
    train_tokens: float = option("--train-tokens", "Token budget for the run cost, e.g. 1e12."),
    price: float = option("--price", "$ per GPU-hour (default: the catalogue's example price)."),
    prices: str = option(
        "--prices",
        'Your own price file, JSON {"source", "date", "prices": {GPU: $ per hour}}: overrides the catalogue.',
    ),
    write_gbps: float = option("--write-gbps", "Checkpoint write throughput, GB/s (default 2)."),
    read_gbps: float = option("--read-gbps", "Checkpoint read throughput, GB/s (default 4)."),
    mtbf_hours: float = option("--mtbf-hours", "One GPU's MTBF in hours (default: Llama 3's)."),
    as_json: bool = option("--json", "Machine-readable output.", False),
) -> None:
    """Itemised memory (weights ... reserve, GiB), rules of thumb, roofline, fit, storage and cost."""
    from dataclasses import replace

    from aiworkbook.sizing import Assumptions, estimate
    from aiworkbook.specs import load_gpu, load_model
    from aiworkbook.specs.gpu import set_prices

    set_prices(prices)
    spec = load_model(model)
    node_profile = _node(node, pool, gpu_given=bool(gpu))
    base = Assumptions.from_node(node_profile) if node_profile else Assumptions()
    priced = Msg("assumptions.priced", source=base.source) if price is not None else None
    overrides: dict[str, Any] = {
        "source": priced,  # the price's provenance
        "train_tokens": train_tokens,
        "price_per_gpu_hour": price,
        "storage_write_bps": write_gbps * 1e9 if write_gbps is not None else None,
        "storage_read_bps": read_gbps * 1e9 if read_gbps is not None else None,
        "gpu_mtbf_hours": mtbf_hours,
    }
    assumptions = replace(base, **{k: v for k, v in overrides.items() if v is not None})
    gpu_spec = load_gpu(gpu) if gpu else None
    w = _workload(spec, **opts)
    est = estimate(
        spec,
        w,
        gpu=gpu_spec,
        device=device,
        assumptions=assumptions,
        node=node_profile,
    )
    vllm = _vllm_startup(spec, gpu_spec or (node_profile.gpu_spec() if node_profile else None), opts)
    ans = _answer(spec, est)
    if as_json:
        from aiworkbook.specs.catalog import embedded_config

        # a local model's config.json (with its sha256), so `lock --workload` works wherever this file goes
        local = embedded_config(model)
        typer.echo(
            dumps_json(
                {
                    **est.to_dict(),
                    **({"answer": ans.to_dict()} if ans is not None else {}),
                    **_vllm_json(vllm),
                    **({"config": local} if local else {}),
                },
                indent=2,
            )
        )
        return
    _seq_note(spec, opts, w)
    _print_estimate(spec, est)
    if ans is not None:
        typer.echo("\n" + size_text.answer_line(ans).render(cli_lang()))
    _print_vllm(opts, vllm)


def _answer(spec, est):
    """The answer (aiworkbook.sizing.answer) of an estimate on a GPU, priced with its assumptions;
    None without a GPU (or on the CPU)."""
    if est.gpu is None or est.device != "cuda":
        return None
    from aiworkbook.sizing.answer import answer

    return answer(spec, est.workload, est.gpu, est.assumptions, est.device)


def _vllm_startup(spec, gpu_spec, opts: dict):
    """With --engine vllm and a GPU: vLLM's start-up figures (aiworkbook.sizing.vllm), else None."""
    if opts.get("engine") != "vllm" or gpu_spec is None or opts.get("mode") != "infer":
        return None
    from aiworkbook.cli.vllm_flags import startup_section

    return startup_section(spec, gpu_spec, opts, opts["_vllm"])


def _vllm_json(r) -> dict:
    from aiworkbook.cli.vllm_flags import startup_json

    return startup_json(r) if r is not None else {}


def _node(node: str | None, pool: str | None, gpu_given: bool):
    """The node (or its pool) named on the command line; --pool without --node is refused."""
    from aiworkbook.errors import SpecError
    from aiworkbook.specs import get_node

    if node:
        return get_node(node).pool(pool, gpu_given=gpu_given)
    if pool:
        raise SpecError("pool", pool, "a pool of the node given with --node")
    return None


def _print_estimate(spec, est) -> None:
    _echo(size_text.estimate_lines(spec, est, cli_lang()))


@_with_opts
def fit(
    model: str = _MODEL,
    opts: dict[str, Any] = {},  # noqa: B006  (filled by _with_opts from the workload options)
    gpu: str = option(
        "--gpu",
        "Catalogue GPU (aiworkbook gpus) or a JSON of measured ceilings. Default: the node's, else H100-SXM.",
    ),
    node: str = option("--node", "Node profile (aiworkbook nodes) or its JSON: its GPU."),
    pool: str = option("--pool", "With a node that has pools: the pool, by name or first word."),
    device: str = option("--device", "cuda | cpu. Default: cpu for a measured host spec."),
    prices: str = option(
        "--prices",
        'Your own price file, JSON {"source", "date", "prices": {GPU: $ per hour}}: overrides the catalogue.',
    ),
    as_json: bool = option("--json", "Machine-readable output.", False),
) -> None:
    """Capacity: max concurrency and context, max micro-batch, GPUs needed, cheapest GPU, MIG profile."""
    from aiworkbook.sizing import capacity
    from aiworkbook.specs import load_model
    from aiworkbook.specs.gpu import set_prices

    set_prices(prices)
    spec = load_model(model)
    w = _workload(spec, **opts)
    node_profile = _node(node, pool, gpu_given=bool(gpu))
    target = gpu or node_profile or "H100-SXM"
    rep = capacity.report(spec, w, target, device=device)
    vllm = None if w.training else _vllm_startup(spec, _target_gpu(target), opts)
    ans = None
    if rep.device == "cuda":
        from aiworkbook.sizing.answer import answer

        ans = answer(spec, w, _target_gpu(target), device=rep.device)
    if as_json:
        doc = rep.to_dict()
        if ans is not None:
            doc["answer"] = ans.to_dict()
        # vLLM's figure takes the `max_concurrency` key; the workbook's own stays under its own name
        doc["workbook_max_concurrency"] = doc.get("max_concurrency")
        typer.echo(dumps_json({**doc, **_vllm_json(vllm)}, indent=2))
        return
    _seq_note(spec, opts, w)
    _echo(size_text.fit_lines(rep, vllm, cli_lang()))
    if ans is not None:
        typer.echo(size_text.answer_line(ans).render(cli_lang()))
    _print_vllm(opts, vllm)


def _target_gpu(target):
    """The GPUSpec a fit target stands for (a name, a GPU file, or a node's GPU)."""
    from aiworkbook.specs import load_gpu
    from aiworkbook.specs.node import NodeProfile

    return target.gpu_spec() if isinstance(target, NodeProfile) else load_gpu(target)
