"""Hand-edited profiles are validated like configs: overflowing numbers, NaN/Infinity, wrong types,
negative sizes and string booleans exit 2 naming the file and the field; `check --json` never prints a
bare NaN; an error quotes at most 200 characters of a value."""

from __future__ import annotations

import json

import pytest
from profile_fakes import result, write_locked

from aiworkbook.cli import main
from aiworkbook.errors import MAX_QUOTE, SpecError, quote
from aiworkbook.profile import load_profile

BIG = "1" + "0" * 400  # an integer JSON takes and float() cannot


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    d = tmp_path_factory.mktemp("base")
    write_locked(d)
    return d


def _put(doc, path, value):
    for k in path[:-1]:
        doc = doc[k]
    doc[path[-1]] = value


CASES = [
    (("proofs", 0, "result", "measured"), "BIG", "proofs.0.result.measured", "2**63"),
    (("workloads", 0, "workload", "batch"), "BIG", "workloads.0.workload.batch", "2**63"),
    (("estimates", "chat", "memory", "total"), "lots", "estimates.chat.memory.total", "integer"),
    (("proofs", 0, "result", "measured"), float("nan"), "proofs.0.result.measured", "finite"),
    (("proofs", 1, "result", "predicted"), float("inf"), "proofs.1.result.predicted", "finite"),
    (("tolerances",), {"kv": {"pass_within": float("-inf")}}, "tolerances.kv.pass_within", "finite"),
    (("estimates", "chat", "memory", "weights"), -5, "estimates.chat.memory.weights", "greater than or equal"),
    (("proofs", 0, "result", "measured"), -1.0, "proofs.0.result.measured", "greater than or equal"),
    (("node", "fingerprint", "gpu_count"), "1", "node.fingerprint.gpu_count", "integer"),
    (("workloads", 0, "workload", "compile"), "false", "workloads.0.workload.compile", "boolean"),
    (("estimates", "chat", "fits", "fits"), "true", "estimates.chat.fits.fits", "boolean"),
    (("tolerances",), {"kv": {"pass_within": "0.1"}}, "tolerances.kv.pass_within", "number"),
    (("proofs", 0, "result", "samples"), "abc", "proofs.0.result.samples", "list"),
    (("proofs", 0, "result", "environment"), [], "proofs.0.result.environment", "dictionary"),
    (("proofs", 0, "result", "details"), {"sweep": [1]}, "proofs.0.result.details.sweep.0", "dictionary"),
    (("estimates", "chat", "gpu"), 5, "estimates.chat.gpu", "string"),
    (("estimates", "chat", "cost", "decode_usd_per_mtok"), "x", "estimates.chat.cost.decode_usd_per_mtok", "number"),
    (("proofs", 1, "name"), "kv", "proofs.name", "no other golden proof"),
    (("workloads", 0, "model"), "x" * 150, "workloads.0.model", "a preset"),
    (("workloads", 0, "name"), "x" * 5000, "workloads.0.name", "at most 200 characters"),
    (("estimates", "chat", "gpu"), "x" * 300_000, "estimates.chat.gpu", "at most 200 characters"),
    (("notes",), [{"deep": [[[[["x"] * 3]]]]}], "notes.0", "string"),
    (("workloads", 0, "workload", "seq_len"), None, "workloads.0.workload.seq_len", "integer"),
    (("estimates", "chat", "workload", "seq_len"), None, "estimates.chat.workload.seq_len", "integer"),
    (("workloads", 0, "workload", "context"), -1, "workloads.0.workload.context", "from 1"),
    (("answers",), {"model_kind": "llm", "phase": "serving", "multi_node": "true"}, "answers.multi_node", "boolean"),
    (("answers",), {"model_kind": 5, "phase": "serving"}, "answers.model_kind", "tabular, neural, llm"),
    (("estimates", "chat", "memory"), {"weights": 1}, "estimates.chat.memory.total", "total bytes"),
    (("node", "fingerprint", "gpu\r\x1b[2J"), "x", "node.fingerprint.gpu\\r\\x1b[2J", "Extra inputs"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("path", "value", "field", "says"), CASES, ids=[c[2] + ":" + str(c[1])[:12] for c in CASES]
)
def test_hand_edits_exit_2_naming_file_and_field(base, tmp_path, capsys, path, value, field, says):
    doc = json.loads((base / "p.json").read_text())
    _put(doc, path, value)
    text = json.dumps(doc).replace('"BIG"', BIG)
    prof = tmp_path / "edited.json"
    prof.write_text(text)
    runs = (
        [
            "check",
            str(prof),
            "--results",
            str(base / "kv.json"),
            "--results",
            str(base / "roof.json"),
            "--json",
        ],
        ["report", str(prof), "--md", str(tmp_path / "r.md"), "--html", str(tmp_path / "r.html")],
    )
    for argv in runs:
        code = main(argv)
        cap = capsys.readouterr()
        assert code == 2, (argv[0], cap.err)
        assert f"{prof}: field '{field}'" in cap.err and says in cap.err, cap.err
        assert len(cap.err) < 2048 and cap.err.count("\n") == 1 and cap.out == ""
    assert not (tmp_path / "r.md").exists() and not (tmp_path / "r.html").exists()


def test_an_integer_past_the_parsers_digit_limit(base, tmp_path, capsys):
    text = (base / "p.json").read_text().replace('"notes": []', '"notes": [' + "9" * 5000 + "]")
    assert "9999" in text
    (tmp_path / "p.json").write_text(text)
    assert main(["report", str(tmp_path / "p.json"), "--md", str(tmp_path / "r.md")]) == 2
    assert "valid JSON" in capsys.readouterr().err


def test_a_result_file_is_checked_as_strictly(base, tmp_path, capsys):
    doc = json.loads((base / "kv.json").read_text())
    doc["measured"] = float("nan")
    (tmp_path / "kv.json").write_text(json.dumps(doc))
    code = main(["check", str(base / "p.json"), "--results", str(tmp_path / "kv.json")])
    err = capsys.readouterr().err
    assert code == 2 and f"{tmp_path / 'kv.json'}: field 'measured'" in err, err


def _strict_json(text: str):
    def refuse(token):
        raise AssertionError(f"bare {token} in JSON output")

    return json.loads(text, parse_constant=refuse)


def test_check_json_never_prints_bare_nan(base, tmp_path, capsys):
    """A ratio that overflows (a tiny locked figure, a huge measured one) becomes null, said in
    non_finite, never `Infinity`."""
    doc = json.loads((base / "p.json").read_text())
    doc["proofs"][0]["result"]["measured"] = 1e-300
    (tmp_path / "p.json").write_text(json.dumps(doc))
    result("kv", 1e300).save(tmp_path / "kv.json")
    code = main(["check", str(tmp_path / "p.json"), "--results", str(tmp_path / "kv.json"), "--json"])
    out = capsys.readouterr().out
    rep = _strict_json(out)
    assert code == 2  # the roofline golden has no result: unusable; kv itself failed
    kv = rep["checks"][0]
    assert kv["status"] == "fail" and kv["ratio"] is None and any("ratio" in x for x in rep["non_finite"])


def test_errors_quote_at_most_200_characters():
    assert len(quote("x" * 10_000)) < MAX_QUOTE + 40 and "10,002 characters" in quote("x" * 10_000)
    assert quote(10**5000) == "<int>"  # past Python's digit limit for str(int)
    e = SpecError("f", {"k": "v" * 1_000_000}, "small")
    assert len(str(e)) < 400


def test_a_duplicate_name_in_a_large_profile_does_not_echo_it(base, tmp_path, capsys):
    doc = json.loads((base / "p.json").read_text())
    doc["proofs"][1]["name"] = "kv"
    doc["notes"] = ["n" * 1000] * 2000  # 2 MB of notes
    (tmp_path / "p.json").write_text(json.dumps(doc))
    assert main(["report", str(tmp_path / "p.json"), "--md", str(tmp_path / "r.md")]) == 2
    err = capsys.readouterr().err
    assert len(err) < 300 and "'proofs.name' = 'kv'" in err


def test_a_valid_profile_still_loads(base):
    prof = load_profile(base / "p.json")
    assert [p.name for p in prof.proofs] == ["kv", "roofline"]


def test_a_key_given_twice_is_refused(base, tmp_path, capsys):
    """json.loads keeps the last of two equal keys silently; a hand-edited profile gets told."""
    text = (base / "p.json").read_text().replace('"pattern": ', '"pattern": "hybrid", "pattern": ', 1)
    (tmp_path / "p.json").write_text(text)
    assert main(["check", str(tmp_path / "p.json"), "--results", str(base / "kv.json")]) == 2
    assert "key 'pattern' given twice" in capsys.readouterr().err


def test_a_stored_verdict_is_one_of_the_proofs_own_list():
    """The schema reads proofs.result.VERDICTS (serving's `error` included), and a validator's own
    words reach the user without pydantic's "Value error, " before them."""
    from aiworkbook.persist import validation_error
    from aiworkbook.profile.schema import ResultDoc
    from aiworkbook.proofs.result import VERDICTS

    for v in ("", *VERDICTS):
        assert ResultDoc.model_validate_json(json.dumps({"proof": "x", "device": "cpu", "verdict": v}))
    with pytest.raises(Exception) as info:
        ResultDoc.model_validate_json(json.dumps({"proof": "x", "device": "cpu", "verdict": "bogus"}))
    err = validation_error(info.value, prefix="result")
    assert err.field == "result.verdict" and err.allowed == "one of " + ", ".join(repr(x) for x in VERDICTS)


def test_an_nvml_value_not_read_is_a_valid_environment_entry():
    """NVML's "not available" (a GPU whose name or driver could not be read) is stored as {"na": why}:
    a real result carrying one must lock (it failed CI once, after a test left NVML half-answering)."""
    from aiworkbook.profile.schema import ResultDoc

    env = {"gpus": [{"name": {"na": "NVIDIA driver/NVML library not found"}, "driver": {"na": "x"}}]}
    assert ResultDoc.model_validate_json(json.dumps({"proof": "x", "device": "cpu", "environment": env}))
    from pydantic import ValidationError

    bad = {"gpus": [{"name": {"na": 5}}]}
    with pytest.raises(ValidationError):
        ResultDoc.model_validate_json(json.dumps({"proof": "x", "device": "cpu", "environment": bad}))
