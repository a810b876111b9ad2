"""`aiworkbook lock` and `aiworkbook check` on files: exit 0 all pass, 1 regression, 2 unusable input;
a changed fingerprint warns and names the part."""

from __future__ import annotations

import json

import pytest
from profile_fakes import FAKE, env, install_fake_proof, result

from aiworkbook.cli import main
from aiworkbook.profile import load_profile


@pytest.fixture
def files(tmp_path, capsys):
    args = ["size", "llama-3-8b", "--mode", "infer", "--batch", "8", "--seq", "4096", "--new-tokens", "512"]
    assert main([*args, "--engine", "vllm", "--gpu", "L40S", "--price", "2.5", "--json"]) == 0
    (tmp_path / "chat.json").write_text(capsys.readouterr().out)
    result("kv", 1.0e9).save(tmp_path / "kv.json")
    result("roofline", 8.0e11, "B/s").save(tmp_path / "roof.json")
    return tmp_path


@pytest.fixture
def locked(files, capsys):
    out = files / "profile.json"
    code = main(
        [
            "lock",
            "--pattern",
            "llm-inference",
            "--node",
            "inference-4xl40s",
            "--no-detect",
            "--workload",
            str(files / "chat.json"),
            "--result",
            str(files / "kv.json"),
            "--result",
            str(files / "roof.json"),
            "--tolerance",
            "kv=0.05",
            "--tolerance",
            "roofline=0.1:0.3",
            "--answer",
            "model_kind=llm",
            "--answer",
            "phase=serving",
            "--note",
            "CI golden profile",
            "-o",
            str(out),
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert "2 golden proof(s) [kv, roofline]" in capsys.readouterr().out
    return out


def _check(capsys, *args):
    code = main(["check", *map(str, args)])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_lock_from_files(locked, files):
    p = load_profile(locked)
    assert p.pattern == "llm-inference" and p.notes == ["CI golden profile"]
    (w,) = p.workloads
    assert w.name == "chat" and w.model == "llama-3-8b" and w.gpu == "L40S"
    assert w.assumptions == {"price_per_gpu_hour": 2.5}  # the explicit --price, not every default
    assert p.estimates["chat"]["cost"]["price_per_gpu_hour"] == 2.5
    assert p.tolerance("roofline").fail_beyond == 0.3
    assert p.answers["phase"] == "serving"


def test_check_exit_codes(locked, files, capsys):
    ok = (files / "kv.json", files / "roof.json")
    code, out, err = _check(capsys, locked, "--results", ok[0], "--results", ok[1])
    assert code == 0 and "[pass] kv: ratio 1.000" in out and "exit 0" in out and err == ""
    result("kv", 1.5e9).save(files / "kv_slow.json")
    code, out, _ = _check(capsys, locked, "--results", files / "kv_slow.json", "--results", ok[1])
    assert code == 1 and "[fail] kv: ratio 1.500" in out and "regression" in out
    result("roofline", 6.5e11, "B/s").save(files / "roof_drift.json")
    code, out, _ = _check(capsys, locked, "--results", ok[0], "--results", files / "roof_drift.json")
    assert code == 0 and "[drift] roofline" in out
    code, _, _ = _check(
        capsys, locked, "--strict", "--results", ok[0], "--results", files / "roof_drift.json"
    )
    assert code == 1
    code, out, _ = _check(capsys, locked, "--results", ok[0])
    assert code == 2 and "[missing] roofline" in out


def test_check_warns_on_a_changed_fingerprint(locked, files, capsys):
    result("kv", 1.0e9, environment=env(driver="560.35.03", torch="2.6.0")).save(files / "kv_new.json")
    code, out, err = _check(
        capsys, locked, "--results", files / "kv_new.json", "--results", files / "roof.json"
    )
    assert code == 0
    assert "warning: fingerprint changed (driver, torch)" in err
    assert "driver 550.54.15 -> 560.35.03" in err and "torch 2.5.1 -> 2.6.0" in err


def test_check_json(locked, files, capsys):
    code, out, _ = _check(
        capsys, locked, "--json", "--results", files / "kv.json", "--results", files / "roof.json"
    )
    doc = json.loads(out)
    assert code == doc["exit_code"] == 0
    assert [c["status"] for c in doc["checks"]] == ["pass", "pass"]


@pytest.mark.parametrize(
    "breakage",
    [
        lambda p: p.write_text("{ truncated"),
        lambda p: p.write_text(json.dumps({**json.loads(p.read_text()), "schema_version": 7})),
        lambda p: p.write_text(json.dumps({**json.loads(p.read_text()), "pattern": "quantum"})),
        lambda p: p.unlink(),
    ],
)
def test_check_unusable_profile_exits_2(locked, files, capsys, breakage):
    breakage(locked)
    code, out, err = _check(capsys, locked, "--results", files / "kv.json")
    assert code == 2 and out == ""
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1


def test_check_unusable_results_exit_2(locked, files, capsys):
    (files / "bad.json").write_text("[]")
    code, _, err = _check(capsys, locked, "--results", files / "bad.json")
    assert code == 2 and "JSON object" in err


def test_check_reruns_through_the_registry(monkeypatch, tmp_path, capsys):
    from aiworkbook.proofs import registry

    install_fake_proof(monkeypatch, measured=10.0)
    golden = registry.run(FAKE, scale=1.0, device="cpu")
    golden.save(tmp_path / "fake.json")
    out = tmp_path / "p.json"
    args = ["lock", "--pattern", "classical-ml-cpu", "--no-detect", "--result", str(tmp_path / "fake.json")]
    assert main([*args, "-o", str(out)]) == 0
    calls = install_fake_proof(monkeypatch, measured=10.5)
    code, text, _ = _check(capsys, out)
    assert code == 0 and calls == [{"scale": 1.0, "device": "cpu"}] and "[pass]" in text
    install_fake_proof(monkeypatch, measured=20.0)
    assert _check(capsys, out)[0] == 1


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--pattern", "quantum"], "pattern"),
        (["--pattern", "hybrid", "--tolerance", "kv=fast"], "tolerance.kv"),
        (["--pattern", "hybrid", "--tolerance", "kv"], "KEY=VALUE"),
        (["--pattern", "hybrid", "--answer", "model_kind=cnn", "--answer", "phase=both"], "model_kind"),
        (["--pattern", "hybrid", "--lang", "fr"], "lang"),
    ],
)
def test_lock_bad_input_exits_2(tmp_path, capsys, extra, says):
    code = main(["lock", "--no-detect", *extra, "-o", str(tmp_path / "p.json")])
    err = capsys.readouterr().err
    assert code == 2 and says in err and not (tmp_path / "p.json").exists()


def test_lock_bad_workload_file(tmp_path, capsys):
    (tmp_path / "w.json").write_text(json.dumps({"model": "llama-3-8b"}))
    code = main(
        [
            "lock",
            "--no-detect",
            "--pattern",
            "hybrid",
            "--workload",
            str(tmp_path / "w.json"),
            "-o",
            str(tmp_path / "p.json"),
        ]
    )
    assert code == 2 and "model and workload" in capsys.readouterr().err


def test_lock_takes_the_recommended_pattern(files, capsys):
    out = files / "rec.json"
    args = [
        "lock",
        "--no-detect",
        "--answer",
        "model_kind=tabular",
        "--answer",
        "phase=training",
        "-o",
        str(out),
    ]
    assert main(args) == 0
    assert load_profile(out).pattern == "classical-ml-cpu"
    assert main(["lock", "--no-detect", "-o", str(files / "none.json")]) == 2
    assert "questionnaire answers" in capsys.readouterr().err
