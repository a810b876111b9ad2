"""A profile sized from one's own model folder locks, checks and reports from any directory, after the
folder moved: it carries the config.json itself, with its sha256, and an edit after locking exits 2."""

from __future__ import annotations

import json
import shutil

import pytest
from profile_fakes import result

from aiworkbook.cli import main
from aiworkbook.errors import SpecError
from aiworkbook.paths import data_dir
from aiworkbook.profile import load_profile, lock
from aiworkbook.specs.catalog import config_sha256, hf_repo

SIZE = ["--mode", "infer", "--batch", "4", "--seq", "2048", "--new-tokens", "256", "--gpu", "L40S"]


def _model_folder(root, name="my-model"):
    """A local checkpoint folder: llama-3.2-1b's config without its repository name (so it is no preset)."""
    folder = root / name
    folder.mkdir(parents=True)
    cfg = json.loads((data_dir() / "models" / "llama-3.2-1b" / "config.json").read_text())
    cfg.pop("_name_or_path")
    (folder / "config.json").write_text(json.dumps(cfg, indent=4))
    return folder, cfg


def _run(capsys, *args):
    code = main([str(a) for a in args])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


@pytest.fixture
def locked(tmp_path, capsys, monkeypatch):
    """size ./my-model --json > w.json; lock --workload w.json; then the folder moves away."""
    work = tmp_path / "work"
    folder, cfg = _model_folder(work)
    monkeypatch.chdir(work)
    code, out, err = _run(capsys, "size", "./my-model", *SIZE, "--json")
    assert code == 0, err
    (work / "w.json").write_text(out)
    result("kv", 1.0e9).save(work / "kv.json")
    code, _, err = _run(
        capsys, "lock", "--pattern", "llm-inference", "--no-detect", "--workload", "w.json",
        "--result", "kv.json", "-o", "p.json",
    )  # fmt: skip
    assert code == 0, err
    moved = tmp_path / "moved"
    shutil.move(str(folder), moved)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return work / "p.json", work, folder, cfg


def test_size_json_embeds_the_config_with_its_hash(locked):
    _, work, folder, cfg = locked
    doc = json.loads((work / "w.json").read_text())
    assert doc["model"] == "my-model"
    assert doc["config"]["content"] == cfg and doc["config"]["path"] == str(folder.resolve())
    assert doc["config"]["sha256"] == config_sha256(cfg)


def test_lock_check_and_report_work_after_the_folder_moved(locked, capsys):
    profile, work, folder, cfg = locked
    assert not folder.exists()
    prof = load_profile(profile)
    (w,) = prof.workloads
    assert w.model == "my-model" and w.config is not None and w.config.content == cfg
    assert w.spec().num_layers == cfg["num_hidden_layers"]  # from the embedded config, no file read
    code, out, err = _run(capsys, "check", profile, "--results", work / "kv.json")
    assert code == 0 and "[pass] kv" in out, err
    code, _, err = _run(capsys, "report", profile, "--md", "r.md", "--html", "r.html")
    assert code == 0, err
    md = open("r.md").read()
    assert f"vllm serve {folder.resolve()}" in md  # the checkpoint folder, where vLLM loads it from
    assert "my-model" in open("r.html").read()


def test_a_config_edited_after_locking_exits_2_naming_the_field(locked, capsys):
    profile, work, _, _ = locked
    doc = json.loads(profile.read_text())
    doc["workloads"][0]["config"]["content"]["num_hidden_layers"] = 2
    profile.write_text(json.dumps(doc))
    for args in (["check", profile, "--results", work / "kv.json"], ["report", profile, "--md", "r.md"]):
        code, out, err = _run(capsys, *args)
        assert code == 2 and "workloads.0.config.sha256" in err and str(profile) in err, err
        assert "Traceback" not in err and out == ""


def test_a_non_preset_without_its_config_exits_2(locked, capsys):
    profile, work, _, _ = locked
    doc = json.loads(profile.read_text())
    del doc["workloads"][0]["config"]
    profile.write_text(json.dumps(doc))
    code, _, err = _run(capsys, "check", profile, "--results", work / "kv.json")
    assert code == 2 and "workloads.0.model" in err and "config.json embedded" in err


def test_a_consistent_but_unreadable_config_names_the_key(locked, capsys):
    profile, work, _, _ = locked
    doc = json.loads(profile.read_text())
    conf = doc["workloads"][0]["config"]
    conf["content"]["num_hidden_layers"] = -3
    conf["sha256"] = config_sha256(conf["content"])  # re-hashed: the content itself must still read
    profile.write_text(json.dumps(doc))
    code, _, err = _run(capsys, "report", profile, "--md", "r.md")
    assert code == 2 and "workloads.0.config.content.num_hidden_layers" in err, err


def test_lock_embeds_a_folder_named_in_a_workload(tmp_path, monkeypatch):
    folder, cfg = _model_folder(tmp_path)
    prof = lock(
        "llm-inference",
        detected=None,
        workloads=[{"model": str(folder), "workload": {"mode": "infer", "seq_len": 512}, "gpu": "L40S"}],
    )
    (w,) = prof.workloads
    assert w.config is not None and w.config.sha256 == config_sha256(cfg) and w.config.path == str(folder)
    shutil.rmtree(folder)
    prof.save(tmp_path / "p.json")
    assert load_profile(tmp_path / "p.json").estimates["workload-1"]["model"] == "my-model"


def test_lock_refuses_a_model_that_is_neither_preset_nor_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecError) as e:
        lock("llm-inference", detected=None, workloads=[{"model": "my-model", "workload": {"mode": "infer"}}])
    assert e.value.field == "workloads[workload-1].model"


def test_presets_serve_their_hugging_face_repository():
    assert hf_repo("llama-3-8b") == "meta-llama/Meta-Llama-3-8B"  # its _name_or_path
    assert hf_repo("qwen3-8b") == "Qwen/Qwen3-8B"  # the owner/name of its _source URL
    assert hf_repo("tiny-llama") is None  # proof-sized, no released checkpoint
    assert hf_repo("./not-a-preset") is None
