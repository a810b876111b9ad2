"""Every JSON the CLI writes (a --json on stdout, a --json/-o/--record/--jsonl/--node-out file) read
back with a strict parser: json.loads with parse_constant raising, as jq, JavaScript's JSON.parse and
Go's encoding/json refuse Python's bare `NaN`/`Infinity`. Non-finite values that reach an output
(a fleet's NaN samples, a ratio that overflows, a proof's inf) are null there, and a `non_finite` flag
says which and what they were. The CLI is walked so a new JSON output without a case here fails."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest
import typer.main
from hostile_http import Handler, servers
from profile_fakes import result

from aiworkbook.cli import app, main
from aiworkbook.paths import data_dir
from aiworkbook.persist import dumps_json
from aiworkbook.proofs.result import ProofResult

pytestmark = pytest.mark.timeout(120)

TRACE = next((data_dir() / "traces").glob("*synthetic*.jsonl"))
GUIDELLM = Path(__file__).parent / "data" / "guidellm_report.json"
#: what a JSON output is called: these option names, or an option whose help says it writes JSON
JSON_OPTIONS = ("--json", "--jsonl", "--record", "--node-out")


def strict(text: str):
    def refuse(token: str):
        raise AssertionError(f"bare {token} in a JSON output")

    return json.loads(text, parse_constant=refuse)


def strict_file(path: Path) -> list:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [strict(line) for line in text.splitlines() if line.strip()]
    return [strict(text)]


def _json_outputs() -> set[tuple[str, str]]:
    """(command, option) of every option of the CLI that writes JSON."""
    found: set[tuple[str, str]] = set()

    def walk(cmd, path: list[str]) -> None:
        for name, sub in (getattr(cmd, "commands", None) or {}).items():
            # a hidden subcommand is its group's default (`check PROFILE`): named as the user types it
            walk(sub, path if getattr(sub, "hidden", False) else [*path, name])
        for p in getattr(cmd, "params", []):
            opts = [o for o in p.opts if o.startswith("--")]
            says = getattr(p, "help", "") or ""
            if set(opts) & set(JSON_OPTIONS) or ("JSON" in says and "write" in says.lower()):
                found.add((" ".join(path), opts[0]))

    walk(typer.main.get_command(app), [])
    return found


class _NaNFleet(Handler):
    """Prometheus answering every query with NaN, +Inf and one finite sample per GPU."""

    def do_GET(self):  # noqa: N802
        if "aiworkbook_telemetry_info" in self.path:
            return self._send(b'{"status":"success","data":{"resultType":"matrix","result":[]}}')
        now = time.time()
        values = [[now - 10, "NaN"], [now - 5, "+Inf"], [now - 1, "5"]]
        series = [{"metric": {"instance": "n1", "gpu": "0"}, "values": values}]
        body = {"status": "success", "data": {"resultType": "matrix", "result": series}}
        return self._send(json.dumps(body).encode())


@pytest.fixture
def prom():
    yield from servers(_NaNFleet)


@pytest.fixture
def d(tmp_path, capsys):
    result("kv", 1.0e9).save(tmp_path / "kv.json")
    args = ["lock", "--pattern", "llm-inference", "--node", "inference-4xl40s", "--no-detect"]
    assert main([*args, "--result", str(tmp_path / "kv.json"), "-o", str(tmp_path / "p.json")]) == 0
    # a locked figure of 1e-300 against a measured 1e300: the ratio overflows to inf
    doc = json.loads((tmp_path / "p.json").read_text())
    doc["proofs"][0]["result"]["measured"] = 1e-300
    (tmp_path / "tiny.json").write_text(json.dumps(doc))
    result("kv", 1e300).save(tmp_path / "huge.json")
    capsys.readouterr()
    return tmp_path


#: (command, option) -> argv; "{d}" is the case's folder, "{prom}" a Prometheus answering NaN/+Inf
CASES: dict[tuple[str, str], list[str]] = {
    ("env", "--json"): ["env", "--json"],
    ("models", "--json"): ["models", "--json"],
    ("gpus", "--json"): ["gpus", "--json"],
    ("nodes", "--json"): ["nodes", "--json"],
    ("params", "--json"): ["params", "tiny-llama", "--json"],
    ("size", "--json"): ["size", "tiny-llama", "--json"],
    ("fit", "--json"): ["fit", "tiny-llama", "--json"],
    ("preflight vllm", "--json"): ["preflight", "vllm", "tiny-llama", "--json"],
    ("lock", "--out"): ["lock", "--pattern", "llm-inference", "--no-detect", "-o", "{d}/out.json"],
    ("check", "--json"): ["check", "{d}/tiny.json", "--results", "{d}/huge.json", "--json"],
    ("profile k8s-job", "--json"): ["profile", "k8s-job", "{d}/p.json", "--json"],
    ("replica-time", "--json"): [
        "replica-time",
        "--image-gb",
        "5",
        "--model",
        "tiny-llama",
        "--pull-gb-s",
        "1",
        "--download-gb-s",
        "1",
        "--load-gb-s",
        "1",
        "--json",
    ],
    ("monitor", "--record"): [
        "monitor",
        "--replay",
        str(TRACE),
        "--record",
        "{d}/r.jsonl",
        "--quiet",
        "--duration",
        "0.2",
    ],
    ("monitor", "--jsonl"): [
        "monitor",
        "--replay",
        str(TRACE),
        "--jsonl",
        "{d}/l.jsonl",
        "--quiet",
        "--duration",
        "0.2",
    ],
    ("monitor", "--json"): ["monitor", "--prometheus", "{prom}", "--json"],
    ("prove serving", "--json"): ["prove", "serving", "--import", str(GUIDELLM), "--json", "{d}/s.json"],
}
#: every `prove X --json` writes through ProofResult.save (test_a_proof_result_with_non_finite_values...);
#: roofline's --node-out through NodeProfile.save (write_json): both are checked below without a run
THROUGH_SAVE = {(c, o) for c, o in _json_outputs() if c.startswith("prove ")} - set(CASES)


def test_every_json_output_of_the_cli_has_a_case():
    outputs = _json_outputs()
    assert ("prove vram", "--json") in outputs and ("monitor", "--record") in outputs  # the walk works
    assert outputs - set(CASES) - THROUGH_SAVE == set()
    assert set(CASES) <= outputs  # no case for an option that is gone


@pytest.mark.parametrize("case", sorted(CASES), ids=" ".join)
def test_every_json_the_cli_writes_is_strict_json(d, prom, capsys, case):
    argv = [
        a.replace("{d}", str(d)).replace("{prom}", prom("nan") if "{prom}" in a else "") for a in CASES[case]
    ]
    before = {p: p.stat().st_mtime_ns for p in d.iterdir()}
    rc = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    docs = []
    if "--json" in argv and not any(a.startswith(str(d)) for a in argv[argv.index("--json") + 1 :][:1]):
        assert out.strip(), (argv, rc, err)
        docs.append(strict(out))
    written = [
        p for p in d.iterdir() if p.suffix in (".json", ".jsonl") and before.get(p) != p.stat().st_mtime_ns
    ]
    for p in written:
        docs.extend(strict_file(p))
    assert docs, (argv, rc, err)  # the case wrote JSON (stdout or a file)
    if case == ("monitor", "--json"):  # the NaN/+Inf fleet was read, and its numbers are finite or null
        assert '"n1"' in out and "5.0" in out, out
    if case == ("check", "--json"):  # the ratio overflows
        assert rc in (0, 1, 2) and docs[0].get("non_finite"), docs[0]


def test_a_proof_result_with_non_finite_values_is_written_as_null_with_the_flag(tmp_path):
    r = ProofResult(
        proof="kv",
        device="cpu",
        inputs={"x": math.inf},
        measured=math.nan,
        unit="B",
        predicted=1.0,
        samples=[1.0, math.inf, -math.inf],
        details={"rows": [{"rate": math.nan}]},
    )
    r.save(tmp_path / "r.json")
    doc = strict_file(tmp_path / "r.json")[0]
    assert doc["measured"] is None and doc["samples"] == [1.0, None, None]
    assert {"measured: nan", "samples[1]: inf", "samples[2]: -inf", "inputs.x: inf"} <= set(doc["non_finite"])


def test_the_calibrated_node_of_roofline_writes_strict_json(tmp_path):
    from aiworkbook.specs.node import load_node_file

    node = load_node_file(data_dir() / "nodes" / "inference-4xl40s.json")
    node.save(tmp_path / "n.json")
    strict_file(tmp_path / "n.json")


def test_a_top_level_list_flags_each_object_with_its_own_non_finite():
    doc = strict(dumps_json([{"a": 1.0}, {"a": math.nan, "b": [math.inf]}, 3.0]))
    assert doc == [{"a": 1.0}, {"a": None, "b": [None], "non_finite": ["[1].a: nan", "[1].b[0]: inf"]}, 3.0]
