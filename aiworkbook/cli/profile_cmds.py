"""`aiworkbook lock`, `check` and `report`: the decision as a file, the golden-workload check for CI
(exit 0 pass, 1 regression, 2 unusable input) and the stakeholder report (HTML, Markdown)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from aiworkbook.cli.lang import cli_lang, given_lang, said
from aiworkbook.cli.options import option
from aiworkbook.errors import SpecError
from aiworkbook.message import Msg


def register(app: typer.Typer) -> None:
    app.command("lock")(lock_cmd)
    from aiworkbook.cli.check_group import check_app
    from aiworkbook.cli.slurm_cmds import merge_cmd

    app.add_typer(check_app(check_cmd, merge_cmd), name="check")
    app.command("report")(report_cmd)


def _pairs(items: list[str], field: str) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SpecError(field, item, "KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


def _tolerance(name: str, text: str) -> tuple[float, float] | float:
    """'0.05' (drift up to 2.5x) or '0.05:0.2' (pass within, fail beyond)."""
    try:
        parts = [float(x) for x in text.split(":")]
    except ValueError:
        raise SpecError(f"tolerance.{name}", text, "a fraction, or PASS:FAIL fractions (0.05:0.2)") from None
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise SpecError(f"tolerance.{name}", text, "a fraction, or PASS:FAIL fractions (0.05:0.2)")


def read_workloads(path: str) -> list[dict[str, Any]]:
    """Workloads from a JSON file: one {model, workload[, name, gpu, device]} (the output of
    `aiworkbook size --json` is one), a list of them, or {"workloads": [...]}."""
    from aiworkbook.persist import read_text

    p = Path(path)
    text = read_text(p, what=Msg("file.workload"))
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError(
            "json", f"line {exc.lineno} col {exc.colno}: {exc.msg}", "valid JSON", source=path
        ) from None
    except (RecursionError, ValueError):  # nested past the parser's stack; an integer of 4300+ digits
        raise SpecError("json", "too deep or too large", Msg("allowed.json_sane"), source=path) from None
    from aiworkbook.profile.schema import scan

    scan(doc, source=path)
    if isinstance(doc, dict) and "workloads" in doc:
        doc = doc["workloads"]
    items = doc if isinstance(doc, list) else [doc]
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or "model" not in item or "workload" not in item:
            raise SpecError("workload", str(item)[:80], Msg("allowed.model_workload_keys"), source=path)
        name = item.get("name") or (p.stem if len(items) == 1 else f"{p.stem}-{i + 1}")
        entry = {k: item[k] for k in ("model", "workload", "gpu", "device", "config") if k in item}
        entry["assumptions"] = _explicit_assumptions(item.get("assumptions") or {})
        out.append({**entry, "name": name})
    return out


def _explicit_assumptions(given: dict[str, Any]) -> dict[str, Any]:
    """The assumptions a workload file sets away from the defaults (`size --json` lists them all)."""
    from aiworkbook.sizing import Assumptions

    defaults = Assumptions().to_dict()
    return {k: v for k, v in given.items() if k != "source" and k in defaults and v != defaults[k]}


def lock_cmd(
    pattern: str = option(
        "--pattern",
        "classical-ml-cpu | dl-training | llm-inference | hybrid (default: what --answer recommends)",
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Where to write the locked profile (JSON)."),
    node: str = option("--node", "The declared reference node (data/nodes name or a JSON)."),
    workload: list[str] = option("--workload", "Workload JSON (`size --json` output); repeat.", []),
    result: list[str] = option("--result", "Proof result JSON (`prove ... --json`); repeat.", []),
    tolerance: list[str] = option("--tolerance", "PROOF=0.05 or PROOF=0.05:0.2; repeat.", []),
    answer: list[str] = option("--answer", "Questionnaire answer KEY=VALUE; repeat.", []),
    lang: str = option("--lang", "Report language: en | nl | de.", "en"),
    note: list[str] = option("--note", "A note to keep with the profile; repeat.", []),
    detect: bool = option("--detect/--no-detect", "Record the detected node as well.", True),
) -> None:
    """Lock a profile: a pattern, workloads sized on the node and the proof results as golden proofs."""
    from aiworkbook.cli.paths import check_paths
    from aiworkbook.profile import lock

    node_file = [node] if node and Path(node).exists() else []
    check_paths({"workload": workload, "result": result, "node": node_file}, out=out)
    workloads = [w for path in workload for w in read_workloads(path)]
    tolerances = {k: _tolerance(k, v) for k, v in _pairs(tolerance, "tolerance").items()}
    prof = lock(
        pattern,
        node=node,
        detected=True if detect else None,
        workloads=workloads,
        results=result,
        tolerances=tolerances,
        answers=_pairs(answer, "answer") or None,
        lang=lang,
        notes=note,
    )
    prof.save(out)
    names = ", ".join(p.name for p in prof.proofs)
    counts = {"workloads": len(prof.workloads), "proofs": len(prof.proofs)}
    node = prof.node.fingerprint.describe()
    typer.echo(said(Msg("cli.locked", pattern=prof.pattern, **counts, names=names, node=node, path=str(out))))


def check_cmd(
    profile: Path = typer.Argument(..., help="A locked profile (aiworkbook lock)."),
    results: list[str] = option(
        "--results", "Proof result JSON files to check instead of re-running; repeat."
    ),
    strict: bool = option("--strict", "Treat drift as a regression (exit 1).", False),
    as_json: bool = option("--json", "Print the check as JSON.", False),
    dir: Path = option(
        "--dir",
        "Re-run proofs that write files in their own new folders here (default: a temporary folder "
        "removed afterwards); the profile's own dir is never used.",
    ),
    junit: Path = option("--junit", "Also write JUnit XML here: one test case per golden proof."),
    textfile: Path = option(
        "--textfile", "Also write the verdicts and ratios for Prometheus' textfile collector (.prom)."
    ),
    passive: bool = option(
        "--passive",
        "Only what takes no GPU time (NVML: fingerprint, VBIOS, MIG layout, ECC, row remapping, clocks, XIDs).",
        False,
    ),
    slurm_drain: bool = option(
        "--slurm-drain", "Drain this Slurm node when the check fails; resume it once it passes.", False
    ),
    node: str = option("--node", "The Slurm node name for --slurm-drain (default: this host's)."),
    lang: str = option(
        "--lang",
        "Language of --passive's lines: en | nl | de (a drain reason stays English; default: aiworkbook --lang).",
    ),
) -> None:
    """Re-run the golden proofs here (or take --results) and compare: exit 0 pass, 1 regression, 2 unusable.
    `aiworkbook check merge` merges several nodes' --junit files into one."""
    from aiworkbook.profile import check, load_profile

    if passive:
        from aiworkbook.catalogue import check_lang
        from aiworkbook.cli.slurm_cmds import passive_cmd

        passive_cmd(profile, slurm_drain, node, check_lang(lang or cli_lang()))

    if junit is not None or textfile is not None:
        from aiworkbook.cli.paths import check_paths

        check_paths({"profile": profile, "results": results}, junit=junit, textfile=textfile)
    prof = load_profile(profile)
    rep = check(prof, results or None, strict=strict, workdir=dir)
    _ci_outputs(rep, profile, junit, textfile)
    if slurm_drain:
        from aiworkbook.cli.slurm_cmds import drain_or_resume

        drain_or_resume(rep.exit_code, "; ".join(c.line() for c in rep.checks if c.status != "pass"), node)
    for w in rep.warnings():
        typer.echo(said(Msg("cli.warning", text=w)), err=True)
    if as_json:
        from aiworkbook.persist import dumps_json

        typer.echo(dumps_json(rep.to_dict(), indent=2))  # never a bare NaN (JSON has none)
    else:
        for c in rep.checks:
            typer.echo(said(c.line()))
        summary = (Msg("check.summary.0"), Msg("check.summary.1"), Msg("check.summary.2"))[rep.exit_code]
        cpu = sum(c.cpu_only for c in rep.checks)
        # a pass measured on the CPU is not a GPU pass: say how many
        on_cpu = Msg("check.summary.cpu", cpu=cpu, of=len(rep.checks)) if cpu else ""
        typer.echo(said(Msg("check.summary", summary=summary, cpu=on_cpu, code=rep.exit_code)))
    # SystemExit, not typer.Exit: under standalone_mode=False click returns Exit's code instead of exiting
    raise SystemExit(rep.exit_code)


def _ci_outputs(rep: Any, profile: Path, junit: Path | None, textfile: Path | None) -> None:
    """Write the check as JUnit XML and/or a Prometheus textfile (atomically: the collector never reads
    half a file); say where on stderr, so --json's stdout stays one document."""
    from aiworkbook.persist import atomic_write_text
    from aiworkbook.profile.ci_outputs import junit_xml, prometheus_textfile

    for path, render, what in (
        (junit, junit_xml, "JUnit XML"),
        (textfile, prometheus_textfile, "Prometheus textfile"),
    ):
        if path is not None:
            _shareable(atomic_write_text(path, render(rep, profile.stem)))
            typer.echo(f"{what} -> {path}", err=True)


def report_cmd(
    profile: Path = typer.Argument(..., help="A locked profile (aiworkbook lock)."),
    html: Path = option("--html", "Write a standalone offline HTML report here."),
    md: Path = option("--md", "Write a Markdown report here."),
    lang: str = option("--lang", "en | nl | de (default: aiworkbook --lang, else the profile's)."),
    tokens_per_day: float = option(
        "--tokens-per-day",
        "Expected traffic for the monthly cost: output tokens served (or tokens trained) a day, "
        "in (0, 1e15]. Default: 100,000,000 (said so in the report).",
    ),
    usd_per_kwh: float = option(
        "--usd-per-kwh",
        "Price of a kWh for the energy in dollars, in [0, 100]. Default: each workload's (0.15).",
    ),
) -> None:
    """A stakeholder report: decision, node, memory, estimate vs measured, charts, cost (a month at the
    expected traffic, $/Mtok per GPU option, energy in dollars), deployment."""
    from aiworkbook.cli.paths import check_paths
    from aiworkbook.persist import atomic_write_text
    from aiworkbook.profile import load_profile
    from aiworkbook.profile.report import render_html, render_markdown
    from aiworkbook.profile.report_cfo import Traffic

    traffic = Traffic(tokens_per_day, usd_per_kwh)  # checked before any file is read or written
    if html is None and md is None:
        raise SpecError("report", "no output", "--html FILE and/or --md FILE")
    check_paths({"profile": profile}, html=html, md=md)
    prof = load_profile(profile)
    for path, render, what in ((html, render_html, "HTML"), (md, render_markdown, "Markdown")):
        if path is not None:
            try:
                page = render(prof, lang=lang or given_lang(), traffic=traffic)
            except SpecError as exc:  # figures the report cannot show: name the profile they came from
                raise SpecError(
                    exc.field, exc.value, exc.allowed, source=exc.source or str(profile)
                ) from None
            _shareable(atomic_write_text(path, page))
            typer.echo(said(Msg("cli.report_written", kind=what, path=str(path))))


def _shareable(path: Path) -> None:
    """A report is for others to read: the umask's mode, not the temp file's 0600."""
    import os

    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)
