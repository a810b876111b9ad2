"""An sbatch script that checks a locked profile on N nodes of a Slurm cluster, one task per node.

No shared file system is assumed: the profile travels inside the script (base64 in a quoted here-doc)
and reaches every node of the allocation through `sbcast`; each node's JUnit comes back through srun's
own output forwarding (`--label` tells the tasks apart), so the batch step can merge them with
`aiworkbook check merge` into one JUnit file with a test suite per node, whose exit code is the worst
node's. Each node's Prometheus textfile stays on that node (node_exporter reads it there).

Values typed by the user either go on `#SBATCH` lines, which sbatch reads without a shell, and so are
checked against Slurm's own syntax and refused otherwise (no quoting could make them safe there), or
go into shell commands quoted with shlex. The script passes `bash -n` and shellcheck.
"""

from __future__ import annotations

import base64
import re
import shlex
from dataclasses import dataclass

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.profile.k8s import locked_gpu
from aiworkbook.profile.model import LockedProfile

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
#: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS (sbatch --time)
_TIME = re.compile(r"\d{1,7}|\d{1,4}:\d{1,2}(:\d{1,2})?|\d{1,4}-\d{1,2}(:\d{1,2}){0,2}|UNLIMITED|INFINITE")
_GRES = re.compile(
    r"[a-z][a-z0-9_]*(:[A-Za-z0-9_.+-]+)*(:\d+)?(,[a-z][a-z0-9_]*(:[A-Za-z0-9_.+-]+)*(:\d+)?)*"
)
_CONSTRAINT = re.compile(r"[A-Za-z0-9_.&|\[\]*()!:,-]{1,256}")
_DEP_ONE = r"(after|afterany|afterok|afternotok|aftercorr|afterburstbuffer)(:\d+(_\d+)?(\+\d+)?)+|singleton"
_DEPENDENCY = re.compile(rf"({_DEP_ONE})([,?]({_DEP_ONE}))*")
_HOSTLIST = re.compile(r"[A-Za-z0-9_.\[\],-]{1,4096}")
_HEREDOC = "AIWORKBOOK_PROFILE"


@dataclass(frozen=True)
class SlurmJob:
    """What the job asks Slurm for and where it leaves its results (all validated by `validate`)."""

    name: str = "aiworkbook-check"
    nodes: int = 1
    gpus: int | None = None  # per node; None: the locked node's count; 0: none
    gres: str | None = None
    partition: str | None = None
    account: str | None = None
    time: str | None = None
    constraint: str | None = None
    dependency: str | None = None
    nodelist: str | None = None
    junit_out: str | None = None  # merged JUnit, relative to the submit folder (default: by job id)
    textfile_dir: str | None = None  # node-local folder of node_exporter's textfile collector
    results: tuple[str, ...] = ()  # node-local result files to check instead of re-running proofs
    aiworkbook: str = "aiworkbook"  # the command on each node

    def validate(self) -> None:
        """A SpecError naming the first field out of range."""
        if not _WORD.fullmatch(self.name):
            raise SpecError("name", self.name, Msg("allowed.slurm_name"))
        for field, v, lo in (("nodes", self.nodes, 1), ("gpus", self.gpus, 0)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= 65536):
                raise SpecError(field, v, Msg("allowed.int_range", low=lo, high=65536))
        checks = (
            ("gres", self.gres, _GRES, Msg("allowed.slurm_gres")),
            ("partition", self.partition, _WORD, Msg("allowed.slurm_partition")),
            ("account", self.account, _WORD, Msg("allowed.slurm_account")),
            ("time", self.time, _TIME, Msg("allowed.slurm_time")),
            ("constraint", self.constraint, _CONSTRAINT, Msg("allowed.slurm_constraint")),
            ("dependency", self.dependency, _DEPENDENCY, Msg("allowed.slurm_dependency")),
            ("nodelist", self.nodelist, _HOSTLIST, Msg("allowed.slurm_hostlist")),
        )
        for field, value, pattern, allowed in checks:
            if value is not None and not pattern.fullmatch(value):
                raise SpecError(field, value, allowed)
        if self.gres is not None and self.gpus is not None:
            raise SpecError("gres", self.gres, Msg("allowed.gres_or_gpus"))
        for field, path in (("junit_out", self.junit_out), ("textfile_dir", self.textfile_dir)):
            if path is not None and (not path or "\0" in path or "\n" in path):
                raise SpecError(field, path, Msg("allowed.path_one_line"))
        if self.textfile_dir is not None and not self.textfile_dir.startswith("/"):
            raise SpecError("textfile_dir", self.textfile_dir, Msg("allowed.abs_path_node"))
        for r in self.results:
            if not r.startswith("/") or "\n" in r or "\0" in r:
                raise SpecError("results", r, Msg("allowed.abs_path_node_line"))
        if not self.aiworkbook or "\n" in self.aiworkbook or "\0" in self.aiworkbook:
            raise SpecError("aiworkbook", self.aiworkbook, Msg("allowed.command_path"))


def gpu_request(profile: LockedProfile, job: SlurmJob) -> str | None:
    """The #SBATCH GPU option: --gres as given; a MIG slice the profile was locked on as a typed GRES
    (Slurm's NVML auto-detection names MIG types by their profile, gpu:1g.10gb); else whole GPUs per
    node, the locked count unless --gpus says otherwise (0: none)."""
    if job.gres is not None:
        return f"--gres={job.gres}"
    gpu, count, mig = locked_gpu(profile)
    if job.gpus is not None:
        return f"--gpus-per-node={job.gpus}" if job.gpus else None
    if mig:
        return f"--gres=gpu:{mig}:1"
    if not gpu or count < 1:
        return None
    return f"--gpus-per-node={count}"


def _node_step(job: SlurmJob, profile_name: str, name: str) -> str:
    """What each task runs on its node: the check with node-local outputs; its JUnit and exit code go
    to stdout (srun brings them back), the node's copy of the profile is removed afterwards."""
    q = shlex.quote
    # the check names its results by the profile file's name: a copy under that name in the task's folder
    own = re.sub(r"[^A-Za-z0-9_.-]", "_", profile_name).lstrip(".") or "profile"
    check = [q(job.aiworkbook), "check", f'"$tmp/"{q(own + ".json")}', "--junit", '"$tmp/junit.xml"']
    for r in job.results:
        check += ["--results", q(r)]
    if job.textfile_dir is not None:
        check += ["--textfile", q(f"{job.textfile_dir.rstrip('/')}/aiworkbook_check_{name}.prom")]
    return "\n".join(
        [
            'tmp=$(mktemp -d "${TMPDIR:-/tmp}/aiworkbook-node.XXXXXX") || exit 2',
            f'cp "$AIWORKBOOK_NODE_PROFILE" "$tmp/"{q(own + ".json")} || exit 2',
            " ".join(check) + " >&2",
            "rc=$?",
            'if [ -s "$tmp/junit.xml" ]; then sed "s/^/@@junit /" "$tmp/junit.xml"; fi',
            'echo "@@exit ${SLURMD_NODENAME:-$(hostname)} $rc"',
            'rm -rf -- "$tmp" "$AIWORKBOOK_NODE_PROFILE"',
            "exit $rc",
        ]
    )


#: srun --label's output split into one JUnit file per node (named by the node, made file-safe)
_SPLIT = r"""awk -v dir="$work/nodes" '
{ i = index($0, ": "); if (i == 0) next
  task = substr($0, 1, i - 1) + 0; line = substr($0, i + 2)
  if (line ~ /^@@junit /) junit[task] = junit[task] substr(line, 9) "\n"
  else if (line ~ /^@@exit /) { split(line, f, " "); node[task] = f[2] } }
END { for (t in junit) { n = (t in node) ? node[t] : "task-" t; gsub(/[^A-Za-z0-9_.-]/, "_", n)
      printf "%s", junit[t] > (dir "/" n ".xml") } }' "$work/steps.out" """.rstrip()


def sbatch_script(profile: LockedProfile, profile_text: str, profile_name: str, job: SlurmJob) -> str:
    """The whole script (text). SpecError for any field out of range."""
    from aiworkbook import __version__

    job.validate()
    stem = re.sub(r"[^A-Za-z0-9_]", "_", profile_name) or "profile"
    q = shlex.quote
    sbatch = [f"--job-name={job.name}", f"--nodes={job.nodes}", "--ntasks-per-node=1"]
    gpu = gpu_request(profile, job)
    sbatch += [gpu] if gpu else []
    for opt, value in (
        ("partition", job.partition),
        ("account", job.account),
        ("time", job.time),
        ("constraint", job.constraint),
        ("dependency", job.dependency),
        ("nodelist", job.nodelist),
    ):
        if value is not None:
            sbatch.append(f"--{opt}={value}")
    sbatch.append(f"--output={job.name}-%j.out")
    out = q(job.junit_out) if job.junit_out else '"' + job.name + '-${SLURM_JOB_ID}.xml"'
    encoded = base64.encodebytes(profile_text.encode()).decode().rstrip("\n")
    lines = [
        "#!/bin/bash",
        *(f"#SBATCH {s}" for s in sbatch),
        f"# Written by aiworkbook {__version__} (aiworkbook profile slurm-job): checks the locked profile",
        "# on each node (one task per node) and merges the nodes' JUnit into one file; exit code: the",
        "# worst node's (0 pass, 1 regression, 2 unusable or no result).",
        "# Single quotes hold literal values and the node step, whose variables expand on the node:",
        "# shellcheck disable=SC2016",
        "set -uo pipefail",
        "shopt -s nullglob",
        'work=$(mktemp -d "${TMPDIR:-/tmp}/aiworkbook-check.XXXXXX") || exit 2',
        "trap 'rm -rf -- \"$work\"' EXIT",
        "trap 'exit 143' TERM",
        "trap 'exit 130' INT",
        'mkdir "$work/nodes"',
        f"base64 -d > \"$work/profile.json\" <<'{_HEREDOC}' || exit 2",
        encoded,
        _HEREDOC,
        # node-local copy on every node of the allocation (no shared file system assumed)
        'export AIWORKBOOK_NODE_PROFILE="${TMPDIR:-/tmp}/aiworkbook-profile-${SLURM_JOB_ID}.json"',
        'sbcast --force "$work/profile.json" "$AIWORKBOOK_NODE_PROFILE" || exit 2',
        f"srun --label --ntasks-per-node=1 --kill-on-bad-exit=0 bash -c {q(_node_step(job, profile_name, stem))} "
        '> "$work/steps.out"',
        "step=$?",
        _SPLIT,
        f'{q(job.aiworkbook)} check merge --expect "$SLURM_JOB_NUM_NODES" --out {out} "$work"/nodes/*.xml',
        "merged=$?",
        'if [ "$merged" -eq 0 ] && [ "$step" -ne 0 ]; then exit 2; fi',
        'exit "$merged"',
        "",
    ]
    return "\n".join(lines)
