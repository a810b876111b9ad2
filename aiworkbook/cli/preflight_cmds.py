"""`aiworkbook preflight vllm MODEL [vLLM's flags]`: read this GPU now, apply vLLM's start-up rule
given the co-tenants, and say whether it starts, the largest --gpu-memory-utilization that does, the
KV cache that gives and who holds what (aiworkbook.preflight).

Exit codes: 0 it starts, 1 it will not start (also when no NVIDIA GPU is found: vLLM cannot start
here either; the JSON says "gpu_found": false), 2 bad input.
"""

import inspect
from typing import Any

import typer

from aiworkbook.cli.lang import cli_lang
from aiworkbook.cli.options import option
from aiworkbook.message import Msg, words
from aiworkbook.units import fmt_bytes

preflight_app = typer.Typer(
    help="Will a serving engine start on this GPU next to what already holds it?",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def register(app: typer.Typer) -> None:
    app.add_typer(preflight_app, name="preflight")


def _with_vllm_flags(fn):
    """Give the command vLLM's own flags (aiworkbook/cli/vllm_flags.py), as `size --engine vllm` has."""
    from aiworkbook.cli.vllm_flags import vllm_flags

    own = list(inspect.signature(fn).parameters.values())
    flags = list(inspect.signature(vllm_flags).parameters.values())
    params = [own[0], *flags, *[p for p in own[1:] if p.name != "flags"]]

    def wrapper(**kw):
        names = inspect.signature(vllm_flags).parameters
        return fn(flags=vllm_flags(**{k: kw.pop(k) for k in list(kw) if k in names}), **kw)

    wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


@preflight_app.command("vllm")
@_with_vllm_flags
def vllm_cmd(
    model: str = typer.Argument(..., help="A preset name or a path to a config.json (or its folder)."),
    flags: dict[str, Any] = {},  # noqa: B006  (filled from vLLM's flags by _with_vllm_flags)
    device: str = option(
        "--device",
        "Devices, one per rank: NVML indices, GPU:MIG slices (0:1) or GPU-/MIG- UUIDs, comma-separated "
        "(default: CUDA_VISIBLE_DEVICES, else the first tp x pp GPUs).",
    ),
    context_mib: int = option(
        "--context-mib",
        "vLLM's own CUDA context, MiB, taken before its check (default 500); NCCL and custom all-reduce "
        "buffers are added per --tensor/--pipeline-parallel-size.",
    ),
    as_json: bool = option("--json", "Machine-readable output.", False),
) -> None:
    """Will `vllm serve MODEL [flags]` start here now, next to the GPU's other tenants? Exit 0 starts,
    1 will not start (or no GPU), 2 bad input."""
    from aiworkbook.cli.vllm_flags import settings
    from aiworkbook.errors import SpecError
    from aiworkbook.persist import dumps_json
    from aiworkbook.preflight.vllm import resolve_release, run
    from aiworkbook.sizing.memory import CUDA_CONTEXT_BYTES

    release, source = resolve_release(flags["engine"])
    s = settings({}, {**flags, "engine": release})
    if context_mib is not None and not 0 <= context_mib <= 65536:
        raise SpecError("context_mib", context_mib, "0..65536")
    selectors = [x for x in device.split(",") if x.strip()] if device else None
    ctx = CUDA_CONTEXT_BYTES if context_mib is None else context_mib * 2**20
    r = run(model, s, selectors, context_bytes=ctx, engine_source=source)
    from aiworkbook.preflight.slurm_gpus import allocation, line

    alloc = allocation()
    if isinstance(r, dict):  # no NVIDIA GPU here
        if alloc is not None:
            r = {**r, "slurm": {**alloc, "checked": []}}
            if not as_json:
                typer.echo(line(alloc, []).render(cli_lang()))
        no_gpu = Msg("preflight.cli.no_gpu", reason=r["reasons"][0])
        typer.echo(dumps_json(r, indent=2) if as_json else no_gpu.render(cli_lang()))
        raise SystemExit(1)
    checked = [c.device.label for c in r.devices]
    if as_json:
        doc = r.to_dict()
        if alloc is not None:
            doc["slurm"] = {**alloc, "checked": checked}
        typer.echo(dumps_json(doc, indent=2))
    else:
        if alloc is not None:
            typer.echo(line(alloc, checked).render(cli_lang()))
        for text in report_lines(r, cli_lang()):
            typer.echo(text)
    raise SystemExit(r.exit_code)


def report_lines(r, lang: str = "en") -> list[str]:
    """The pre-flight for people, in `lang`: each device and who holds it, the rule, the answer, the
    risks (every sentence a message; figures formatted for the language)."""
    from aiworkbook.errors import printable
    from aiworkbook.preflight.vllm import RULE
    from aiworkbook.sizing.vllm import release_label

    out: list[Msg | str] = []
    for c in r.devices:
        d = c.device
        source = d.source if isinstance(d.source, Msg) else printable(d.source, 60)
        total, cuda, used, free = d.total_bytes, d.cuda_total_bytes, d.used_bytes, d.free_bytes
        out.append(
            Msg("preflight.cli.device", label=d.label, name=printable(d.name, 80), source=source, total=total,
                cuda=cuda, used=used, free=free)
        )  # fmt: skip
        if d.processes_note:
            out.append(Msg("preflight.cli.who_unknown", why=d.processes_note))
        else:
            out.append(Msg("preflight.cli.who") if d.tenants else Msg("preflight.cli.who_none"))
        out[-1] = "  " + words(out[-1], lang)
        if d.names_note and d.tenants:
            out.append(f"    ({words(d.names_note, lang)})")
        for t in d.tenants:
            used_t = t.used_bytes
            mem = words(Msg("preflight.na"), lang) if used_t is None else fmt_bytes(used_t, lang=lang)
            where = (
                f"  [{printable(t.container or t.cgroup or '', 100)}]" if (t.container or t.cgroup) else ""
            )
            pid = words(Msg("preflight.pid"), lang)
            out.append(f"    {pid} {t.pid:<8} {printable(t.name, 40):<20} {mem:>14}{where}")
        if d.tenants or d.unattributed_bytes:
            out.append("    " + Msg("preflight.cli.unattributed", bytes=d.unattributed_bytes).render(lang))
    out.append(Msg("preflight.cli.rule", rule=RULE))
    for c in r.devices:
        verdict = Msg("preflight.cli.passes") if c.passes else Msg("preflight.cli.fails")
        check = Msg("preflight.cli.check", label=c.device.label, needs=c.requested_bytes, u=r.utilization,
                    free=c.free_at_start_bytes, held=c.context_bytes, verdict=verdict)  # fmt: skip
        out.append("  " + check.render(lang))
    a = r.at_requested
    release = release_label(r.settings["engine_version"])
    source = r.settings.get("engine_version_source")
    said_from = Msg("preflight.cli.from", source=source) if source else ""
    out.append(Msg("preflight.cli.arithmetic", release=release, source=said_from))
    if a is not None and r.starts:
        out.append(
            Msg("preflight.cli.at_requested", u=r.utilization, tokens=a.kv_cache_tokens, c=a.max_concurrency,
                len=a.max_model_len, release=release)
        )  # fmt: skip
    if r.max_utilization is None:
        out.append(Msg("preflight.cli.largest_none"))
    else:
        m = r.at_max
        out.append(
            Msg("preflight.cli.largest", u=r.max_utilization, tokens=m.kv_cache_tokens, c=m.max_concurrency,
                len=m.max_model_len)
        )  # fmt: skip
    out += [Msg("preflight.cli.risk", risk=risk) for risk in r.risks]
    if r.starts:
        out.append(Msg("preflight.cli.starts", u=r.utilization))
    else:
        out += [Msg("preflight.cli.will_not_start", reason=reason) for reason in r.reasons]
        out.append(Msg("preflight.cli.not_start"))
    return [words(x, lang) for x in out]
