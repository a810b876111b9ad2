"""What comes from outside, read with a bound and without recursion: the nodes' JUnit files that
`check merge` joins, Prometheus answers (live and recorded), peers' and imported result files, and
every profile/result file read whole (persist.read_text). Each hostile input is one clear sentence
(or that node's error in the merge), never an internal error, a RecursionError or a read of the
whole of a 100 GB file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from aiworkbook.cli import main
from aiworkbook.errors import SpecError

pytestmark = pytest.mark.timeout(30)

JUNIT = (
    '<testsuites><testsuite name="check" tests="{tests}" failures="0" errors="0" skipped="0">'
    '<properties><property name="exit_code" value="0"/></properties>{inner}'
    '<testcase classname="aiworkbook.check" name="gpu"/></testsuite></testsuites>'
)


def _node(tmp_path: Path, name: str, tests: str = "1", inner: str = "") -> Path:
    p = tmp_path / f"{name}.xml"
    p.write_text(JUNIT.format(tests=tests, inner=inner))
    return p


def _sparse(path: Path, size: int) -> Path:
    """A file that says it is `size` bytes and holds none of them on disk (a hole)."""
    with open(path, "wb") as fh:
        fh.truncate(size)
    return path


def test_check_merge_makes_each_hostile_node_that_nodes_error_and_still_writes_the_merge(tmp_path, capsys):
    files = [
        _node(tmp_path, "good"),
        _node(tmp_path, "badcount", tests="abc"),  # was an internal error (int('abc')) for the whole merge
        _node(tmp_path, "hugecount", tests="9" * 5000),  # past int_max_str_digits
        _node(tmp_path, "deep", inner="<a>" * 100_000 + "</a>" * 100_000),  # was RecursionError: no merge
        _sparse(tmp_path / "huge.xml", 100 * 2**30),  # 100 GB declared by its size: refused unread
    ]
    out = tmp_path / "merged.xml"
    rc = main(["check", "merge", *map(str, files), "--out", str(out)])
    captured = capsys.readouterr()
    assert "internal error" not in captured.err and "Recursion" not in captured.err + captured.out
    assert rc == 2
    lines = captured.out.splitlines()
    assert lines == ["good: exit 0", "badcount: exit 2", "hugecount: exit 2", "deep: exit 2", "huge: exit 2"]
    merged = out.read_text()
    assert "nested more than 16 deep" in merged and "107,374,182,400 bytes, over 16,777,216" in merged
    assert "badcount: not the JUnit of an aiworkbook check" in merged
    assert "hugecount: not the JUnit of an aiworkbook check" in merged
    assert 'tests="5"' in merged.splitlines()[1]  # good's 1 and one error case per hostile node


def test_a_nested_or_non_json_prometheus_answer_is_refused_in_words_live_and_while_recording(tmp_path):
    from aiworkbook.telemetry.prometheus import PrometheusError, PrometheusReader, record_fleet

    for body in (b"[" * 200_000 + b"]" * 200_000, b"<html>not prometheus</html>", b"\xff\xfe"):
        reader = PrometheusReader("http://127.0.0.1:9", opener=lambda url, timeout, b=body: b)
        with pytest.raises(PrometheusError, match="not Prometheus's JSON"):
            reader.query("up")
        with pytest.raises(PrometheusError, match="not Prometheus's JSON"):  # was a raw ValueError
            record_fleet(reader, tmp_path / "rec.json", window_s=60)
        assert not (tmp_path / "rec.json").exists()


@pytest.mark.parametrize(
    "content",
    [
        b"[" * 200_000 + b"]" * 200_000,  # was RecursionError
        b'{"median_ttft_ms": ' + b"9" * 5000 + b"}",  # an integer past int_max_str_digits: was internal
        b"\xff\xfe not utf-8",  # was an internal UnicodeDecodeError
    ],
)
def test_an_imported_result_file_that_is_not_one_is_a_clear_refusal(tmp_path, content):
    from aiworkbook.serving.importers import import_results

    p = tmp_path / "peer.json"
    p.write_bytes(content)
    with pytest.raises(SpecError) as err:
        import_results(p)
    assert str(p) in str(err.value)


def test_an_imported_fifo_is_refused_not_waited_on(tmp_path):
    from aiworkbook.serving.importers import import_results

    fifo = tmp_path / "peer.json"
    os.mkfifo(fifo)  # nobody writes: a read would wait for ever
    with pytest.raises(SpecError, match="not a FIFO"):
        import_results(fifo)


def test_a_file_read_whole_is_refused_past_its_cap_before_any_of_it_is_read(tmp_path, monkeypatch):
    from aiworkbook import persist

    huge = _sparse(tmp_path / "profile.json", 100 * 2**30)
    read = []
    real_open = open
    monkeypatch.setattr("builtins.open", lambda *a, **k: read.append(a[0]) or real_open(*a, **k))
    with pytest.raises(SpecError) as err:
        persist.read_json(huge, what="an existing locked profile JSON")
    assert read == []  # refused from its size
    text = str(err.value)
    assert "107,374,182,400 bytes" in text and f"at most {persist.READ_MAX_BYTES:,} bytes" in text
    monkeypatch.undo()
    small = tmp_path / "ok.json"
    small.write_text(json.dumps({"a": 1}))
    assert persist.read_text(small, max_bytes=8) == '{"a": 1}'
    with pytest.raises(SpecError, match="at most 7 bytes"):
        persist.read_text(small, max_bytes=7)


def test_the_cli_says_a_huge_profile_in_one_line(tmp_path, capsys):
    huge = _sparse(tmp_path / "p.json", 100 * 2**30)
    assert main(["report", str(huge), "--md", str(tmp_path / "r.md")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "107,374,182,400 bytes" in err and "Traceback" not in err


@pytest.mark.parametrize("kind", ["fifo", "nested", "huge"])
def test_replica_time_refuses_a_coldstart_result_that_is_not_one_in_one_line(tmp_path, capsys, kind):
    """`replica-time --coldstart FILE` reads someone else's proof result: a FIFO was waited on for
    ever, a 100 GB file read whole."""
    p = tmp_path / "coldstart.json"
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "nested":
        p.write_bytes(b"[" * 200_000 + b"]" * 200_000)
    else:
        _sparse(p, 100 * 2**30)
    argv = [
        "replica-time",
        "--image-gb",
        "1",
        "--weights-gb",
        "1",
        "--pull-gb-s",
        "1",
        "--download-gb-s",
        "1",
    ]
    assert main([*argv, "--coldstart", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and str(p) in err and len(err.splitlines()) == 1, err
    assert "Traceback" not in err and "RecursionError" not in err


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[" * 200_000 + "]" * 200_000, "JSON nested less deeply"),  # was "RecursionError: ..."
        ('{"hidden_size": ' + "9" * 5000 + "}", "valid JSON of a sane size"),  # was "ValueError: ..."
    ],
)
def test_a_config_pasted_into_the_sizer_that_is_not_one_is_said_in_words(text, said):
    from aiworkbook.specs.reader import spec_from_text

    with pytest.raises(SpecError) as err:
        spec_from_text(text)
    assert err.value.field == "json" and said in str(err.value)
    assert "Traceback" not in str(err.value) and "Error" not in str(err.value)


def test_a_token_file_that_is_a_fifo_or_huge_is_refused_not_read(tmp_path, capsys):
    fifo = tmp_path / "token"
    os.mkfifo(fifo)  # nobody writes: reading it would wait for ever
    huge = _sparse(tmp_path / "big-token", 100 * 2**30)
    for f in (fifo, huge):
        assert main(["app", "sizing", "--no-browser", "--print-command", "--token-file", str(f)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: field 'token-file'") and len(err.splitlines()) == 1, err
