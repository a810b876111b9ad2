"""Outputs never replace inputs: an output that is an input of the same command (same path, a symlink to
it, a hard link of it) or two outputs that are one file exit 2 naming both, before any work, and the
input stays byte for byte as it was."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from profile_fakes import result

from aiworkbook.cli import main
from aiworkbook.cli.paths import check_paths, same_file
from aiworkbook.errors import SpecError


def digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.fixture
def files(tmp_path, capsys):
    result("kv", 1.0e9).save(tmp_path / "kv.json")
    args = ["lock", "--pattern", "llm-inference", "--node", "inference-4xl40s", "--no-detect"]
    assert main([*args, "--result", str(tmp_path / "kv.json"), "-o", str(tmp_path / "p.json")]) == 0
    (tmp_path / "p-link.json").symlink_to("p.json")
    os.link(tmp_path / "p.json", tmp_path / "p-hard.json")
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    (tmp_path / "trace.jsonl").write_text('{"kind": "aiworkbook.telemetry.trace"}\n')
    capsys.readouterr()
    return tmp_path


def refused(files: Path, capsys, argv: list[str], named: tuple[str, ...], kept: str) -> None:
    before = digest(files / kept)
    code = main([str(a).replace("{d}", str(files)) for a in argv])
    out, err = capsys.readouterr()
    assert code == 2, out + err
    line = err.strip().splitlines()[-1]
    assert line.startswith("error:") and "Traceback" not in err and "internal error" not in err
    for name in named:
        assert name in line, line
    assert digest(files / kept) == before  # the input is byte-identical


CASES = {
    "report html is the profile": (
        ["report", "{d}/p.json", "--html", "{d}/p.json"],
        ("'html'", "input profile", "p.json"),
        "p.json",
    ),
    "report md is a symlink to the profile": (
        ["report", "{d}/p.json", "--md", "{d}/p-link.json"],
        ("'md'", "p-link.json", "input profile"),
        "p.json",
    ),
    "report html is a hard link of the profile": (
        ["report", "{d}/p.json", "--html", "{d}/p-hard.json"],
        ("'html'", "p-hard.json", "p.json"),
        "p.json",
    ),
    "report html and md are one file": (
        ["report", "{d}/p.json", "--html", "{d}/r.out", "--md", "{d}/./r.out"],
        ("'md'", "output html", "r.out"),
        "p.json",
    ),
    "lock out is a result": (
        ["lock", "--pattern", "llm-inference", "--no-detect", "--result", "{d}/kv.json", "-o", "{d}/kv.json"],
        ("'out'", "input result", "kv.json"),
        "kv.json",
    ),
    "lock out is a workload": (
        [
            "lock",
            "--pattern",
            "llm-inference",
            "--no-detect",
            "--workload",
            "{d}/p.json",
            "-o",
            "{d}/p-link.json",
        ],
        ("'out'", "input workload", "p.json"),
        "p.json",
    ),
    "roofline json and node-out are one file": (
        ["prove", "roofline", "--json", "{d}/n.json", "--node-out", "{d}/n.json"],
        ("'node_out'", "output json", "n.json"),
        "p.json",
    ),
    "vram json is the model's config": (
        ["prove", "vram", "{d}/model", "--json", "{d}/model/config.json"],
        ("'json'", "input model", "config.json"),
        "model/config.json",
    ),
    "serving json is the imported file": (
        ["prove", "serving", "--import", "{d}/kv.json", "--json", "{d}/kv.json"],
        ("'json'", "input import", "kv.json"),
        "kv.json",
    ),
    "checkpoint json is a hard link of a result": (
        [
            "prove",
            "checkpoint",
            "--dir",
            "{d}/w",
            "--size-mb",
            "1",
            "--json",
            "{d}/p-hard.json",
            "--model",
            "{d}/p.json",
        ],
        ("'json'", "input model", "p.json"),
        "p.json",
    ),
    "monitor record is the replayed trace": (
        ["monitor", "--replay", "{d}/trace.jsonl", "--record", "{d}/trace.jsonl", "--duration", "1"],
        ("'record'", "input replay", "trace.jsonl"),
        "trace.jsonl",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_output_that_is_an_input_or_another_output_exits_2(files, capsys, case):
    argv, named, kept = CASES[case]
    refused(files, capsys, argv, named, kept)
    assert not (files / "r.out").exists() and not (files / "n.json").exists() and not (files / "w").exists()


def test_distinct_outputs_still_work(files, capsys):
    assert (
        main(["report", str(files / "p.json"), "--html", str(files / "r.html"), "--md", str(files / "r.md")])
        == 0
    )
    assert (files / "r.html").stat().st_size > 0 and (files / "r.md").stat().st_size > 0


def test_same_file_follows_links_and_inodes(tmp_path):
    (tmp_path / "a").write_text("a")
    (tmp_path / "l").symlink_to("a")
    os.link(tmp_path / "a", tmp_path / "h")
    assert same_file(tmp_path / "a", tmp_path / "l") and same_file(tmp_path / "h", tmp_path / "l")
    assert same_file(tmp_path / "new", tmp_path / "sub" / ".." / "new")  # neither exists yet
    assert not same_file(tmp_path / "a", tmp_path / "new")
    with pytest.raises(SpecError, match="'b' = .* the input a"):
        check_paths({"a": [tmp_path / "x", tmp_path / "a"]}, b=tmp_path / "h")
    check_paths({"a": [None, tmp_path / "a"]}, b=tmp_path / "b", c=None)  # None is skipped
