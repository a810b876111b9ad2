"""What a storage proof leaves and says: `--dir a/b/c` leaves none of the folders it made (after a run,
a refusal or an interruption; `--keep` keeps its own folder and so the path to it), the line of an
interrupted run names only files that still exist, and the plan's "may not fit" line is in words,
not a Python dict."""

from __future__ import annotations

import pytest

from aiworkbook.cli import main
from aiworkbook.proofs import checkpoint

pytestmark = pytest.mark.timeout(120)

RUN = ["prove", "checkpoint", "--size-mb", "1", "--trials", "1", "--formats", "safetensors"]


def test_a_run_in_a_new_nested_dir_leaves_no_empty_folders(tmp_path, capsys):
    assert main([*RUN, "--dir", str(tmp_path / "a" / "b" / "c")]) == 0
    capsys.readouterr()
    assert list(tmp_path.iterdir()) == []


def test_keep_keeps_its_folder_and_the_path_to_it(tmp_path, capsys):
    assert main([*RUN, "--dir", str(tmp_path / "a" / "b"), "--keep"]) == 0
    capsys.readouterr()
    (kept,) = (tmp_path / "a" / "b").iterdir()
    assert kept.name.startswith("aiworkbook-checkpoint-")


def test_a_refused_run_makes_no_folders(tmp_path, capsys):
    rc = main([*RUN[:2], "--size-mb", "100000000", "--dir", str(tmp_path / "x" / "y")])
    assert rc == 2
    capsys.readouterr()
    assert list(tmp_path.iterdir()) == []


def test_an_interrupted_run_names_no_file_it_already_removed(tmp_path, capsys, monkeypatch):
    def interrupted(*args, **kw):  # after the first save wrote (and published) LATEST
        raise KeyboardInterrupt

    monkeypatch.setattr(checkpoint, "timed_restore", interrupted)
    rc = main([*RUN, "--dir", str(tmp_path / "n")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 130
    assert err[-1].startswith("stopped by Ctrl-C") and err[-1].endswith("no result was saved"), err
    assert "LATEST" not in err[-1]
    assert list(tmp_path.iterdir()) == []


def test_the_may_not_fit_line_is_in_words(tmp_path, capsys):
    main([*RUN[:2], "--size-mb", "1000000", "--dir", str(tmp_path)])
    line = next(x for x in capsys.readouterr().err.splitlines() if "may not fit" in x)
    assert "{" not in line and "'" not in line, line
    assert "state 976.56 GiB" in line and "formats safetensors, torch, dcp, dcp-async" in line, line
