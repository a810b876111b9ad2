"""`check --junit FILE` and `check --textfile FILE` (issue 26, item 3): one JUnit test case per golden
proof, read back by junitparser and checked for the shape CI reporters read; the verdicts and ratios
as gauges, read back by prometheus_client's own text parser."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import junitparser
import pytest
from profile_fakes import result, write_locked
from prometheus_client.parser import text_string_to_metric_families

from aiworkbook.cli import main


@pytest.fixture
def locked(tmp_path):
    return write_locked(tmp_path)


def _check(capsys, profile, *args):
    code = main(["check", str(profile), *map(str, args)])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def _junit_shape(path) -> ET.Element:
    """The structure JUnit reporters read: testsuites > testsuite(s) > testcase(s), each case with a
    name and classname and only failure/error/skipped/system-out/system-err children; counts agree."""
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    suites = list(root)
    assert suites and all(s.tag == "testsuite" for s in suites)
    for s in suites:
        cases = s.findall("testcase")
        assert {c.tag for c in s} <= {"properties", "testcase", "system-out", "system-err"}
        assert int(s.get("tests")) == len(cases)
        assert int(s.get("failures")) == sum(c.find("failure") is not None for c in cases)
        assert int(s.get("errors")) == sum(c.find("error") is not None for c in cases)
        for c in cases:
            assert c.get("name") and c.get("classname")
            assert {x.tag for x in c} <= {"failure", "error", "skipped", "system-out", "system-err"}
    assert int(root.get("tests")) == sum(int(s.get("tests")) for s in suites)
    return root


def test_junit_has_one_case_per_golden_proof_with_its_verdict(locked, capsys):
    d = locked.parent
    result("kv", 1.5e9).save(d / "kv_slow.json")  # 1.5x the locked figure: a regression
    out = d / "check.xml"
    code, _, err = _check(
        capsys, locked, "--results", d / "kv_slow.json", "--results", d / "roof.json", "--junit", out
    )
    assert code == 1 and f"JUnit XML -> {out}" in err
    _junit_shape(out)
    xml = junitparser.JUnitXml.fromfile(str(out))
    cases = {c.name: c for suite in xml for c in suite}
    assert set(cases) == {"kv", "roofline"}
    assert cases["roofline"].is_passed
    (fail,) = cases["kv"].result
    assert isinstance(fail, junitparser.Failure) and "ratio 1.500" in fail.message
    assert fail.type == "regression"


def test_junit_missing_is_an_error_and_strict_drift_a_failure(locked, capsys):
    d = locked.parent
    out = d / "c.xml"
    code, _, _ = _check(capsys, locked, "--results", d / "kv.json", "--junit", out)
    assert code == 2
    _junit_shape(out)
    cases = {c.name: c for s in junitparser.JUnitXml.fromfile(str(out)) for c in s}
    assert isinstance(cases["roofline"].result[0], junitparser.Error)
    result("roofline", 8.0e11 * 1.12, "B/s").save(d / "roof_drift.json")  # past the 5 % pass band
    for strict, failing in ((False, False), (True, True)):
        args = ["--results", d / "kv.json", "--results", d / "roof_drift.json", "--junit", out]
        code, stdout, _ = _check(capsys, locked, *args, *(["--strict"] if strict else []))
        assert "[drift] roofline" in stdout and code == (1 if strict else 0)
        case = next(c for s in junitparser.JUnitXml.fromfile(str(out)) for c in s if c.name == "roofline")
        assert (not case.is_passed) is failing


def test_textfile_carries_verdicts_and_ratios_as_gauges(locked, capsys):
    d = locked.parent
    result("kv", 1.5e9).save(d / "kv_slow.json")
    prom = d / "aiworkbook.prom"
    code, stdout, _ = _check(
        capsys,
        locked,
        "--results",
        d / "kv_slow.json",
        "--results",
        d / "roof.json",
        "--textfile",
        prom,
        "--json",
    )
    assert code == 1 and json.loads(stdout)["exit_code"] == 1  # --json's stdout stays one document
    families = {f.name: f for f in text_string_to_metric_families(prom.read_text())}
    assert all(families[n].type == "gauge" for n in families)
    status = {
        (s.labels["name"], s.labels["status"]): s.value for s in families["aiworkbook_check_status"].samples
    }
    assert status[("kv", "fail")] == 1 and status[("kv", "pass")] == 0
    assert (
        status[("roofline", "pass")] == 1 and sum(v for (n, _), v in status.items() if n == "roofline") == 1
    )
    ratio = {s.labels["name"]: s.value for s in families["aiworkbook_check_ratio"].samples}
    assert ratio == {"kv": pytest.approx(1.5), "roofline": pytest.approx(1.0)}
    assert all(s.labels["profile"] == "p" for s in families["aiworkbook_check_ratio"].samples)
    (exit_code,) = families["aiworkbook_check_exit_code"].samples
    assert exit_code.value == 1
    assert families["aiworkbook_check_last_run_timestamp_seconds"].samples[0].value > 1.7e9


def test_a_missing_proof_has_no_ratio_sample(locked, capsys):
    d = locked.parent
    prom = d / "x.prom"
    assert _check(capsys, locked, "--results", d / "kv.json", "--textfile", prom)[0] == 2
    families = {f.name: f for f in text_string_to_metric_families(prom.read_text())}
    assert [s.labels["name"] for s in families["aiworkbook_check_ratio"].samples] == ["kv"]
    status = {
        (s.labels["name"], s.labels["status"]): s.value for s in families["aiworkbook_check_status"].samples
    }
    assert status[("roofline", "missing")] == 1


@pytest.mark.parametrize("flag", ["--junit", "--textfile"])
def test_an_output_never_replaces_the_profile(locked, capsys, flag):
    before = locked.read_bytes()
    code, _, err = _check(capsys, locked, "--results", locked.parent / "kv.json", flag, locked)
    assert code == 2 and "profile" in err and locked.read_bytes() == before


def test_a_cpu_only_pass_is_marked_as_such_in_text_junit_and_textfile(locked, capsys):
    """Issue 33 item 7: a GPU proof that ran on the CPU (cpu-fallback) is no GPU pass anywhere."""
    d = locked.parent
    result("kv", 1.0e9, device="cpu", flags=["cpu-fallback"]).save(d / "kv_cpu.json")
    res = ["--results", d / "kv_cpu.json", "--results", d / "roof.json"]
    code, out, _ = _check(capsys, locked, *res)
    assert code == 0
    assert "[pass (CPU only: no GPU verdict)] kv" in out and "[pass] roofline" in out
    assert "all golden proofs pass (1 of 2 ran on the CPU only: no GPU verdict) (exit 0)" in out
    junit, prom = d / "check.xml", d / "check.prom"
    assert _check(capsys, locked, *res, "--junit", junit, "--textfile", prom)[0] == 0
    root = _junit_shape(junit)
    suite = root.find("testsuite")
    assert suite.get("skipped") == "1"
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert "CPU only" in cases["kv"].find("skipped").get("message")
    assert cases["roofline"].find("skipped") is None
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["device.kv"] == "cpu-fallback" and props["device.roofline"] == "cuda"
    parsed = junitparser.JUnitXml.fromfile(str(junit))
    assert sum(s.skipped for s in parsed) == 1
    families = {f.name: f for f in text_string_to_metric_families(prom.read_text())}
    devices = {s.labels["name"]: s.labels["device"] for s in families["aiworkbook_check_status"].samples}
    assert devices == {"kv": "cpu-fallback", "roofline": "cuda"}


def test_textfile_label_values_escape_cr_esc_and_nul(locked, capsys):
    """A profile named with a CR and an ESC: the file still parses with prometheus_client, read as a
    collector reads it (text mode: a raw CR would end the line), and holds no raw control character."""
    from prometheus_client.core import GaugeMetricFamily
    from prometheus_client.parser import text_fd_to_metric_families

    from aiworkbook.telemetry.exposition import label_value, text

    d = locked.parent
    odd = d / "p\r\x1b[2J.json"
    odd.write_bytes(locked.read_bytes())
    prom = d / "odd.prom"
    _check(capsys, odd, "--results", d / "kv.json", "--results", d / "roof.json", "--textfile", prom)
    raw = prom.read_bytes()
    assert b"\r" not in raw and b"\x1b" not in raw and b"\x00" not in raw
    with open(prom) as fd:  # universal newlines, as a reader of the textfile collector's folder
        families = {f.name: f for f in text_fd_to_metric_families(fd)}
    assert {s.labels["profile"] for s in families["aiworkbook_check_status"].samples} == {"p\\r\\x1b[2J"}
    written = GaugeMetricFamily("m", "a label with control characters", labels=["l"])
    written.add_metric([label_value('a\x00b\r\x1bc"\\\n')], 1)
    (fam,) = text_string_to_metric_families(text([written]))
    assert fam.samples[0].labels["l"] == 'a\\x00b\\r\\x1bc"\\\n'  # visible escapes; ", \\ and newline kept
