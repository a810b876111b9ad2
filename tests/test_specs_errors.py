"""Bad input: one clear error naming the file, the field and what is allowed; CLI exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from aiworkbook.errors import SpecError
from aiworkbook.specs import get_gpu, load_model, load_node_file, spec_from_config

GOOD = {
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_hidden_layers": 2,
    "vocab_size": 100,
}


def _write(tmp_path, cfg, name="config.json"):
    p = tmp_path / name
    p.write_text(cfg if isinstance(cfg, str) else json.dumps(cfg))
    return p


def test_unknown_model_type_names_field_and_families(tmp_path):
    p = _write(tmp_path, {**GOOD, "model_type": "t5"})
    with pytest.raises(SpecError) as e:
        load_model(p)
    msg = str(e.value)
    assert "model_type" in msg and "'t5'" in msg and "llama" in msg and str(p) in msg


@pytest.mark.parametrize(
    "field,value",
    [
        ("hidden_size", 0),
        ("num_hidden_layers", -2),
        ("vocab_size", "many"),
        ("num_attention_heads", 1.5),
        ("intermediate_size", None),
    ],
)
def test_non_positive_or_missing_field(tmp_path, field, value):
    cfg = {**GOOD, field: value}
    if value is None:
        del cfg[field]
    p = _write(tmp_path, cfg)
    with pytest.raises(SpecError) as e:
        load_model(tmp_path)  # a folder holding config.json
    assert e.value.field == field and str(p) in str(e.value) and "positive integer" in str(e.value)


def test_kv_heads_must_divide_heads():
    with pytest.raises(SpecError, match="num_key_value_heads"):
        spec_from_config({**GOOD, "num_key_value_heads": 3})


def test_malformed_json_names_line(tmp_path):
    p = _write(tmp_path, '{"model_type": "llama",\n "hidden_size": }')
    with pytest.raises(SpecError) as e:
        load_model(p)
    assert "line 2" in str(e.value) and str(p) in str(e.value)


def test_unknown_preset_lists_presets():
    with pytest.raises(SpecError) as e:
        load_model("llama-9-9000b")
    assert "llama-3-8b" in str(e.value) and e.value.field == "model"


def test_unknown_kv_dtype():
    with pytest.raises(SpecError, match="kv_dtype"):
        load_model("gpt2").kv_bytes_per_token("fp64")


def test_unknown_gpu_lists_catalogue():
    with pytest.raises(SpecError, match="H100-SXM"):
        get_gpu("Voodoo2")
    assert get_gpu("h100_sxm").name == "H100-SXM"


def test_bad_node_profile_names_field(tmp_path):
    p = _write(tmp_path, {"name": "x", "cpu_cores": 0, "ram_bytes": 1}, "node.json")
    with pytest.raises(SpecError) as e:
        load_node_file(p)
    assert e.value.field == "cpu_cores" and str(p) in str(e.value)


def test_cli_prints_error_without_traceback(tmp_path):
    p = _write(tmp_path, {**GOOD, "model_type": "t5"})
    r = subprocess.run(
        [sys.executable, "-m", "aiworkbook.cli", "params", str(p)], capture_output=True, text=True
    )
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and "model_type" in r.stderr and r.stderr.startswith("error:")


def _all_loaders():
    from aiworkbook.specs import load_gpu
    from aiworkbook.telemetry.replay import load_trace

    return (load_model, load_node_file, load_gpu, load_trace)


def test_every_loader_names_a_non_utf8_file(tmp_path):
    p = tmp_path / "config.json"
    p.write_bytes(b'{"model_type": "llama\xff"}\n')
    for load in _all_loaders():
        with pytest.raises(SpecError) as e:
            load(str(p))
        assert str(p) in str(e.value) and "UTF-8" in str(e.value), load.__name__


def test_bad_gpu_json_names_the_field(tmp_path):
    from aiworkbook.specs import load_gpu

    doc = get_gpu("L4").model_dump(mode="json")
    doc["memory_bandwidth_bps"] = -1
    p = tmp_path / "gpu.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(SpecError) as e:
        load_gpu(str(p))
    assert e.value.field == "memory_bandwidth_bps" and e.value.value == -1 and str(p) in str(e.value)
    doc["memory_bandwidth_bps"] = 1e11
    del doc["peak_flops_dense"]
    p.write_text(json.dumps({"details": {"calibrated_spec": doc}}))
    with pytest.raises(SpecError) as e:
        load_gpu(str(p))
    assert e.value.field == "details.calibrated_spec.peak_flops_dense" and e.value.value == "(missing)"


@pytest.mark.parametrize(
    "header,field",
    [
        ({"kind": "gpu-catalogue"}, "kind"),
        ({"schema_version": 2}, "schema_version"),
        ({"schema_version": True}, "schema_version"),
    ],
)
def test_node_file_header_is_checked(tmp_path, header, field):
    from aiworkbook.specs import get_node

    p = tmp_path / "n.json"
    get_node("cpu-highmem").save(p)
    assert load_node_file(p).name == "cpu-highmem"  # what save() writes reads back
    doc = json.loads(p.read_text())
    p.write_text(json.dumps({**doc, **header}))
    with pytest.raises(SpecError) as e:
        load_node_file(p)
    assert e.value.field == field and str(p) in str(e.value)


@pytest.mark.parametrize("value", ["x", -1, True, 2.5])
def test_qwen2_max_window_layers_is_validated(value):
    cfg = {**GOOD, "model_type": "qwen2", "use_sliding_window": True, "sliding_window": 4096}
    with pytest.raises(SpecError) as e:
        spec_from_config({**cfg, "max_window_layers": value})
    assert e.value.field == "max_window_layers"
    layers = cfg["num_hidden_layers"]
    # HF's rule: layer i slides when i >= max_window_layers (so a value >= layers: none slides)
    assert spec_from_config({**cfg, "max_window_layers": layers + 5}).sliding_window_layers == 0
    assert spec_from_config({**cfg, "max_window_layers": 1}).sliding_window_layers == layers - 1
