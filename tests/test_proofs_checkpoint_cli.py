"""`aiworkbook prove checkpoint|restore|coldstart` from the command line, at a few MB in tmp_path."""

from __future__ import annotations

import shutil

from aiworkbook.cli import main
from aiworkbook.proofs.result import ProofResult


def test_checkpoint_cli_prints_formats_and_writes_json(tmp_path, capsys):
    work, out = tmp_path / "ck", tmp_path / "ck.json"
    argv = ["prove", "checkpoint", "--dir", str(work), "--size-mb", "2", "--quick", "--json", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "plain sequential" in text and "dcp-async" in text and "integrity ok" in text
    r = ProofResult.load(out)
    assert r.proof == "checkpoint" and r.details["young_daly"]["daly_interval_s"] > 0
    assert not work.exists()  # the folder --dir named did not exist: made for the run, then removed


def test_restore_and_coldstart_cli(tmp_path, capsys):
    assert (
        main(["prove", "restore", "--dir", str(tmp_path), "--size-mb", "1", "--format", "torch", "--quick"])
        == 0
    )
    assert "restore on cpu" in capsys.readouterr().out
    assert (
        main(["prove", "coldstart", "tiny-llama", "--dir", str(tmp_path), "--quick", "--device", "cpu"]) == 0
    )
    assert "first forward" in capsys.readouterr().out


def test_a_full_disk_is_one_line_and_nothing_is_written(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(shutil, "disk_usage", lambda p: shutil._ntuple_diskusage(10**9, 10**9 - 10, 10))
    assert main(["prove", "checkpoint", "--dir", str(tmp_path), "--size-mb", "1", "--quick"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("plan: checkpoint may not fit") and err[-1].startswith(
        "error: no space left on "
    )
    assert ": needed ~2.10 MiB, free 10 B" in err[-1] and not any("Traceback" in line for line in err)
    assert list(tmp_path.iterdir()) == []


def test_missing_dir_and_bad_format_are_usage_errors(tmp_path, capsys):
    assert main(["prove", "checkpoint", "--size-mb", "1"]) == 2
    assert main(["prove", "checkpoint", "--dir", str(tmp_path), "--format", "zip"]) == 2
    assert "format" in capsys.readouterr().err
