"""A check's result where a team looks: JUnit XML (one test case per golden proof, so any CI system
shows it) and a Prometheus textfile-collector file (node_exporter --collector.textfile.directory):
each verdict and ratio as a gauge, labelled by profile and proof.

JUnit: pass -> a passing case; drift -> passing with the drift in system-out (a failure under
--strict, as the exit code has it); fail -> <failure>; missing/error (nothing was checked) -> <error>;
a pass or drift that ran on the CPU only (flag cpu-fallback) -> <skipped> with the reason, and the
suite has a `device.<proof>` property per case (xunit2 allows no properties on a case). Textfile: every status gauge carries a `device` label (cuda, cpu, or
cpu-fallback for a GPU proof that ran on the CPU).
The shape follows the JUnit XML that Jenkins, GitLab and GitHub reporters read
(testsuites > testsuite > testcase > failure|error|system-out).
"""

from __future__ import annotations

import datetime as _dt
import math
import platform
import time
import xml.etree.ElementTree as ET
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric

from aiworkbook.errors import printable
from aiworkbook.profile.check import CPU_ONLY, CheckReport, ProofCheck
from aiworkbook.telemetry.exposition import label_value, text

STATUSES = ("pass", "drift", "fail", "missing", "error")


def _text(s: Any, limit: int = 2000) -> str:
    """One XML-safe line: control characters (not allowed in XML 1.0) written as escapes."""
    return printable(str(s), limit)


def _failing(c: ProofCheck, strict: bool) -> bool:
    return c.status == "fail" or (strict and c.status == "drift")


def _skipped(c: ProofCheck, strict: bool) -> bool:
    """A pass (or tolerated drift) measured on the CPU in place of a GPU: no verdict on the GPU."""
    return c.cpu_only and c.status in ("pass", "drift") and not _failing(c, strict)


def _device(c: ProofCheck) -> str:
    """Where the new result ran: cuda, cpu, cpu-fallback (a GPU proof on the CPU), or none."""
    return "cpu-fallback" if c.cpu_only else (c.device or "none")


def junit_xml(report: CheckReport, profile: str, *, now: _dt.datetime | None = None) -> str:
    """The check as JUnit XML: one <testcase> per golden proof, in the profile's order."""
    now = now or _dt.datetime.now(_dt.timezone.utc)
    checks = report.checks
    failures = sum(_failing(c, report.strict) for c in checks)
    errors = sum(c.status in ("missing", "error") for c in checks) + (0 if checks else 1)
    skipped = sum(_skipped(c, report.strict) for c in checks)
    counts = {
        "tests": str(len(checks) or 1),
        "failures": str(failures),
        "errors": str(errors),
        "skipped": str(skipped),
    }
    root = ET.Element("testsuites", {"name": "aiworkbook check", **counts})
    suite = ET.SubElement(
        root,
        "testsuite",
        {
            "name": _text(f"aiworkbook check {profile}", 300),
            **counts,
            "timestamp": now.strftime("%Y-%m-%dT%H:%M:%S"),
            "hostname": _text(platform.node() or "localhost", 200),
        },
    )
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", {"name": "exit_code", "value": str(report.exit_code)})
    for k, (old, new) in report.fingerprint_changes.items():
        ET.SubElement(props, "property", {"name": f"fingerprint.{k}", "value": _text(f"{old} -> {new}", 300)})
    for c in checks:  # the suite's properties (xunit2 has none per case): where each proof ran
        ET.SubElement(props, "property", {"name": _text(f"device.{c.name}", 300), "value": _device(c)})
    for c in checks:
        case = ET.SubElement(
            suite,
            "testcase",
            {"classname": _text(f"aiworkbook.check.{c.proof}", 300), "name": _text(c.name, 300)},
        )
        line = _text(c.line())
        if _skipped(c, report.strict):
            ET.SubElement(case, "skipped", {"message": _text(f"{CPU_ONLY} ({c.device or 'cpu'})")})
        elif _failing(c, report.strict):
            kind = "drift" if c.status == "drift" else "regression"
            ET.SubElement(case, "failure", {"message": line, "type": kind}).text = line
        elif c.status in ("missing", "error"):
            ET.SubElement(case, "error", {"message": line, "type": c.status}).text = line
        ET.SubElement(case, "system-out").text = line
    if not checks:
        case = ET.SubElement(suite, "testcase", {"classname": "aiworkbook.check", "name": "golden proofs"})
        msg = "the profile has no golden proofs to check"
        ET.SubElement(case, "error", {"message": msg, "type": "missing"}).text = msg
    warnings = report.warnings()
    if warnings:
        ET.SubElement(suite, "system-err").text = "\n".join(_text(w) for w in warnings)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def textfile_families(report: CheckReport, profile: str, *, now: float | None = None) -> list[Metric]:
    """The check's gauges: per golden proof a status gauge (1 for its status, 0 for the others), the
    now/locked ratio and the measured/estimate ratio where known, the tolerance; per profile the exit
    code and when the check ran."""
    p = label_value(profile)
    status = GaugeMetricFamily(
        "aiworkbook_check_status",
        "Golden proof status of the last check: 1 for the status labelled, 0 for the others; device: where it ran (cpu-fallback: a GPU proof run on the CPU, no GPU verdict).",
        labels=["profile", "name", "proof", "device", "status"],
    )
    for c in report.checks:
        base = [p, label_value(c.name), label_value(c.proof), label_value(_device(c))]
        for s in STATUSES:
            status.add_metric([*base, s], int(c.status == s))
    out: list[Metric] = [status]
    per_proof = (
        (
            "aiworkbook_check_ratio",
            "Measured now / locked figure of a golden proof (1 = unchanged).",
            "ratio",
        ),
        (
            "aiworkbook_check_estimate_ratio",
            "Measured / estimated figure of a golden proof's new result.",
            "estimate_ratio",
        ),
    )
    for metric, help_text, attr in per_proof:
        fam = GaugeMetricFamily(metric, help_text, labels=["profile", "name", "proof"])
        for c in report.checks:
            v = getattr(c, attr)
            if isinstance(v, int | float) and math.isfinite(v):
                fam.add_metric([p, label_value(c.name), label_value(c.proof)], float(v))
        out.append(fam)
    tol = GaugeMetricFamily(
        "aiworkbook_check_tolerance_fail_beyond",
        "Deviation of the ratio from 1 beyond which a proof fails.",
        labels=["profile", "name", "proof"],
    )
    for c in report.checks:
        tol.add_metric([p, label_value(c.name), label_value(c.proof)], float(c.tolerance.fail_beyond))
    code = GaugeMetricFamily(
        "aiworkbook_check_exit_code",
        "Exit code of the last check: 0 pass, 1 regression, 2 unusable input.",
        labels=["profile"],
    )
    code.add_metric([p], report.exit_code)
    ran = GaugeMetricFamily(
        "aiworkbook_check_last_run_timestamp_seconds",
        "When the last check ran (Unix time).",
        labels=["profile"],
    )
    ran.add_metric([p], time.time() if now is None else now)
    return [*out, tol, code, ran]


def prometheus_textfile(report: CheckReport, profile: str, *, now: float | None = None) -> str:
    """The check in Prometheus' text exposition format (written by prometheus_client), for
    node_exporter's textfile collector."""
    return text(textfile_families(report, profile, now=now))
