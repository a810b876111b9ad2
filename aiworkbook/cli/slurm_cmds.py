"""`aiworkbook profile slurm-job PROFILE`: an sbatch script checking the locked profile on N nodes
(aiworkbook.profile.slurm); `aiworkbook check merge FILE...`: the nodes' JUnit files as one, a test
suite per node, exit code the worst node's (aiworkbook.profile.junit_merge)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import typer

from aiworkbook.cli.k8s_cmds import profile_app
from aiworkbook.cli.options import option
from aiworkbook.errors import SpecError
from aiworkbook.message import Msg


def register(app: typer.Typer) -> None:
    """`profile slurm-job` registers on profile_app; `check merge` is in the check group (cli/check_group.py)."""


def _partition_nodes(partition: str) -> str:
    """Every node of a partition as sinfo lists it, as one host list for --nodelist."""
    try:
        r = subprocess.run(
            ["sinfo", "-h", "-N", "-p", partition, "-o", "%N"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SpecError("every_node", partition, Msg("allowed.sinfo_partition", why=str(exc))) from None
    nodes = sorted(set(r.stdout.split()))
    if r.returncode != 0 or not nodes:
        raise SpecError("every_node", partition, Msg("allowed.sinfo_nodes"))
    return ",".join(nodes)


@profile_app.command("slurm-job")
def slurm_job(
    profile: Path = typer.Argument(..., help="A locked profile (aiworkbook lock)."),
    out: Path = typer.Option(None, "--out", "-o", help="Write the script here (default: print it)."),
    name: str = option("--name", "Job name.", "aiworkbook-check"),
    nodes: int = option("--nodes", "How many nodes to check, one task per node.", 1),
    gpus: int = option("--gpus", "GPUs per node (default: the locked node's count; 0: none)."),
    gres: str = option("--gres", "A GRES string instead of --gpus, e.g. gpu:a100:8."),
    partition: str = option("--partition", "Slurm partition."),
    account: str = option("--account", "Slurm account."),
    time: str = option("--time", "Time limit (minutes, HH:MM:SS or D-HH:MM:SS)."),
    constraint: str = option("--constraint", "Node features the nodes must have."),
    dependency: str = option("--dependency", "Start after other jobs, e.g. afterok:1234."),
    nodelist: str = option("--nodelist", "Exactly these nodes (a Slurm host list)."),
    every_node: str = option("--every-node", "Every node of this partition (from sinfo), one task each."),
    junit_out: str = option("--junit-out", "Merged JUnit file (default: NAME-JOBID.xml, submit folder)."),
    textfile_dir: str = option("--textfile-dir", "Node-local folder of node_exporter's textfile collector."),
    results: list[str] = option("--results", "Node-local proof results to check instead of re-running."),
    aiworkbook: str = option("--aiworkbook", "The aiworkbook command on the nodes.", "aiworkbook"),
) -> None:
    """An sbatch script that checks the locked profile on each node (the profile travels inside it) and
    merges the nodes' JUnit into one file; the job's exit code is the worst node's."""
    from aiworkbook.persist import atomic_write_text, read_text
    from aiworkbook.profile import load_profile
    from aiworkbook.profile.slurm import SlurmJob, sbatch_script

    if out is not None:
        from aiworkbook.cli.paths import check_paths

        check_paths({"profile": profile}, out=out)
    if every_node is not None:
        if nodelist is not None:
            raise SpecError("every_node", every_node, Msg("allowed.every_node_or_nodelist"))
        SlurmJob(partition=every_node).validate()
        nodelist = _partition_nodes(every_node)
        nodes = len(nodelist.split(","))
        partition = partition or every_node
    job = SlurmJob(
        name=name,
        nodes=nodes,
        gpus=gpus,
        gres=gres,
        partition=partition,
        account=account,
        time=time,
        constraint=constraint,
        dependency=dependency,
        nodelist=nodelist,
        junit_out=junit_out,
        textfile_dir=textfile_dir,
        results=tuple(results or ()),
        aiworkbook=aiworkbook,
    )
    prof = load_profile(profile)
    text = sbatch_script(prof, read_text(profile, what=Msg("file.locked_profile")), profile.stem, job)
    if out is None:
        typer.echo(text, nl=False)
    else:
        atomic_write_text(out, text)
        typer.echo(f"sbatch script -> {out} (sbatch {out})", err=True)


def merge_cmd(
    files: list[Path] = typer.Argument(None, help="Each node's check --junit file, named NODE.xml."),
    out: Path = option("--out", "Write the merged JUnit here."),
    expect: int = option("--expect", "How many nodes should have sent a file (missing ones fail)."),
) -> None:
    """Merge the nodes' JUnit files into one (a test suite per node); exit code: the worst node's."""
    from aiworkbook.persist import atomic_write_text
    from aiworkbook.profile.junit_merge import merge

    if out is None:
        raise SpecError("out", "not given", "--out FILE")
    if expect is not None and expect < 1:
        raise SpecError("expect", expect, "an integer >= 1")
    from aiworkbook.cli.paths import check_paths

    check_paths({"files": [str(f) for f in files or []]}, out=out)
    from aiworkbook.cli.lang import cli_lang, said

    merged = merge(list(files or []), expect, cli_lang())
    atomic_write_text(out, merged.xml)
    for node, code in merged.nodes:
        typer.echo(said(Msg("junit.node_exit", node=node, code=code)))
    done = Msg("junit.merged", n=len(merged.nodes), out=str(out), code=merged.exit_code)
    typer.echo(said(done), err=True)
    raise SystemExit(merged.exit_code)


def drain_or_resume(exit_code: int, why: str, node: str | None) -> None:
    """--slurm-drain: drain this node on a failed check (one-line reason), resume it on a pass when the
    drain was ours."""
    from aiworkbook.profile import slurm_drain

    name = node or slurm_drain.this_node()
    if exit_code != 0:
        slurm_drain.drain(name, why or f"exit {exit_code}")
        typer.echo(f"drained Slurm node {name}", err=True)
    elif slurm_drain.resume_if_ours(name):
        typer.echo(f"resumed Slurm node {name} (drained by an earlier aiworkbook check)", err=True)


def passive_cmd(profile: Path, drain: bool, node: str | None, lang: str = "en") -> None:
    """check --passive: NVML only, under a watchdog; exit 0 pass, 1 a problem found, 2 unusable. The
    lines are in `lang`; the drain reason Slurm keeps is English."""
    from aiworkbook.message import Msg
    from aiworkbook.profile import load_profile
    from aiworkbook.profile.passive import passive_check

    report = passive_check(load_profile(profile))
    for n in report.notes:
        typer.echo(Msg("passive.line.note", text=n).render(lang))
    for p in report.problems:
        typer.echo(Msg("passive.line.fail", text=p).render(lang))
    typer.echo(report.summary(lang))
    if drain:
        drain_or_resume(report.exit_code, report.summary(), node)
    raise SystemExit(report.exit_code)
