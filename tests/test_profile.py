"""Locked profiles: round trip, every corrupt-file case, lock's validation, check's verdicts."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from profile_fakes import CHAT, FAKE, env, install_fake_proof, result

from aiworkbook.catalogue import languages
from aiworkbook.errors import SpecError
from aiworkbook.profile import KIND, SCHEMA_VERSION, Fingerprint, Tolerance, check, load_profile, lock
from aiworkbook.sizing import estimate
from aiworkbook.sizing.formula_data import with_stored_formulas
from aiworkbook.specs import get_node, load_model


@pytest.fixture
def prof():
    return lock(
        "llm-inference",
        node="inference-4xl40s",
        detected=None,
        workloads=[CHAT],
        results=[result("kv", 1.0e9), result("roofline", 8.0e11, "B/s", tolerance=0.25)],
        tolerances={"kv": 0.05, "roofline": (0.10, 0.30)},
        answers={"model_kind": "llm", "phase": "serving", "latency_slo_ms": 400},
        notes=["locked for the test"],
    )


@pytest.fixture
def saved(prof, tmp_path):
    path = tmp_path / "profile.json"
    prof.save(path)
    return path


# ---- round trip ------------------------------------------------------------------------------
def test_round_trip(prof, saved):
    back = load_profile(saved)
    assert back == prof
    doc = json.loads(saved.read_text())
    assert list(doc)[:2] == ["kind", "schema_version"]
    assert doc["kind"] == KIND and doc["schema_version"] == SCHEMA_VERSION
    assert back.created.tzinfo is not None and back.created.utcoffset() == dt.timedelta(0)
    assert not list(saved.parent.glob(".*.tmp")), "atomic write leaves no temp file"


def test_lock_contents(prof):
    assert prof.pattern == "llm-inference"
    assert prof.node.declared.name == "inference-4xl40s" and prof.node.detected is None
    fp = prof.node.fingerprint
    assert (fp.gpu, fp.driver, fp.cuda, fp.torch, fp.cpu) == (
        "NVIDIA L40S",
        "550.54.15",
        "12.4",
        "2.5.1",
        "AMD EPYC 9354",
    )
    # the estimate is sizing's, on the declared node's GPU
    want = estimate(load_model("llama-3-8b"), CHAT["workload"], node=get_node("inference-4xl40s")).to_dict()
    assert prof.estimates["chat"] == with_stored_formulas(want)  # and the formulas as messages
    assert prof.estimates["chat"]["formulas"] == want["formulas"]  # the English texts as size --json
    assert want["gpu"] == "L40S"
    assert [p.name for p in prof.proofs] == ["kv", "roofline"]
    # re-run inputs: the registry's declared inputs the result recorded, plus the device it ran on
    assert prof.proofs[0].inputs == {"model": "tiny-llama", "quick": True, "device": "cuda"}
    assert prof.tolerance("kv") == Tolerance(pass_within=0.05, fail_beyond=0.125)
    assert prof.tolerance("roofline") == Tolerance(pass_within=0.10, fail_beyond=0.30)
    assert prof.answers["latency_slo_ms"] == 400.0


def test_same_proof_twice_gets_numbered_names():
    p = lock("dl-training", detected=None, results=[result("kv"), result("kv", 2e9)])
    assert [g.name for g in p.proofs] == ["kv", "kv#2"]


def test_fingerprint_from_detected_node_without_results():
    node = get_node("gpu-training-8xh100").model_copy(
        update={"driver_version": "550", "torch_version": "2.5.1", "cuda_version": "12.4"}
    )
    p = lock("dl-training", detected=node)
    assert p.node.fingerprint == Fingerprint(
        gpu="H100-SXM", gpu_count=8, driver="550", cuda="12.4", torch="2.5.1", cpu=node.cpu_model
    )


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"results": [result("kv", verdict="interrupted")]}, "results"),
        ({"results": [result("kv", measured=None)]}, "results"),
        ({"results": ["/nonexistent/kv.json"]}, "path"),
        ({"results": [result("kv")], "tolerances": {"kv": -0.1}}, "tolerances.kv.pass_within"),
        ({"results": [result("kv")], "tolerances": {"kv": (0.3, 0.1)}}, "tolerances.kv.fail_beyond"),
        ({"results": [result("kv")], "inputs": {"vram": {}}}, "inputs"),
        (
            {"workloads": [{"model": "llama-3-8b", "workload": {"mode": "sing"}}]},
            "workloads[workload-1].workload.mode",
        ),
        ({"answers": {"model_kind": "cnn", "phase": "serving"}}, "model_kind"),
    ],
)
def test_lock_refuses_bad_input(kwargs, field):
    with pytest.raises(SpecError) as e:
        lock("llm-inference", detected=None, **kwargs)
    assert e.value.field == field


def test_lock_refuses_unknown_pattern_and_tolerance_for_no_proof():
    with pytest.raises(SpecError, match="classical-ml-cpu"):
        lock("quantum", detected=None)
    with pytest.raises(SpecError, match="'tolerances' = 'kv'.*the name of a golden proof"):
        lock("hybrid", detected=None, tolerances={"kv": 0.1})


# ---- corrupt files -----------------------------------------------------------------------------
def _edit(path, fn):
    doc = json.loads(path.read_text())
    fn(doc)
    path.write_text(json.dumps(doc))


def _set(key, value):
    def fn(doc):
        doc[key] = value

    return fn


@pytest.mark.parametrize(
    ("breakage", "field", "says"),
    [
        (lambda p: p.write_text(""), "json", "valid JSON"),
        (lambda p: p.write_text(p.read_text()[: len(p.read_text()) // 2]), "json", "valid JSON"),
        (lambda p: p.write_text(p.read_text()[:-3]), "json", "valid JSON"),
        (lambda p: p.write_bytes(b"\xff\xfe{}"), "path", "UTF-8"),
        (lambda p: p.write_text("[1, 2]"), "json", "JSON object"),
        (lambda p: _edit(p, _set("kind", "node-profile")), "kind", KIND),
        (lambda p: _edit(p, lambda d: d.pop("kind")), "kind", KIND),
        (lambda p: _edit(p, _set("schema_version", 99)), "schema_version", "newer aiworkbook"),
        (lambda p: _edit(p, _set("schema_version", "1")), "schema_version", "integer"),
        (lambda p: _edit(p, _set("schema_version", True)), "schema_version", "integer"),
        (lambda p: _edit(p, _set("schema_version", 0)), "schema_version", "integer"),
        (lambda p: _edit(p, _set("pattern", "quantum")), "pattern", "classical-ml-cpu"),
        (lambda p: _edit(p, _set("created", "yesterday")), "created", "datetime"),
        (lambda p: _edit(p, _set("created", "2026-01-01T10:00:00")), "created", "timezone"),
        (lambda p: _edit(p, _set("lang", "fr")), "lang", ", ".join(languages())),
        (lambda p: _edit(p, _set("surprise", 1)), "surprise", "Extra inputs"),
        (lambda p: _edit(p, lambda d: d.pop("node")), "node", "required"),
        (
            lambda p: _edit(p, lambda d: d["node"]["fingerprint"].update(gpu_count=-1)),
            "node.fingerprint.gpu_count",
            "greater than or equal to 0",
        ),
        (
            lambda p: _edit(p, lambda d: d["tolerances"]["kv"].update(pass_within=-1)),
            "tolerances.kv.pass_within",
            "greater than or equal to 0",
        ),
        (
            lambda p: _edit(p, lambda d: d["proofs"][0]["result"].pop("proof")),
            "proofs.0.result.proof",
            "Field required",
        ),
        (
            lambda p: _edit(p, lambda d: d["proofs"][0]["result"].update(verdict="great")),
            "proofs.0.result.verdict",
            "'pass'",
        ),
        (
            lambda p: _edit(p, lambda d: d["proofs"].append(d["proofs"][0])),
            "proofs.name",
            "no other golden proof",
        ),
        (
            lambda p: _edit(p, lambda d: d["workloads"][0]["workload"].update(batch=0)),
            "workloads.0.workload.batch",
            "an integer from 1",
        ),
        (
            lambda p: _edit(p, lambda d: d["estimates"].update(ghost=next(iter(d["estimates"].values())))),
            "estimates",
            "the name of a workload",
        ),
    ],
)
def test_every_corrupt_file_is_named(saved, breakage, field, says):
    breakage(saved)
    with pytest.raises(SpecError) as e:
        load_profile(saved)
    assert e.value.field == field, str(e.value)
    assert says in str(e.value)
    assert e.value.source == str(saved)


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(SpecError, match="locked profile"):
        load_profile(tmp_path / "nope.json")
    with pytest.raises(SpecError, match="not a folder"):
        load_profile(tmp_path)


# ---- check ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kv", "roof", "statuses", "code"),
    [
        (1.0e9, 8.0e11, ("pass", "pass"), 0),
        (1.04e9, 7.3e11, ("pass", "pass"), 0),  # kv within 5 %, roofline within 10 %
        (1.10e9, 8.0e11, ("drift", "pass"), 0),  # 10 %: beyond kv's 5 %, within its 12.5 %
        (1.0e9, 5.0e11, ("pass", "fail"), 1),  # bandwidth fell 37.5 %: a regression
        (0.5e9, 8.0e11, ("fail", "pass"), 1),
    ],
)
def test_check_planted_regressions(prof, kv, roof, statuses, code):
    rep = check(prof, [result("kv", kv), result("roofline", roof, "B/s")])
    assert tuple(c.status for c in rep.checks) == statuses
    assert rep.exit_code == code
    assert rep.checks[0].ratio == pytest.approx(kv / 1.0e9)
    assert rep.checks[1].ratio == pytest.approx(roof / 8.0e11)
    assert not rep.fingerprint_changes and not rep.warnings()


def test_strict_turns_drift_into_a_regression(prof):
    results = [result("kv", 1.10e9), result("roofline", 8.0e11, "B/s")]
    assert check(prof, results).exit_code == 0
    assert check(prof, results, strict=True).exit_code == 1


def test_missing_or_unusable_results(prof):
    rep = check(prof, [result("kv")])
    assert [c.status for c in rep.checks] == ["pass", "missing"] and rep.exit_code == 2
    assert check(prof, rerun=False).exit_code == 2
    rep = check(prof, [result("kv", None, verdict="interrupted"), result("roofline", 8e11, "B/s")])
    assert rep.checks[0].status == "error" and "interrupted" in rep.checks[0].message and rep.exit_code == 2
    rep = check(prof, [result("kv", None, verdict="does-not-fit"), result("roofline", 8e11, "B/s")])
    assert rep.checks[0].status == "fail" and "does-not-fit" in rep.checks[0].message and rep.exit_code == 1
    rep = check(prof, [result("kv", 1e9, unit="s"), result("roofline", 8e11, "B/s")])
    assert rep.checks[0].status == "fail" and "unit" in rep.checks[0].message
    rep = check(prof, [result("kv"), result("roofline", 8e11, "B/s"), result("vram")])
    assert rep.unmatched == ("vram",) and any("vram" in w for w in rep.warnings())
    assert rep.exit_code == 0


@pytest.mark.parametrize(
    ("changed", "part", "old", "new"),
    [
        ({"driver": "560.28.03"}, "driver", "550.54.15", "560.28.03"),
        ({"torch": "2.6.0"}, "torch", "2.5.1", "2.6.0"),
        ({"gpu": "NVIDIA H100 80GB HBM3"}, "gpu", "NVIDIA L40S", "NVIDIA H100 80GB HBM3"),
        ({"cpu": "Intel Xeon 8480+"}, "cpu", "AMD EPYC 9354", "Intel Xeon 8480+"),
    ],
)
def test_changed_fingerprint_says_which_part(prof, changed, part, old, new):
    rep = check(prof, [result("kv", environment=env(**changed)), result("roofline", 8e11, "B/s")])
    assert rep.fingerprint_changes == {part: (old, new)}
    assert rep.checks[0].changes == {part: (old, new)} and rep.checks[1].changes == {}
    (warning,) = rep.warnings()
    assert f"{part} {old} -> {new}" in warning
    assert rep.exit_code == 0  # a changed fingerprint warns; the figures decide the exit code


@pytest.mark.parametrize("lang", ["nl", "de"])
def test_check_lines_and_warnings_are_said_in_the_language(prof, lang):
    """Every status a check can give (pass, drift, fail, missing, error), its reasons (interrupted, no
    measurement, another unit, a changed fingerprint, new flags) and the warnings (a changed fingerprint,
    a result no golden proof takes): English as before, and no English left in the language."""
    from english_left import english_left

    from aiworkbook.message import words

    reports = [
        check(
            prof, [result("kv", environment=env(driver="560.28.03"), flags=["proxy-model"]), result("vram")]
        ),
        check(prof, [result("kv", 1.10e9), result("roofline", 4e11, "B/s")]),
        check(
            prof,
            [result("kv", None, verdict="interrupted"), result("roofline", None, verdict="does-not-fit")],
        ),
        check(prof, [result("kv", 1e9, unit="s")]),
    ]
    lines = [x for r in reports for x in [*(c.line() for c in r.checks), *r.warnings()]]
    statuses = {c.status for r in reports for c in r.checks}
    assert statuses == {"pass", "drift", "fail", "missing", "error"}
    english = "\n".join(lines)
    assert "driver 550.54.15 -> 560.28.03" in english and "new flags: proxy-model" in english
    assert english_left(english, lang)
    said = "\n".join(words(x, lang) for x in lines)
    assert "550.54.15 -> 560.28.03" in said and not english_left(said, lang), said


def test_check_reruns_golden_proofs_through_the_registry(monkeypatch):
    calls = install_fake_proof(monkeypatch, measured=100.0)
    from aiworkbook.proofs import registry

    golden = registry.run(FAKE, scale=2.0, device="cpu")
    p = lock("classical-ml-cpu", detected=None, results=[golden], tolerances={FAKE: 0.05})
    assert p.proofs[0].inputs == {"scale": 2.0, "device": "cpu"}
    calls.clear()
    rep = check(p)
    assert calls == [{"scale": 2.0, "device": "cpu"}]
    assert rep.checks[0].status == "pass" and rep.exit_code == 0
    # the node got 30 % slower: the same stored inputs, a regression
    calls2 = install_fake_proof(monkeypatch, measured=130.0)
    rep = check(p)
    assert calls2 == [{"scale": 2.0, "device": "cpu"}]
    assert rep.checks[0].status == "fail" and rep.checks[0].ratio == pytest.approx(1.3)
    assert rep.exit_code == 1


def test_check_uses_a_given_runner(prof):
    seen = []

    def runner(name, **inputs):
        seen.append((name, inputs))
        return result(name, 1e9 if name == "kv" else 8e11, "B" if name == "kv" else "B/s")

    rep = check(prof, runner=runner)
    assert [n for n, _ in seen] == ["kv", "roofline"]
    assert seen[0][1] == {"model": "tiny-llama", "quick": True, "device": "cuda"}
    assert rep.exit_code == 0


def test_a_golden_proof_that_cannot_run_here_is_an_error(prof):
    def runner(name, **inputs):
        if name == "kv":
            raise SpecError("model", inputs["model"], "a preset on this install")
        return result(name, 8e11, "B/s")

    rep = check(prof, runner=runner)
    assert [c.status for c in rep.checks] == ["error", "pass"]
    assert "could not run: SpecError" in rep.checks[0].message and rep.exit_code == 2


def test_check_passes_progress_and_cancel_to_the_registry(monkeypatch):
    import threading

    from aiworkbook.proofs import registry

    install_fake_proof(monkeypatch)
    p = lock("classical-ml-cpu", detected=None, results=[registry.run(FAKE, device="cpu")])
    steps = []
    assert check(p, progress=lambda done, total, msg: steps.append((done, total, msg))).exit_code == 0
    assert steps and steps[-1][:2] == (1, 1)
    cancel = threading.Event()
    cancel.set()
    rep = check(p, cancel=cancel)
    assert rep.checks[0].status == "error" and "interrupted" in rep.checks[0].message and rep.exit_code == 2
