"""The specs commands: stable JSON keys other tools script against, human tables, --version."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from aiworkbook.cli import main
from aiworkbook.specs import list_gpus, list_nodes, list_presets, load_model


def run(capsys, *argv):
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_version(capsys):
    from aiworkbook import __version__

    rc, out, _ = run(capsys, "--version")
    assert rc == 0 and out.strip() == f"aiworkbook {__version__}"


@pytest.mark.parametrize("preset", ["llama-3-8b", "mixtral-8x7b", "qwen2.5-0.5b"])
def test_params_json_keys(capsys, preset):
    rc, out, _ = run(capsys, "params", preset, "--json", "--kv-dtype", "fp8")
    doc = json.loads(out)
    spec = load_model(preset)
    assert rc == 0
    for key in ("params", "params_non_embedding", "params_active", "kv_bytes_per_token"):
        assert isinstance(doc[key], int)
    assert doc["params"] == spec.params and doc["params_active"] == spec.params_active
    assert doc["kv_bytes_per_token"] == spec.kv_bytes_per_token("fp8")


def test_params_accepts_folder_and_file(capsys, tmp_path):
    cfg = {
        "model_type": "gpt2",
        "n_embd": 64,
        "n_head": 4,
        "n_layer": 2,
        "n_positions": 32,
        "vocab_size": 100,
    }
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    rc1, out1, _ = run(capsys, "params", str(tmp_path), "--json")
    rc2, out2, _ = run(capsys, "params", str(tmp_path / "config.json"), "--json")
    assert rc1 == rc2 == 0
    assert (
        json.loads(out1)["params"]
        == json.loads(out2)["params"]
        == 100 * 64 + 32 * 64 + 2 * (12 * 64 * 64 + 13 * 64) + 2 * 64
    )


def test_params_table_shows_exact_count(capsys):
    rc, out, _ = run(capsys, "params", "gpt2")
    assert rc == 0 and "124,439,808" in out and "tied" in out


def test_models_gpus_nodes_list_catalogues(capsys):
    rc, out, _ = run(capsys, "models", "--json")
    assert rc == 0 and [m["preset"] for m in json.loads(out)] == list_presets()
    rc, out, _ = run(capsys, "gpus")
    assert rc == 0 and all(g.name in out for g in list_gpus())
    rows = {line.split()[0]: line for line in out.splitlines()[1:]}
    for g in list_gpus():  # an unpublished TDP (GB200's) is a dash, never "0W"
        assert (f"{g.tdp_watts:.0f}W" if g.tdp_watts else "—") in rows[g.name] and " 0W" not in rows[g.name]
    rc, out, _ = run(capsys, "nodes", "--json")
    assert rc == 0 and {n["pattern"] for n in json.loads(out)} == {
        "classical-ml-cpu",
        "dl-training",
        "llm-inference",
        "hybrid",
    } == {n.pattern for n in list_nodes()}


def test_env_json_without_gpu(capsys):
    rc, out, _ = run(capsys, "env", "--json")
    doc = json.loads(out)
    assert rc == 0 and doc["detected"] is True and doc["ram_bytes"] > 0 and doc["cpu_cores"] >= 1
    if not doc["gpus_detected"]:
        assert doc["gpu_status"].startswith("no NVIDIA GPU found (")


def test_installed_console_script():
    r = subprocess.run(
        [sys.executable, "-m", "aiworkbook", "params", "tiny-llama", "--json"], capture_output=True, text=True
    )
    assert r.returncode == 0 and json.loads(r.stdout)["params"] == load_model("tiny-llama").params
