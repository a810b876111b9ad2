"""Many nodes' `check --junit` files as one JUnit document with a test suite per node, so a CI system
or an admin sees the whole fleet's check at once; its exit code is the worst node's (0 pass,
1 regression, 2 unusable). A node whose file is missing, unreadable or not a check's JUnit counts as
unusable (2), and so does every node that was expected (`expect`) but sent nothing: a job whose task
died never passes as a smaller fleet."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from aiworkbook.errors import printable
from aiworkbook.message import Msg, quoted, words

#: a node's check JUnit is a few KiB (testsuites > testsuite > testcase > failure, properties >
#: property): a larger or deeper file is not one, and is that node's error, never the whole merge's
JUNIT_MAX_BYTES = 16 * 2**20
JUNIT_MAX_DEPTH = 16
COUNTS = ("tests", "failures", "errors", "skipped")


@dataclass(frozen=True)
class Merged:
    xml: str
    exit_code: int
    nodes: tuple[tuple[str, int], ...]  # (node, its exit code), in the order given


def _error_suite(node: str, message: str) -> ET.Element:
    suite = ET.Element("testsuite", {"name": node, "hostname": node, "tests": "1", "failures": "0"})
    suite.set("errors", "1")
    suite.set("skipped", "0")
    case = ET.SubElement(suite, "testcase", {"classname": "aiworkbook.check", "name": "node result"})
    ET.SubElement(case, "error", {"message": message, "type": "missing"}).text = message
    return suite


def _node_suites(node: str, path: Path, lang: str = "en") -> tuple[list[ET.Element], int]:
    """The test suites of one node's check JUnit, renamed for the node, and the node's exit code; a
    node's error said in `lang`."""
    try:
        root = _parse(path)
    except (OSError, ET.ParseError, ValueError) as exc:
        why = (
            exc.args[0]
            if isinstance(exc, ValueError) and exc.args and isinstance(exc.args[0], Msg)
            else quoted(exc)  # expat's or the OS's words, as they say them
        )
        said = words(Msg("junit.unreadable", node=node, why=why), lang)
        return [_error_suite(node, printable(said, 500))], 2
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    codes = [p.get("value") for s in suites for p in s.iter("property") if p.get("name") == "exit_code"]
    counted = all(_count(s.get(k, "0")) is not None for s in suites for k in COUNTS)
    if root.tag not in ("testsuites", "testsuite") or not suites or not codes or not counted:
        return [_error_suite(node, words(Msg("junit.not_check", node=node), lang))], 2
    worst = max((int(c) if c in ("0", "1", "2") else 2) for c in codes)
    for s in suites:
        s.set("name", f"{node}: {s.get('name', 'aiworkbook check')}")
        s.set("hostname", node)
    return suites, worst


def _parse(path: Path) -> ET.Element:
    """The file's root element, refused (ValueError) past JUNIT_MAX_BYTES or JUNIT_MAX_DEPTH before the
    tree is built whole: ElementTree writes and indents a tree recursively, so a node file nested
    thousands deep would end the whole merge in a RecursionError."""
    size = path.stat().st_size
    if size > JUNIT_MAX_BYTES:
        raise ValueError(Msg("junit.too_large", size=size, max=JUNIT_MAX_BYTES))
    depth = 0
    root: ET.Element | None = None
    with open(path, "rb") as fh:  # noqa: S314 (expat: no external entities, expansion bounded)
        for event, elem in ET.iterparse(fh, events=("start", "end")):
            depth += 1 if event == "start" else -1
            if depth > JUNIT_MAX_DEPTH:
                raise ValueError(Msg("junit.too_deep", max=JUNIT_MAX_DEPTH))
            if root is None:
                root = elem
    if root is None:
        raise ValueError(Msg("junit.no_element"))
    return root


def _count(value: str) -> int | None:
    """A JUnit count attribute as an integer >= 0 (at most 9 digits), else None."""
    return int(value) if value.isascii() and value.isdigit() and len(value) <= 9 else None


def merge(files: list[Path], expect: int | None = None, lang: str = "en") -> Merged:
    """One JUnit document from the nodes' files (the node is each file's name without .xml); what it
    says of a node that sent nothing usable, in `lang`."""
    root = ET.Element("testsuites", {"name": "aiworkbook check (fleet)"})
    nodes: list[tuple[str, int]] = []
    for f in files:
        node = printable(Path(f).stem, 200)
        suites, code = _node_suites(node, Path(f), lang)
        root.extend(suites)
        nodes.append((node, code))
    if expect is not None and len(files) < expect:
        gone = expect - len(files)
        missing = words(Msg("junit.missing_nodes"), lang)
        root.append(_error_suite(missing, words(Msg("junit.missing", gone=gone, expect=expect), lang)))
        nodes.append((missing, 2))
    if not nodes:
        none = words(Msg("junit.no_nodes"), lang)
        root.append(_error_suite(none, words(Msg("junit.none_sent"), lang)))
        nodes.append((none, 2))
    for key in COUNTS:
        root.set(key, str(sum(_count(s.get(key, "0")) or 0 for s in root.findall("testsuite"))))
    ET.indent(root)
    text = '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
    return Merged(text, max(c for _n, c in nodes), tuple(nodes))
