"""`aiworkbook preflight vllm MODEL [vLLM's flags]`: read this GPU now, apply vLLM's start-up rule
given the co-tenants, and say whether it starts, the largest --gpu-memory-utilization that does, the
KV cache that gives and who holds what (aiworkbook.preflight).

Exit codes: 0 it starts, 1 it will not start (also when no NVIDIA GPU is found: vLLM cannot start
here either; the JSON says "gpu_found": false), 2 bad input.
"""

import inspect
from typing import Any

import typer

from aiworkbook.cli.options import option
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
                typer.echo(line(alloc, []))
        typer.echo(
            dumps_json(r, indent=2) if as_json else f"{r['reasons'][0]}: vLLM cannot start here (exit 1)"
        )
        raise SystemExit(1)
    checked = [c.device.label for c in r.devices]
    if as_json:
        doc = r.to_dict()
        if alloc is not None:
            doc["slurm"] = {**alloc, "checked": checked}
        typer.echo(dumps_json(doc, indent=2))
    else:
        if alloc is not None:
            typer.echo(line(alloc, checked))
        for text in report_lines(r):
            typer.echo(text)
    raise SystemExit(r.exit_code)


def report_lines(r) -> list[str]:
    """The pre-flight for people: each device and who holds it, the rule, the answer, the risks."""
    from aiworkbook.errors import printable
    from aiworkbook.preflight.vllm import RULE
    from aiworkbook.sizing.vllm import release_label

    out = []
    for c in r.devices:
        d = c.device
        out.append(
            f"{d.label} {printable(d.name, 80)} ({printable(d.source, 60)}): total {fmt_bytes(d.total_bytes)} "
            f"(CUDA-visible {fmt_bytes(d.cuda_total_bytes)}), used {fmt_bytes(d.used_bytes)}, free {fmt_bytes(d.free_bytes)}"
        )
        if d.processes_note:
            out.append(f"  who holds what: unknown ({d.processes_note})")
        elif not d.tenants:
            out.append("  who holds what: no compute process listed")
        else:
            out.append("  who holds what:")
        if d.names_note and d.tenants:
            out.append(f"    ({d.names_note})")
        for t in d.tenants:
            mem = fmt_bytes(t.used_bytes) if t.used_bytes is not None else "n/a (NVML cannot read it)"
            where = (
                f"  [{printable(t.container or t.cgroup or '', 100)}]" if (t.container or t.cgroup) else ""
            )
            out.append(f"    pid {t.pid:<8} {printable(t.name, 40):<20} {mem:>14}{where}")
        if d.tenants or d.unattributed_bytes:
            out.append(f"    not attributed to a listed process: {fmt_bytes(d.unattributed_bytes)}")
    out.append(f"rule: {RULE}")
    for c in r.devices:
        verdict = "passes" if c.passes else "FAILS"
        out.append(
            f"  {c.device.label}: needs {fmt_bytes(c.requested_bytes)} at {r.utilization:g}; free at start-up "
            f"{fmt_bytes(c.free_at_start_bytes)} (free now less {fmt_bytes(c.context_bytes)} vLLM holds before "
            f"its check: CUDA context, NCCL, custom all-reduce; an estimate): {verdict}"
        )
    a = r.at_requested
    release = release_label(r.settings["engine_version"])
    source = r.settings.get("engine_version_source")
    out.append(f"arithmetic: {release}" + (f", {source}" if source else ""))
    if a is not None and r.starts:
        out.append(
            f"at --gpu-memory-utilization {r.utilization:g}: KV cache {a.kv_cache_tokens:,} tokens, max concurrency "
            f"{a.max_concurrency:.2f} x {a.max_model_len:,} tokens ({release}, an estimate)"
        )
    if r.max_utilization is None:
        out.append(
            "largest --gpu-memory-utilization that starts: none (not one request fits next to the co-tenants)"
        )
    else:
        m = r.at_max
        out.append(
            f"largest --gpu-memory-utilization that starts: {r.max_utilization:.2f} -> KV cache "
            f"{m.kv_cache_tokens:,} tokens, max concurrency {m.max_concurrency:.2f} x {m.max_model_len:,} tokens"
        )
    for risk in r.risks:
        out.append(f"risk: {risk}")
    if r.starts:
        out.append(f"verdict: starts at --gpu-memory-utilization {r.utilization:g} (exit 0)")
    else:
        for reason in r.reasons:
            out.append(f"will not start: {reason}")
        out.append("verdict: will not start (exit 1)")
    return out
