"""Proofs pointed at a real folder (a training job's checkpoints) touch nothing they did not create: each
writes only in its own new `aiworkbook-<proof>-...` folder, `--keep` keeps that folder, no `--keep`
removes it and only it; `check` re-runs a profile's proofs under its own --dir or a temporary folder,
whatever `inputs.dir` the profile holds."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path

import pytest

from aiworkbook.cli import main
from aiworkbook.proofs import scratch
from aiworkbook.proofs.result import ProofResult


def user_job(d: Path) -> Path:
    """A training job's folder: three step checkpoints, LATEST -> step-300, a file of known bytes, a
    hard link and a link pointing out of the folder."""
    base = d / "safetensors"
    for step in (100, 200, 300):
        (base / f"step-{step}").mkdir(parents=True)
        (base / f"step-{step}" / "shard-00000.safetensors").write_bytes(bytes(range(256)) * step)
    (base / "LATEST").symlink_to("step-300")
    (d / "notes.txt").write_bytes(b"known bytes \x00\xff\n")
    os.link(d / "notes.txt", d / "notes-hardlink.txt")
    (d / "outside").symlink_to(tempfile.gettempdir())
    return d


def tree(d: Path, skip: tuple[str, ...] = ()) -> dict[str, tuple]:
    """Every entry under `d` (links not followed): file bytes' hash and mode, link targets, folders."""
    out: dict[str, tuple] = {}
    for top, dirs, files in os.walk(d, followlinks=False):
        rel_top = os.path.relpath(top, d)
        if rel_top.split(os.sep)[0] in skip:
            continue
        for name in dirs + files:
            p = os.path.join(top, name)
            rel = os.path.relpath(p, d)
            if rel.split(os.sep)[0] in skip:
                continue
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", stat.S_IMODE(st.st_mode))
            elif stat.S_ISREG(st.st_mode):
                digest = hashlib.sha256(Path(p).read_bytes()).hexdigest()
                out[rel] = ("file", digest, stat.S_IMODE(st.st_mode), st.st_nlink, st.st_mtime_ns)
            else:  # a FIFO or a socket: never opened (a read would block)
                out[rel] = ("special", stat.S_IFMT(st.st_mode), st.st_ino)
    return out


def new_entries(d: Path, before: dict[str, tuple]) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.name not in {k.split(os.sep)[0] for k in before})


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and "internal error" not in out + err
    return code, out, err


PROOFS = {
    "checkpoint": ["prove", "checkpoint", "--model", "tiny-llama", "--formats", "safetensors", "--quick"],
    "restore": ["prove", "restore", "--size-mb", "1", "--format", "torch", "--quick"],
    "coldstart": ["prove", "coldstart", "tiny-llama", "--quick", "--device", "cpu"],
    "dataload": ["prove", "dataload", "--quick", "--device", "cpu"],
    "host": ["prove", "host", "--quick", "--rows", "2000", "--iterations", "2", "--threads", "1"],
}


@pytest.mark.parametrize("proof", sorted(PROOFS))
@pytest.mark.parametrize("keep", [False, True], ids=["no-keep", "keep"])
def test_a_proof_in_a_users_folder_writes_only_in_its_own_new_folder(tmp_path, capsys, proof, keep):
    d = user_job(tmp_path / "job")
    before = tree(d)
    argv = [*PROOFS[proof], "--dir", str(d), "--json", str(tmp_path / "r.json")] + (
        ["--keep"] if keep else []
    )
    code, out, _ = run_cli(argv, capsys)
    assert code == 0
    r = ProofResult.load(tmp_path / "r.json")
    own = Path(r.details["scratch"])
    assert own.parent == d.resolve() and own.name.startswith(f"aiworkbook-{proof}-")
    assert f"files written only in {own}" in out  # it says where it wrote
    assert tree(d, skip=(own.name,)) == before  # every byte and link of the user's files unchanged
    assert new_entries(d, before) == ([own.name] if keep else [])
    assert r.details["kept"] is keep


def test_the_reported_case_keeps_the_jobs_checkpoints_and_latest(tmp_path, capsys):
    """`prove checkpoint --dir D --model tiny-llama --quick --keep` pruned step-100/200 and moved LATEST."""
    d = user_job(tmp_path / "job")
    before = tree(d)
    code, out, _ = run_cli(
        ["prove", "checkpoint", "--dir", str(d), "--model", "tiny-llama", "--quick", "--keep"], capsys
    )
    assert code == 0
    assert tree(d, skip=tuple(new_entries(d, before))) == before
    assert os.readlink(d / "safetensors" / "LATEST") == "step-300"
    [kept] = new_entries(d, before)
    assert (d / kept / "safetensors" / "LATEST").read_text() == "step-0"
    # restore finds the kept checkpoint (never the job's own: it has no manifest) and writes only its own folder
    before = tree(d)
    code, out, _ = run_cli(["prove", "restore", "--dir", str(d), "--quick"], capsys)
    assert code == 0 and f"{d / kept / 'safetensors' / 'step-0'} read only" in out
    assert tree(d) == before


def test_restore_never_follows_a_latest_out_of_its_folder(tmp_path, capsys):
    d = tmp_path / "d"
    (d / "torch").mkdir(parents=True)
    (tmp_path / "victim").mkdir()
    (d / "torch" / "LATEST").write_text("../../victim")
    before = tree(tmp_path)
    code, out, _ = run_cli(
        ["prove", "restore", "--dir", str(d), "--format", "torch", "--size-mb", "1", "--quick"], capsys
    )
    assert code == 0 and "read only" not in out  # it saved and restored its own checkpoint instead
    assert tree(tmp_path) == before


def test_scratch_folders_are_new_and_removal_spares_a_replaced_folder(tmp_path):
    a, b = scratch.create(tmp_path, "x"), scratch.create(tmp_path, "x")
    assert a.path != b.path and a.path.is_dir() and b.path.is_dir()
    # the folder was swapped for a link to the user's data: removing it must not follow or delete
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("mine")
    a.path.rmdir()
    a.path.symlink_to(victim)
    assert a.remove() is False and (victim / "keep.txt").read_text() == "mine"
    assert b.remove() is True and not b.path.exists()


def test_removal_after_an_error_takes_only_the_proofs_folder(tmp_path):
    (tmp_path / "mine.txt").write_text("mine")
    with pytest.raises(RuntimeError), scratch.scratch(tmp_path, "x") as own:
        (own.path / "partial.bin").write_bytes(b"0" * 10)
        raise RuntimeError("the proof failed half-way")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.txt"]


def test_allreduce_writes_only_in_its_own_temporary_folder(tmp_path, monkeypatch):
    from aiworkbook.proofs import registry

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    r = registry.run("allreduce", ranks=1, quick=True, device="cpu", sizes="4")
    assert r.details["sweep"] and list(tmp_path.iterdir()) == []


# ---- check re-roots a profile's inputs --------------------------------------------------------------
def _profile_with_dir(tmp_path: Path, capsys, bad_dir: str) -> Path:
    """A locked host-proof profile whose stored inputs.dir was hand-edited to `bad_dir`."""
    r = tmp_path / "host.json"
    argv = [*PROOFS["host"], "--dir", str(tmp_path / "first"), "--json", str(r)]
    code, _, err = run_cli(argv, capsys)
    assert code == 0, err
    prof = tmp_path / "p.json"
    code, _, err = run_cli(
        ["lock", "--pattern", "classical-ml-cpu", "--result", str(r), "-o", str(prof)], capsys
    )
    assert code == 0, err
    doc = json.loads(prof.read_text())
    assert "dir" not in doc["proofs"][0]["inputs"]  # this host's folder is not a re-run input
    doc["proofs"][0]["inputs"].update(dir=bad_dir, keep=True)
    prof.write_text(json.dumps(doc))
    return prof


@pytest.mark.parametrize("bad_dir", ["ABS", "../../x"])
def test_check_writes_only_under_its_own_dir_whatever_the_profile_says(
    tmp_path, capsys, monkeypatch, bad_dir
):
    (tmp_path / "a" / "b").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "a" / "b")  # "../../x" would land in tmp_path, inside the tree compared
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "data.bin").write_bytes(b"precious")
    prof = _profile_with_dir(tmp_path, capsys, str(victim) if bad_dir == "ABS" else bad_dir)
    work = tmp_path / "ci"
    before = tree(tmp_path, skip=("ci",))
    code, out, err = run_cli(["check", str(prof), "--dir", str(work), "--json"], capsys)
    assert code in (0, 1), err
    assert json.loads(out)["checks"][0]["status"] in ("pass", "drift", "fail")
    assert tree(tmp_path, skip=("ci",)) == before  # the profile's dir (absolute or ..) untouched
    assert not work.exists()  # its own folder was made here and removed, and so was the folder it made
    assert not (tmp_path / "x").exists()


def test_check_without_dir_uses_a_temporary_folder_it_removes(tmp_path, capsys, monkeypatch):
    prof = _profile_with_dir(tmp_path, capsys, "/etc")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    before = tree(tmp_path, skip=("tmp",))
    code, out, err = run_cli(["check", str(prof)], capsys)
    assert code in (0, 1), err
    assert list(tmp.iterdir()) == [] and tree(tmp_path, skip=("tmp",)) == before


def test_rerooted_inputs_keep_only_the_proofs_own_inputs():
    from aiworkbook.profile.check import rerooted_inputs

    got = rerooted_inputs("host", {"dir": "/etc", "keep": True, "rows": 500, "evil": "x"}, "/root/ci")
    assert got == {"dir": "/root/ci", "keep": False, "rows": 500}
    assert rerooted_inputs("no-such-proof", {"dir": "/etc"}, "/r") == {}
