"""`aiworkbook --lang nl|de COMMAND`: what a command says reaches the terminal in the language, with
no English word or English-formatted figure left (tests/english_left.py, the detector the report and
the widgets are held to): replica-time's table and verdict (assumed and measured), a refused bad number,
a refused file that is too large, a FIFO and JSON nested too deeply. In-process through `main` (the
entry point, which says a refusal in one line; typer's CliRunner would stop at the exception), seconds.

The plain-text tables of `size`, `fit` and `preflight vllm` are run in tests/test_cli_lang_sizing.py
(their refusals below). What the OS or a decoder says ("Expecting value") is quoted as it said it,
marked «…», which the detector skips."""

from __future__ import annotations

import json
import os

import pytest
from english_left import english_left

from aiworkbook.cli import main

REPLICA = ["replica-time", "--image-gb", "14", "--weights-gb", "140", "--pull-gb-s", "0.25"]
REPLICA += ["--download-gb-s", "1.25", "--warmup-s", "25", "--reaction-s", "60"]


def _sparse(path, size: int):
    with open(path, "wb") as f:
        f.truncate(size)  # no data written: a 300 MB file in no time and no disk
    return path


def _coldstart(path):
    """A coldstart proof result as `aiworkbook prove coldstart --json` writes it (the fields read)."""
    doc = {
        "proof": "coldstart",
        "unit": "s",
        "measured": 1.5,
        "device": "cpu",
        "details": {"weights_bytes": 2e9},
    }
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _runs(tmp_path) -> list[tuple[list[str], int]]:
    """(argv after --lang, the exit code it must give): a table, a verdict either way, refusals."""
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    nested = tmp_path / "nested.json"
    nested.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    big = _sparse(tmp_path / "big.json", 300 * 2**20)
    return [
        ([*REPLICA, "--load-gb-s", "3", "--spike-s", "180"], 0),  # cannot follow
        ([*REPLICA, "--load-gb-s", "3", "--spike-s", "900", "--image-cached"], 0),  # can follow
        ([*REPLICA, "--coldstart", str(_coldstart(tmp_path / "cs.json"))], 0),  # measured, no spike
        ([*REPLICA, "--load-gb-s", "0"], 2),  # a bad number
        ([*REPLICA, "--coldstart", str(big)], 2),  # a file too large to read
        ([*REPLICA, "--coldstart", str(fifo)], 2),  # a FIFO, which would be waited on for ever
        ([*REPLICA, "--coldstart", str(nested)], 2),  # JSON nested too deeply to read
        (["size", str(big)], 2),  # sizing: a model file too large
        (["fit", "llama-3-8b", "--tp", "0"], 2),  # sizing: a number out of its range
        (_merge(tmp_path), 2),  # check merge: nodes' files too deep, not a check's, one missing
        *_outside_words(tmp_path),
        *_output_paths(tmp_path),
    ]


def _output_paths(tmp_path) -> list[tuple[list[str], int]]:
    """Refused output paths: a folder as the file to write, a file in the way of its folder."""
    afile = tmp_path / "afile"
    afile.write_text("x", encoding="utf-8")
    return [
        (["prove", "vram", "tiny-llama", "--json", str(tmp_path)], 2),  # a file path, not a folder
        (["prove", "vram", "tiny-llama", "--json", str(afile / "x.json")], 2),  # its folder cannot be made
    ]


def _outside_words(tmp_path) -> list[tuple[list[str], int]]:
    """Refusals that quote what the OS, Python's json and UTF-8 decoders or expat said (English)."""
    text = tmp_path / "text.json"
    text.write_text("not json", encoding="utf-8")
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"a": "\xe9"}')
    broken = tmp_path / "n04.xml"
    broken.write_text("<testsuites", encoding="utf-8")
    return [
        ([*REPLICA, "--coldstart", str(text / "x")], 2),  # Not a directory
        ([*REPLICA, "--coldstart", str(text)], 2),  # Expecting value
        ([*REPLICA, "--coldstart", str(latin)], 2),  # invalid continuation byte
        (["check", "merge", str(broken), "--expect", "1", "--out", str(tmp_path / "merged.xml")], 2),
    ]


def _merge(tmp_path) -> list[str]:
    deep = tmp_path / "n01.xml"
    deep.write_text("<a>" * 40 + "</a>" * 40, encoding="utf-8")
    other = tmp_path / "n02.xml"
    other.write_text("<testsuites/>", encoding="utf-8")
    return ["check", "merge", str(deep), str(other), "--expect", "3", "--out", str(tmp_path / "merged.xml")]


def _merged_errors(tmp_path) -> str:
    """What the merged JUnit says of each node that sent nothing usable (its error messages)."""
    import xml.etree.ElementTree as ET

    root = ET.parse(tmp_path / "merged.xml").getroot()  # noqa: S314 (written by this test's run)
    return "\n".join(e.get("message", "") for e in root.iter("error"))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("lang", ["nl", "de"])
def test_commands_leave_no_english(tmp_path, capsys, lang):
    found = []
    for argv, code in _runs(tmp_path):
        assert main(["--lang", lang, *argv]) == code, argv
        out = capsys.readouterr()
        text = out.out + out.err + (_merged_errors(tmp_path) if argv[0] == "check" else "")
        assert text.strip() and "Traceback" not in text, argv
        if code:
            assert len(out.err.splitlines()) == 1, out.err  # a refusal is one line
        found += [f"{argv[0]} {argv[-1]}: {line}" for line in english_left(text, lang)]
    assert not found, "English left:\n" + "\n".join(found)


@pytest.mark.timeout(60)
def test_english_is_what_it_was_and_the_detector_sees_it(tmp_path, capsys):
    """English by default, figures as Python writes them; the same runs in English are what the
    detector finds English in (so the test above can fail)."""
    assert main([*REPLICA, "--load-gb-s", "3", "--spike-s", "180"]) == 0
    out = capsys.readouterr().out
    assert "weight download     112.00 s  assumed   140.00 GB / 1.25 GB/s" in out
    assert "scaling out cannot follow: a new replica is useful 5.0 min after the load rises" in out
    assert english_left(out, "nl") and english_left(out, "de")
    big = _sparse(tmp_path / "big.json", 300 * 2**20)
    assert main([*REPLICA, "--coldstart", str(big)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "(314,572,800 bytes)' is not valid; allowed: a coldstart" in err
    assert english_left(err, "nl")


def test_dutch_and_german_say_the_figures_their_way(tmp_path, capsys):
    assert main(["--lang", "de", *REPLICA, "--load-gb-s", "3", "--spike-s", "180"]) == 0
    out = capsys.readouterr().out
    assert "Gewichte herunterladen   112,00 s  angenommen    140,00 GB / 1,25 GB/s" in out
    big = _sparse(tmp_path / "big.json", 300 * 2**20)
    assert main(["--lang", "nl", *REPLICA, "--coldstart", str(big)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fout: ") and "(314.572.800 bytes)" in err and "hoogstens 268.435.456 bytes" in err


def test_a_language_without_a_catalogue_is_refused(capsys):
    assert main(["--lang", "fr", "models"]) == 2
    assert "'--lang' = 'fr' is not valid; allowed: en, de, nl" in capsys.readouterr().err


def test_words_from_outside_are_quoted_and_only_the_quotation_is_skipped(tmp_path, capsys):
    """What the OS or a decoder said stays as it said it, marked «…» in Dutch and German, and
    english_left skips the marked quotation only: the same words unmarked, English outside the marks
    and an English figure outside them are still found."""
    said = {}
    for lang in ("en", "nl"):
        for argv, code in _outside_words(tmp_path)[:3]:
            assert main(["--lang", lang, *argv]) == code
            said[lang] = said.get(lang, "") + capsys.readouterr().err
    for words in ("Not a directory", "Expecting value", "invalid continuation byte"):
        assert words in said["en"] and f"«{words}»" not in said["en"] and f"«{words}»" in said["nl"]
    assert english_left(said["en"], "nl") and not english_left(said["nl"], "nl")
    unmarked = said["nl"].replace("«", "").replace("»", "")
    assert len(english_left(unmarked, "nl")) >= 2  # "Expecting value": words Dutch pages also use
    line = "fout: pad = 'x' is niet geldig; toegestaan: een leesbaar bestand («Not a directory»)"
    assert not english_left(line, "nl")
    assert english_left(line + " which was", "nl") and english_left(line + " 1.50 GiB", "nl")
    assert not english_left("«1.50 GiB» «the file»", "de")


#: the catalogue and node commands: a dense model, one with sliding and full KV groups and a vision
#: tower, an MLA one with MTP layers and experts, an encoder; a preset that does not exist
SPECS = [["env"], ["models"], ["gpus"], ["params", "llama-3-8b"], ["params", "gemma-3-27b-it"]]
SPECS += [["params", "deepseek-v3"], ["params", "bert-base-uncased"], ["params", "no-such-model"]]


@pytest.mark.timeout(60)
def test_the_catalogue_commands_say_their_tables_in_the_language(capsys):
    """env, models, gpus and params: each row's label and words in the language, figures in its format;
    English as before (the detector sees it); `nodes` prints each node's pattern id, a name to type."""
    for argv in SPECS:
        code = 2 if argv[-1] == "no-such-model" else 0
        assert main(argv) == code, argv
        out = capsys.readouterr()
        english = out.out + out.err
        assert english_left(english, "nl") and english_left(english, "de"), argv
        for lang in ("nl", "de"):
            assert main(["--lang", lang, *argv]) == code, argv
            out = capsys.readouterr()
            said = out.out + out.err
            assert len(said.splitlines()) == len(english.splitlines()), (argv, said)
            assert not english_left(said, lang), (argv, said)


@pytest.mark.timeout(60)
def test_commands_with_their_own_lang_follow_aiworkbook_lang(tmp_path, capsys):
    """`check --passive` and `report` without their own --lang: aiworkbook --lang's language (the report
    else its profile's, English here); their own --lang still wins."""
    from profile_fakes import write_locked

    locked = write_locked(tmp_path)
    assert main(["--lang", "de", "check", str(locked), "--passive"]) == 1
    german = capsys.readouterr().out
    assert german.startswith("Hinweis: ") and not english_left(german, "de"), german
    assert main(["--lang", "de", "check", str(locked), "--passive", "--lang", "nl"]) == 1
    assert capsys.readouterr().out.startswith("opmerking: ")
    rerun = [
        "check",
        str(locked),
        "--results",
        str(tmp_path / "kv.json"),
        "--results",
        str(tmp_path / "kv.json"),
    ]
    assert main(rerun) == 2  # kv passes, a result no golden proof takes, roofline missing
    out = capsys.readouterr()
    assert english_left(out.out + out.err, "de") and "unusable input (exit 2)" in out.out
    assert main(["--lang", "de", *rerun]) == 2
    out = capsys.readouterr()
    assert not english_left(out.out + out.err, "de"), out.out + out.err
    again = ["lock", "--pattern", "llm-inference", "--workload", str(tmp_path / "chat.json"), "--result"]
    again += [
        str(tmp_path / "kv.json"),
        "--no-detect",
        "--node",
        "inference-4xl40s",
        "-o",
        str(tmp_path / "l.json"),
    ]
    assert main(again) == 0
    english = capsys.readouterr().out
    assert english.startswith("locked llm-inference profile: 1 workload(s)") and english_left(english, "de")
    assert main(["--lang", "de", *again]) == 0
    german = capsys.readouterr().out
    assert german.startswith("Profil llm-inference festgelegt: 1 Workload, 1 goldener Nachweis [kv] auf 1 x")
    assert "Treiber" in german and not english_left(german, "de"), german
    md = tmp_path / "r.md"
    assert main(["--lang", "nl", "report", str(locked), "--md", str(md)]) == 0
    dutch = capsys.readouterr().out + md.read_text(encoding="utf-8").splitlines()[0]
    assert "Vastgelegd" in dutch and not english_left(dutch, "nl"), dutch
    assert main(["report", str(locked), "--md", str(md)]) == 0  # the profile's language: English
    english = capsys.readouterr().out + md.read_text(encoding="utf-8").splitlines()[0]
    assert english == f"Markdown report -> {md}\n# Locked infrastructure profile"


@pytest.mark.timeout(60)
def test_monitor_says_its_table_and_summary_in_the_language(tmp_path, capsys):
    """The monitor's table (a GPU row throttled and one not, the host, the phase) in German, figures in
    its format; then a short run on this node (no GPU or the fake-free one CI has): the status, the
    summary and what was kept, all in Dutch. The same in English is what the detector sees English in."""
    from aiworkbook.telemetry.sample import Sample
    from aiworkbook.telemetry.table import render_table

    gpus = [
        {"index": 0, "util_gpu_pct": 87.0, "mem_used_bytes": 40e9, "mem_total_bytes": 80e9, "power_w": 412.0},
        {"index": 1, "throttle_reasons": [], "temp_gpu_c": 54.0, "sm_clock_mhz": 1980.0},
    ]
    host = {"cpu_pct": 12.5, "load_1m": 1.25, "ram_used_bytes": 3e9, "disk_read_bps": 2.5e6}
    sample = Sample(t=0.0, wall=0.0, gpus=gpus, host=host, phase="warm-up")
    english = render_table(sample, ["H100", "H100"])
    german = render_table(sample, ["H100", "H100"], lang="de")
    assert "throttle" in english and english_left(english, "de")
    assert "87%" in german and "2,5 MB/s" in german and not english_left(german, "de"), german
    argv = ["monitor", "--duration", "1", "--interval", "0.5", "--csv", str(tmp_path / "m.csv")]
    assert main(argv) == 0
    out = capsys.readouterr()
    assert "samples over" in out.out and english_left(out.out + out.err, "nl")
    assert main(["--lang", "nl", *argv]) == 0
    out = capsys.readouterr()
    assert "metingen in" in out.out and "bewaard: " in out.err
    assert not english_left(out.out + out.err, "nl"), out.out + out.err


@pytest.mark.parametrize("lang", ["nl", "de"])
def test_the_last_resort_lines_are_said_in_the_language(monkeypatch, capsys, lang):
    """A bug (Python's own words quoted), memory that ran out and a Ctrl-C: one line each, in the language;
    the same lines in English are seen as English."""
    import aiworkbook.specs as specs

    for exc, code in ((RuntimeError("boom happened"), 1), (MemoryError(), 1), (KeyboardInterrupt(), 130)):

        def fail(exc=exc):
            raise exc

        monkeypatch.setattr(specs, "list_gpus", fail)
        assert main(["gpus"]) == code
        english = capsys.readouterr().err
        assert main(["--lang", lang, "gpus"]) == code
        said = capsys.readouterr().err
        assert len(said.splitlines()) == 1 and english_left(english, lang), english
        assert not english_left(said, lang), said
    assert "«RuntimeError: boom happened»" not in english


@pytest.mark.timeout(60)
@pytest.mark.parametrize("lang", ["nl", "de"])
def test_a_proof_folder_refused_in_the_language(tmp_path, capsys, lang):
    """--dir that is a file, or under a file: refused (after the plan, the bar drawn and gone) in one
    last line in the language."""
    afile = tmp_path / "afile"
    afile.write_text("x", encoding="utf-8")
    for where in (afile, afile / "sub"):
        argv = ["prove", "host", "--dir", str(where), "--quick"]
        assert main(argv) == 2
        english = capsys.readouterr().err.split("\r")[-1]
        assert main(["--lang", lang, *argv]) == 2
        said = capsys.readouterr().err.split("\r")[-1]
        assert english_left(english, lang) and not english_left(said, lang), said
