"""Every kind of bad input on the command line: one message, exit code 2, never a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from aiworkbook.cli import main
from aiworkbook.errors import SpecError
from aiworkbook.persist import check_writable

BAD = [
    ["size"],  # missing argument
    ["size", "llama-3-8b", "--batch", "abc"],  # wrong type
    ["size", "llama-3-8b", "--bogus"],  # unknown option
    ["nosuch"],  # unknown command
    ["size", "llama-3-8b", "--batch", "0"],  # out of range (SpecError)
    ["params", "/nonexistent/config.json"],  # missing file
    ["monitor", "--interval", "x"],
]


@pytest.mark.parametrize("argv", BAD, ids=[" ".join(a) for a in BAD])
def test_bad_input_exits_2_without_traceback(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and ("Error" in err or "error:" in err)


def test_console_script_usage_error_has_no_traceback():
    r = subprocess.run([sys.executable, "-m", "aiworkbook", "size"], capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "Missing argument" in r.stderr


def test_unreadable_path_is_one_line(tmp_path, capsys):
    d = tmp_path / "cfg"
    d.mkdir()
    (d / "config.json").mkdir()  # a folder where a file should be: reading it raises IsADirectoryError
    assert main(["params", str(d)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "Traceback" not in err


def test_check_writable(tmp_path):
    assert check_writable(tmp_path / "new" / "r.json", "json") == tmp_path / "new" / "r.json"
    with pytest.raises(SpecError, match="not a folder"):
        check_writable(tmp_path, "json")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(SpecError, match="json"):
        check_writable(blocker / "r.json", "json")  # the parent is a file
