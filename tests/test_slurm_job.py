"""`aiworkbook profile slurm-job` and `aiworkbook check merge` (issue 38): the generated sbatch script
passes `bash -n` and Debian's shellcheck, refuses or quotes every typed value, and, submitted with
`sbatch --wait` to the real loopback Slurm cluster (tests/slurm_cluster.py), checks the locked profile
on the node and leaves one merged JUnit file with a test suite per node; a planted regression is that
node's <failure>, a failing task fails the merge, and a cancelled job leaves no result behind."""

from __future__ import annotations

import shutil
import stat
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from profile_fakes import result, write_locked
from slurm_cluster import slurm, wait_for, wait_gone  # noqa: F401 (the fixture)

from aiworkbook.cli import main

#: the aiworkbook command of the Python running the tests (the job runs it on the node)
_BIN = Path(sys.executable).with_name("aiworkbook")


@pytest.fixture(scope="module")
def locked(tmp_path_factory):
    d = tmp_path_factory.mktemp("slurmjob")
    p = write_locked(d)
    result("kv", 1.5e9).save(d / "kv_slow.json")  # the planted regression: 1.5 x the locked figure
    return p


def _script(tmp: Path, profile: Path, *args: str, name: str = "job.sh") -> Path:
    out = tmp / name
    assert main(["profile", "slurm-job", str(profile), "-o", str(out), *args]) == 0
    return out


def _lint(script: Path) -> None:
    subprocess.run(["bash", "-n", str(script)], check=True, timeout=30)
    if shutil.which("shellcheck"):
        r = subprocess.run(["shellcheck", str(script)], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stdout


def _sbatch(slurm, script: Path, cwd: Path, *extra: str, timeout: float = 240) -> subprocess.CompletedProcess:  # noqa: F811
    return slurm.run("sbatch", "--wait", f"--chdir={cwd}", *extra, str(script), timeout=timeout)


def test_the_script_passes_bash_n_and_shellcheck_and_asks_for_what_was_locked(tmp_path, locked):
    script = _script(tmp_path, locked, "--nodes", "4", "--partition", "gpu", "--account", "ml", "--time",
                     "1-00:30:00", "--constraint", "h100&ib", "--dependency", "afterok:1234",
                     "--textfile-dir", "/var/lib/node_exporter/textfile_collector")  # fmt: skip
    text = script.read_text()
    _lint(script)
    for line in ("--nodes=4", "--ntasks-per-node=1", "--gpus-per-node=1", "--partition=gpu", "--account=ml",
                 "--time=1-00:30:00", "--constraint=h100&ib", "--dependency=afterok:1234"):  # fmt: skip
        assert f"#SBATCH {line}\n" in text
    gres = _script(tmp_path, locked, "--gres", "gpu:l40s:1", name="gres.sh").read_text()
    assert "#SBATCH --gres=gpu:l40s:1\n" in gres and "--gpus-per-node" not in gres


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--partition", "gpu;reboot"),
        ("--time", "forever"),
        ("--dependency", "afterok:1 && reboot"),
        ("--gres", "gpu:8\n#SBATCH --uid=0"),
        ("--nodelist", "node$(reboot)"),
        ("--nodes", "0"),
        ("--textfile-dir", "relative/dir"),
    ],
)
def test_a_typed_value_outside_slurm_syntax_is_refused_naming_the_field(
    tmp_path, locked, capsys, flag, value
):
    code = main(["profile", "slurm-job", str(locked), "-o", str(tmp_path / "x.sh"), flag, value])
    assert code == 2
    assert flag.lstrip("-").replace("-", "_") in capsys.readouterr().err
    assert not (tmp_path / "x.sh").exists()


def test_paths_with_quotes_and_dollars_reach_the_node_as_typed_never_run(slurm, tmp_path, locked):  # noqa: F811
    odd = tmp_path / "it's $(touch pwned) `touch pwned2`"
    odd.mkdir()
    for f in ("kv.json", "roof.json"):
        shutil.copy(locked.parent / f, odd / f)
    args = ["--gpus", "0", "--aiworkbook", str(_BIN), "--junit-out", str(odd / "fleet $(touch pwned3).xml")]
    args += ["--results", str(odd / "kv.json"), "--results", str(odd / "roof.json")]
    script = _script(tmp_path, locked, *args)
    _lint(script)
    r = _sbatch(slurm, script, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr + "".join(p.read_text() for p in tmp_path.glob("*.out"))
    assert (odd / "fleet $(touch pwned3).xml").exists()
    assert not [p for p in tmp_path.rglob("pwned*")]


def test_merge_names_a_suite_per_node_and_exits_with_the_worst(tmp_path, locked, capsys):
    d = locked.parent
    good, bad = tmp_path / "gpu01.xml", tmp_path / "gpu02.xml"
    main(
        [
            "check",
            str(locked),
            "--results",
            str(d / "kv.json"),
            "--results",
            str(d / "roof.json"),
            "--junit",
            str(good),
        ]
    )
    main(["check", str(locked), "--results", str(d / "kv_slow.json"), "--results", str(d / "roof.json"), "--junit", str(bad)])  # fmt: skip
    out = tmp_path / "all.xml"
    assert main(["check", "merge", "--out", str(out), str(good), str(bad)]) == 1
    suites = ET.parse(out).getroot().findall("testsuite")
    assert [s.get("hostname") for s in suites] == ["gpu01", "gpu02"]
    assert suites[0].find(".//failure") is None and suites[1].find(".//failure") is not None
    assert main(["check", "merge", "--out", str(out), "--expect", "3", str(good), str(bad)]) == 2
    assert "1 of 3 node(s) sent no result" in out.read_text()


def _merged(path: Path) -> list[ET.Element]:
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    return root.findall("testsuite")


def test_sbatch_wait_checks_the_profile_on_the_node_and_merges(slurm, tmp_path, locked):  # noqa: F811
    d = locked.parent
    args = [
        "--gpus",
        "0",
        "--time",
        "5",
        "--aiworkbook",
        str(_BIN),
        "--junit-out",
        str(tmp_path / "fleet.xml"),
    ]
    args += ["--results", str(d / "kv.json"), "--results", str(d / "roof.json")]
    args += ["--textfile-dir", str(tmp_path / "textfile")]
    r = _sbatch(slurm, _script(tmp_path, locked, *args), tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr + "".join(p.read_text() for p in tmp_path.glob("*.out"))
    suites = _merged(tmp_path / "fleet.xml")
    assert [s.get("hostname") for s in suites] == [slurm.node]
    assert len(suites[0].findall("testcase")) == 2 and suites[0].find(".//failure") is None
    prom = tmp_path / "textfile" / "aiworkbook_check_p.prom"
    from prometheus_client.parser import text_string_to_metric_families

    fams = {f.name: f for f in text_string_to_metric_families(prom.read_text())}
    assert {(s.labels["profile"], s.labels["name"]) for s in fams["aiworkbook_check_status"].samples} == {
        ("p", "kv"),
        ("p", "roofline"),
    }


def test_a_planted_regression_is_that_nodes_failure_and_the_jobs_exit_code(slurm, tmp_path, locked):  # noqa: F811
    d = locked.parent
    args = ["--gpus", "0", "--aiworkbook", str(_BIN), "--junit-out", str(tmp_path / "fleet.xml")]
    args += ["--results", str(d / "kv_slow.json"), "--results", str(d / "roof.json")]
    r = _sbatch(slurm, _script(tmp_path, locked, *args), tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    (suite,) = _merged(tmp_path / "fleet.xml")
    assert suite.get("hostname") == slurm.node
    failure = suite.find(".//failure")
    assert failure is not None and "ratio 1.500" in failure.get("message", "")


def test_a_task_that_fails_makes_the_merge_fail(slurm, tmp_path, locked):  # noqa: F811
    args = ["--gpus", "0", "--aiworkbook", str(_BIN), "--junit-out", str(tmp_path / "fleet.xml")]
    args += ["--results", str(tmp_path / "no-such-result.json")]
    r = _sbatch(slurm, _script(tmp_path, locked, *args), tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    text = (tmp_path / "fleet.xml").read_text()
    assert "<error" in text and "sent no result" in text


def test_a_cancelled_job_leaves_no_half_written_result(slurm, tmp_path, locked):  # noqa: F811
    # a check that takes long on the node: aiworkbook behind a wrapper that waits first
    slow = tmp_path / "slow-aiworkbook"
    slow.write_text(f'#!/bin/sh\nsleep 300\nexec {_BIN} "$@"\n')
    slow.chmod(slow.stat().st_mode | stat.S_IXUSR)
    results = tmp_path / "results"
    results.mkdir()
    d = locked.parent
    args = ["--gpus", "0", "--aiworkbook", str(slow), "--junit-out", str(results / "fleet.xml")]
    args += ["--results", str(d / "kv.json")]
    script = _script(tmp_path, locked, *args)
    sub = slurm.run("sbatch", "--parsable", f"--chdir={tmp_path}", str(script), timeout=30)
    assert sub.returncode == 0, sub.stderr
    job = sub.stdout.strip().split(";")[0]
    wait_for(lambda: slurm.run("squeue", "-h", "-j", job, "-o", "%T", timeout=10).stdout.strip() == "RUNNING",
             "the job running", 60)  # fmt: skip
    assert slurm.run("scancel", job, timeout=30).returncode == 0
    wait_gone(slurm, job, 120)
    assert list(results.iterdir()) == []


def test_a_mig_slice_and_a_gpu_count_are_asked_for_as_locked(tmp_path):
    from test_k8s_job import _lock

    (tmp_path / "mig").mkdir()
    mig = _lock(tmp_path / "mig", "NVIDIA A100-SXM4-80GB", cuda_name="NVIDIA A100-SXM4-80GB MIG 1g.10gb")
    text = _script(tmp_path, mig, name="mig.sh").read_text()
    assert "#SBATCH --gres=gpu:1g.10gb:1\n" in text and "--gpus-per-node" not in text
    (tmp_path / "eight").mkdir()
    eight = _lock(tmp_path / "eight", "NVIDIA H100 80GB HBM3", count=8)
    assert "#SBATCH --gpus-per-node=8\n" in _script(tmp_path, eight, name="eight.sh").read_text()


def test_every_node_of_a_partition_comes_from_sinfo(slurm, tmp_path, locked, monkeypatch):  # noqa: F811
    monkeypatch.setenv("SLURM_CONF", str(slurm.conf))
    text = _script(tmp_path, locked, "--every-node", slurm.partition, "--gpus", "0").read_text()
    assert f"#SBATCH --nodelist={slurm.node}\n" in text and "#SBATCH --nodes=1\n" in text
    assert f"#SBATCH --partition={slurm.partition}\n" in text
    code = main(["profile", "slurm-job", str(locked), "--every-node", "no-such-partition"])
    assert code == 2
