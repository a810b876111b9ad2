"""A hostile sweep over where proofs write and what they read back: --dir that is a file, a FIFO, a
pseudo file system, a path with spaces or `$(...)`; kept checkpoints whose LATEST is a FIFO, a link, a
path out of the folder or garbage; kept folders that are links out of --dir. Each case: one line and
exit 0 or 2, never a traceback or an internal error, and no file outside the proof's own folder
changed (a sentinel tree hashed before and after)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_safety_scratch import PROOFS, run_cli, tree

RESTORE = ["prove", "restore", "--size-mb", "1", "--format", "torch", "--quick"]


def _kept_with_latest(
    d: Path, latest: str | None, *, fifo: bool = False, manifest: str | None = None
) -> Path:
    """`d/aiworkbook-checkpoint-X/torch/` with a LATEST as given and a step-0 folder."""
    base = d / "aiworkbook-checkpoint-20200101T000000Z-00000000" / "torch"
    (base / "step-0").mkdir(parents=True)
    (base / "step-0" / "shard-00000.pt").write_bytes(b"not a checkpoint")
    if manifest is not None:
        (base / "step-0" / "manifest.json").write_text(manifest)
    if fifo:
        os.mkfifo(base / "LATEST")
    elif latest is not None:
        (base / "LATEST").write_text(latest)
    return base


def _setup(case: str, tmp: Path) -> tuple[list[str], set[int]]:
    """The argv of one case (with its --dir) and the exit codes allowed."""
    d = tmp / "d"
    d.mkdir()
    if case == "dir is a file":
        (tmp / "f").write_text("mine")
        return [*RESTORE, "--dir", str(tmp / "f")], {2}
    if case == "dir is a fifo":
        os.mkfifo(tmp / "fifo")
        return [*RESTORE, "--dir", str(tmp / "fifo")], {2}
    if case == "dir under /proc":
        return [*RESTORE, "--dir", "/proc/self/aiwb-no"], {2}
    if case == "dir under /sys":
        return [*RESTORE, "--dir", "/sys/kernel/aiwb-no"], {2}
    if case == "dir is empty":
        return [*RESTORE, "--dir", ""], {2}
    if case == "dir has spaces and $(...)":
        odd = tmp / "a b $(touch PWNED); x`id`"
        return [*RESTORE, "--dir", str(odd)], {0}
    if case == "dir is a link out of tmp":
        (tmp / "target").mkdir()
        (d / "link").symlink_to(tmp / "target")
        return [*RESTORE, "--dir", str(d / "link")], {0}
    if case == "latest is a fifo":
        _kept_with_latest(d, None, fifo=True)
        return [*RESTORE, "--dir", str(d)], {0}
    if case == "latest leads out":
        _kept_with_latest(d, "../../../outside")
        return [*RESTORE, "--dir", str(d)], {0}
    if case == "latest is binary garbage":
        base = _kept_with_latest(d, None)
        (base / "LATEST").write_bytes(b"\xff\xfe\x00" * 200)
        return [*RESTORE, "--dir", str(d)], {0}
    if case == "latest is a link":
        base = _kept_with_latest(d, None)
        (base / "LATEST").symlink_to(tmp / "elsewhere.txt")
        (tmp / "elsewhere.txt").write_text("step-0")
        return [*RESTORE, "--dir", str(d)], {0}
    if case == "manifest is not json":
        _kept_with_latest(d, "step-0", manifest="{not json")
        return [*RESTORE, "--dir", str(d)], {2}
    if case == "kept folder is a link out":
        (tmp / "outside" / "torch" / "step-0").mkdir(parents=True)
        (tmp / "outside" / "torch" / "LATEST").write_text("step-0")
        (d / "aiworkbook-checkpoint-20990101T000000Z-ffffffff").symlink_to(tmp / "outside")
        return [*RESTORE, "--dir", str(d)], {0}
    if case == "kept name is a file":
        (d / "aiworkbook-checkpoint-20990101T000000Z-ffffffff").write_text("a file")
        return [*RESTORE, "--dir", str(d)], {0}
    if case == "json is a fifo":
        os.mkfifo(tmp / "out.fifo")
        return [*RESTORE, "--dir", str(d), "--json", str(tmp / "out.fifo")], {2}
    if case == "json is the dir":
        return [*RESTORE, "--dir", str(d), "--json", str(d)], {2}
    if case == "check dir is a file":
        (tmp / "f").write_text("mine")
        (tmp / "p.json").write_text("{}")
        return ["check", str(tmp / "p.json"), "--dir", str(tmp / "f")], {2}
    raise AssertionError(case)


CASES = [
    "dir is a file",
    "dir is a fifo",
    "dir under /proc",
    "dir under /sys",
    "dir is empty",
    "dir has spaces and $(...)",
    "dir is a link out of tmp",
    "latest is a fifo",
    "latest leads out",
    "latest is binary garbage",
    "latest is a link",
    "manifest is not json",
    "kept folder is a link out",
    "kept name is a file",
    "json is a fifo",
    "json is the dir",
    "check dir is a file",
]


@pytest.mark.parametrize("case", CASES)
def test_hostile_dirs_and_kept_folders(tmp_path, capsys, monkeypatch, case):
    monkeypatch.chdir(tmp_path)  # a `$(touch PWNED)` that ran would land here
    argv, codes = _setup(case, tmp_path)
    before = tree(tmp_path)
    code, out, err = run_cli(argv, capsys)
    assert code in codes, out + err
    if code == 2:
        assert err.strip().splitlines()[-1].startswith("error:")
    after = tree(tmp_path)
    new = set(after) - set(before)
    # nothing changed or vanished; the only new entries are a proof's own folder that was then removed
    assert {k: v for k, v in after.items() if k in before} == before and set(before) <= set(after)
    assert not new, new  # a folder the user named that did not exist is made for the run and removed
    assert not (tmp_path / "PWNED").exists()


BAD_DIRS = {"a file": "f", "a fifo": "fifo", "under /proc": "/proc/self/aiwb-no"}


@pytest.mark.parametrize("proof", sorted(PROOFS))
@pytest.mark.parametrize("bad", sorted(BAD_DIRS))
def test_every_writing_proof_refuses_a_dir_it_cannot_write_in(tmp_path, capsys, monkeypatch, proof, bad):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f").write_text("mine")
    os.mkfifo(tmp_path / "fifo")
    before = tree(tmp_path)
    code, out, err = run_cli([*PROOFS[proof], "--dir", BAD_DIRS[bad]], capsys)
    assert code == 2 and err.strip().splitlines()[-1].startswith("error:"), out + err
    assert "'dir'" in err.strip().splitlines()[-1]
    assert tree(tmp_path) == before


@pytest.mark.parametrize("proof", ["checkpoint", "dataload"])
def test_a_cancelled_proof_removes_its_folder_and_only_it(tmp_path, proof):
    import threading

    from test_safety_scratch import user_job

    from aiworkbook.proofs import registry

    d = user_job(tmp_path / "job")
    before = tree(d)
    cancel = threading.Event()
    seen: list[str] = []

    def progress(done: int, total: int, message: str) -> None:
        seen.append(message)
        if len(seen) >= 3:
            cancel.set()

    inputs = {"size_mb": 2, "formats": "torch"} if proof == "checkpoint" else {"device": "cpu"}
    r = registry.run(proof, dir=str(d), quick=True, progress=progress, cancel=cancel, **inputs)
    assert r.verdict == "interrupted"
    assert tree(d) == before  # the proof's own folder is gone, the user's files as they were
