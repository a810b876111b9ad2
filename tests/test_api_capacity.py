"""capacity.report, NodeProfile.pool, estimate(device=None), immutable and hashable catalogue values,
and the CLI printers over them (`fit` with a GPU file or --node, no Python reprs, no sci notation)."""

import json

import pytest

from aiworkbook.cli import main
from aiworkbook.errors import SpecError
from aiworkbook.sizing import Workload, capacity, estimate
from aiworkbook.sizing.sections import CapacityReport
from aiworkbook.specs import get_gpu, get_node, list_gpus, load_model

L8 = load_model("llama-3-8b")


def test_report_answers_what_fit_prints():
    w = Workload(mode="infer", concurrency=8, seq_len=4096)
    rep = capacity.report(L8, w, "H100-SXM")
    assert isinstance(rep, CapacityReport)
    assert rep.max_concurrency == capacity.max_concurrency(L8, w, get_gpu("H100-SXM"))
    assert rep.fits is capacity.fits(L8, w, "H100-SXM")["fits"]
    assert rep.cheapest_gpu is not None and rep["cheapest_gpu"]["gpu"] == rep.cheapest_gpu.gpu
    train = capacity.report(L8, Workload(), "H100-SXM")
    assert train.max_concurrency is None and "max_concurrency" not in train.to_dict()


def test_report_takes_a_node_and_a_gpu_file(tmp_path):
    node = get_node("gpu-training-8xh100")
    rep = capacity.report(L8, Workload(), node)
    assert rep.gpu == node.gpu_spec().name
    measured = get_gpu("H100-SXM").calibrated(memory_bandwidth_bps=1e12)
    path = tmp_path / "gpu.json"
    path.write_text(measured.model_dump_json())
    assert capacity.report(L8, Workload(mode="infer"), str(path)).gpu == "H100-SXM (measured)"
    with pytest.raises(SpecError) as e:
        capacity.report(L8, Workload(), get_node("cpu-highmem"))
    assert e.value.field == "gpu"


def test_fit_cli_takes_node_and_gpu_file_and_prints_for_people(tmp_path, capsys):
    assert main(["fit", "llama-3-8b", "--node", "gpu-training-8xh100", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["gpu"] == get_node("gpu-training-8xh100").gpu_spec().name
    path = tmp_path / "g.json"
    path.write_text(get_gpu("A100-SXM-80GB").calibrated(memory_bandwidth_bps=1.5e12).model_dump_json())
    assert main(["fit", "llama-3-8b", "--mode", "infer", "--gpu", str(path)]) == 0
    out = capsys.readouterr().out
    assert "A100-SXM-80GB (measured)" in out
    assert "{" not in out and "True" not in out and "False" not in out  # no Python reprs
    assert "max_context" in out and "tokens" in out
    assert main(["fit", "llama-3-8b", "--node", "hybrid-pools"]) == 2
    assert "'pool'" in capsys.readouterr().err


def test_size_prints_plain_numbers_and_seconds_in_seconds(capsys):
    argv = ["size", "llama-3-8b", "--gpu", "H100-SXM", "--train-tokens", "1e12", "--dp", "8", "--zero", "3"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "e+0" not in out  # 1,000-9,999 in scientific notation was the friction
    assert "GPUs in all: 8" in out
    line = next(ln for ln in out.splitlines() if "young_interval_s" in ln)
    assert line.split()[1].replace(",", "").replace(".", "").isdigit() and " s " in line


def test_gpus_is_dp_and_default_recipe_follows_precision(capsys):
    assert main(["size", "llama-3-8b", "--gpus", "4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["workload"]["dp"] == 4
    assert main(["size", "llama-3-8b", "--precision", "fp32", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["workload"]["recipe"] == "fp32-adamw"
    assert Workload(precision="fp32").recipe == "fp32-adamw" and Workload().recipe == "megatron-bf16"
    with pytest.raises(SpecError):  # a named 16-bit recipe at fp32 is still refused
        Workload(precision="fp32", recipe="megatron-bf16")


def test_cpu_node_is_sized_as_the_cpu():
    assert estimate(L8, Workload(), node=get_node("cpu-highmem")).device == "cpu"
    assert estimate(L8, Workload(), node=get_node("gpu-training-8xh100")).device == "cuda"
    assert estimate(L8, Workload(), gpu="H100-SXM").device == "cuda"


def test_pool_picks_by_name_or_first_word():
    node = get_node("hybrid-pools")
    assert node.pool("train-pool").name.startswith("train-pool")
    assert node.pool("serve-pool (4x 2xH100 PCIe)").name.startswith("serve-pool")
    with pytest.raises(SpecError):
        node.pool("nosuch")
    with pytest.raises(SpecError):
        node.pool(None)
    assert node.pool(None, gpu_given=True) is node


def test_catalogue_values_are_immutable_and_hashable():
    g = get_gpu("H100-SXM")
    g.peak_flops_dense["bf16"] = 1.0  # a returned copy: the catalogue keeps its own
    assert get_gpu("H100-SXM").peak_flops_dense["bf16"] > 1e14
    assert hash(get_gpu("H100-SXM")) == hash(list_gpus()[[x.name for x in list_gpus()].index("H100-SXM")])
    assert {get_gpu("H100-SXM"), get_gpu("H100-SXM")} == {get_gpu("H100-SXM")}
    assert hash(get_node("hybrid-pools")) == hash(get_node("hybrid-pools"))
    assert hash(L8) == hash(load_model("llama-3-8b"))
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        g.name = "x"  # frozen


def test_calibrated_spec_marks_each_figure_measured_or_datasheet():
    h100 = get_gpu("H100-SXM")
    cal = h100.calibrated(memory_bandwidth_bps=3.0e12, flops={"bf16": 7.0e14})
    assert cal.measured and cal.figure_source("memory_bandwidth_bps") == "measured"
    assert cal.figure_source("bf16") == "measured" and cal.figure_source("fp32") == "datasheet"
    assert cal.peak_flops("fp32") == h100.peak_flops("fp32")  # kept, and now said to be the datasheet's
    assert cal.sources()["peak_flops_dense.fp8"] == "datasheet"
    assert h100.sources()["memory_bandwidth_bps"] == "datasheet"
    again = type(cal).model_validate_json(cal.model_dump_json())  # survives a node file
    assert again.measured_figures == cal.measured_figures


def test_fp8_weights_on_a_gpu_without_fp8_name_the_weights_dtype(capsys):
    argv = ["size", "llama-3-8b", "--mode", "infer", "--weights-dtype", "fp8", "--gpu", "A100-SXM-80GB"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "'weights_dtype'" in err and "'dtype'" not in err


def test_size_says_why_a_training_total_is_below_its_components(capsys):
    assert main(["size", "llama-3-8b", "--recipe", "pure-bf16", "--gpu", "H100-SXM"]) == 0
    total = next(ln for ln in capsys.readouterr().out.splitlines() if ln.strip().startswith("total "))
    assert "the step's peak" in total and "not alive then" in total  # the stack is not the total
    assert main(["size", "llama-3-8b", "--mode", "infer", "--gpu", "H100-SXM"]) == 0
    total = next(ln for ln in capsys.readouterr().out.splitlines() if ln.strip().startswith("total "))
    assert total.split()[-1] == "GiB"  # inference: the components add up, nothing to explain
