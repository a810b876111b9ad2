"""Each proof's inputs are declared once (aiworkbook/proofs/inputs.py): the registry refuses a name the
proof does not declare, the form's inputs are read from the declaration, and the proofs' own signatures
and the CLI's options agree with it (names and defaults)."""

from __future__ import annotations

import importlib
import inspect

import pytest

from aiworkbook.errors import SpecError
from aiworkbook.proofs import registry

#: functions that take a proof's inputs besides its plan and run (they forward **inputs to them)
FORWARDED = {
    "roofline": ["prove_roofline"],
    "vram": ["_prepare", "prove_vram"],
    "kv": ["_prepare", "prove_kv"],
    "checkpoint": ["measure"],
}
#: arguments the registry gives a proof itself, never inputs
NOT_INPUTS = {"control", "progress", "proof"}


@pytest.mark.parametrize("name,typo", [("dataload", "batchsize"), ("kv", "contxets"), ("host", "row")])
def test_a_misspelt_input_is_refused_naming_the_proofs_inputs(name, typo):
    for call in (registry.plan, registry.run):
        with pytest.raises(SpecError) as err:
            call(name, **{typo: 3})
        assert err.value.field == f"{name} input" and err.value.value == typo
        assert set(err.value.allowed.split(", ")) == set(registry.get(name).accepts)


def test_every_proof_declares_a_model_and_the_form_reads_it():
    for info in registry.proofs():
        assert info.model is not None, info.name
        assert [i.name for i in info.inputs] == [
            n for n, f in info.model.model_fields.items() if f.json_schema_extra["form"]
        ]
        assert set(i.name for i in info.inputs) <= set(info.accepts)
    device = {i.name: i for i in registry.get("kv").inputs}["device"]
    assert device.kind == "choice" and device.choices == ("auto", "cpu", "cuda") and device.default == "auto"
    rows = {i.name: i for i in registry.get("host").inputs}["rows"]
    assert rows.kind == "int" and rows.low == 100 and rows.default is None


@pytest.mark.parametrize("info", registry.proofs(), ids=lambda i: i.name)
def test_plan_and_run_take_the_proofs_model_and_the_forwarders_its_fields(info):
    """plan(inputs: TheModel) and run(inputs: TheModel, *, control): the model, nothing by keyword; the
    library entry points they forward to take declared names with the declared defaults."""
    mod = importlib.import_module(info.module)
    for fn in ("plan", "run"):
        first, *rest = inspect.signature(getattr(mod, fn)).parameters.values()
        assert first.annotation == info.model.__name__ and first.kind is first.POSITIONAL_OR_KEYWORD
        assert [(p.name, p.kind) for p in rest] == ([] if fn == "plan" else [("control", first.KEYWORD_ONLY)])
    declared = info.model.model_fields
    for fn in FORWARDED.get(info.name, ()):
        for n, p in inspect.signature(getattr(mod, fn)).parameters.items():
            assert p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL), (info.name, fn, n)
            if n in NOT_INPUTS:
                continue
            assert n in declared, (info.name, fn, n)
            if p.default is not p.empty:
                assert p.default == declared[n].default, (info.name, fn, n)


def test_the_registry_builds_the_model_once_or_takes_one_built():
    from aiworkbook.proofs.inputs import HostInputs, KvInputs

    by_name = registry.plan("host", quick=True, rows=1000)
    built = registry.plan("host", HostInputs(quick=True, rows=1000))
    assert by_name.sizes["rows"] == built.sizes["rows"] == 1000 and by_name.notes == built.notes
    with pytest.raises(TypeError, match="not both"):
        registry.plan("host", HostInputs(quick=True), rows=1000)
    with pytest.raises(SpecError) as err:  # another proof's model
        registry.plan("host", KvInputs())
    assert err.value.field == "host inputs" and err.value.allowed == "HostInputs"
    given = HostInputs.of({"rows": 1000, "quick": True})
    assert (
        given.given() == {"rows": 1000, "quick": True} and given.cols is None
    )  # the rest: declared defaults


def test_the_cli_options_are_declared_inputs_with_the_declared_defaults():
    """Each `prove NAME` option that reaches the proof under its own name is declared with the same default."""
    import typer.main

    from aiworkbook.cli import app
    from aiworkbook.cli.serve_cmds import _SERVING_INPUT_NAMES

    group = typer.main.get_command(app).commands["prove"]
    checked = 0
    for name, cmd in group.commands.items():
        declared = registry.get(name).model.model_fields
        for param in cmd.params:
            key = _SERVING_INPUT_NAMES.get(param.name, param.name) if name == "serving" else param.name
            if key in declared and param.default is not None:
                assert param.default == declared[key].default, (name, param.name)
                checked += 1
    assert checked > 30  # every command's options were seen


# ---- values: each model states the types and bounds the proof takes, and refuses the rest ----

#: per proof, a wrong-typed or out-of-range value through `registry.plan`, and what the refusal says
#: the field allows (from the model's declaration)
REFUSED = {
    "roofline": ({"threads": 0}, "an integer >= 1"),
    "vram": ({"batch": 2.5}, "an integer >= 1"),
    "kv": ({"new_tokens": "8"}, "an integer >= 1"),
    "serving": ({"sweep": [1, "x"]}, "a list of numbers"),
    "checkpoint": ({"gpus": 0}, "an integer >= 1"),
    "restore": ({"size_mb": "big"}, "a number >= 0.001"),
    "coldstart": ({"trials": 1001}, "an integer from 1 to 1,000"),
    "dataload": ({"prefetch": 2.5}, "integers >= 1, comma-separated"),
    "host": ({"cols": 2}, "an integer >= 3"),
    "allreduce": ({"ranks": True}, "an integer >= 1"),
}


def test_every_proof_has_a_refusal_case():
    assert set(REFUSED) == set(registry.names())


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_wrong_value_is_refused_naming_the_field_and_what_it_allows(name):
    given, allowed = REFUSED[name]
    ((field, value),) = given.items()
    with pytest.raises(SpecError) as err:
        registry.plan(name, **given)
    assert err.value.field == field and allowed in str(err.value)
    dutch = err.value.allowed.render("nl")  # a message: said in the reader's language
    assert dutch != str(err.value.allowed) and "getal" in dutch


def test_numbers_stay_as_given_and_unions_take_each_form():
    from aiworkbook.proofs import inputs as I

    assert I.CheckpointInputs.of({"size_mb": 4}).size_mb == 4 and isinstance(
        I.CheckpointInputs.of({"size_mb": 4}).size_mb, int
    )  # a float field would record 4.0
    assert I.ServingInputs.of({"sweep": [0.5, 2]}).sweep == [0.5, 2]  # a rate sweep
    for workers in ("0,2", 2, [0, 2]):
        assert I.DataloadInputs.of({"workers": workers}).workers == workers


#: per `prove` command, arguments that refuse one value, the field the error names and what it allows
CLI_REFUSED = {
    "roofline": (["--threads", "0"], "threads", "an integer >= 1"),
    "vram": (["tiny-llama", "--batch", "0"], "batch", "an integer >= 1"),
    "kv": (["tiny-llama", "--device", "gpu"], "device", "auto, cpu, cuda"),
    "serving": (["--concurrency", "0"], "concurrency", "an integer >= 1"),
    "checkpoint": (["--dir", "{dir}", "--gpus", "0"], "gpus", "an integer >= 1"),
    "restore": (["--dir", "{dir}", "--size-mb", "0"], "size_mb", "a number >= 0.001"),
    "coldstart": (["--dir", "{dir}", "--trials", "2000"], "trials", "an integer from 1 to 1,000"),
    "dataload": (["--dir", "{dir}", "--step-ms", "1e9"], "step_ms", "a number from 0 to 60000"),
    "host": (["--dir", "{dir}", "--cols", "2"], "cols", "an integer >= 3"),
    "allreduce": (["--ranks", "0"], "ranks", "an integer >= 1"),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", sorted(CLI_REFUSED))
def test_prove_refuses_a_wrong_value_with_exit_2(name, tmp_path, capsys):
    from aiworkbook.cli import main

    args, field, allowed = CLI_REFUSED[name]
    assert main(["prove", name, *(a.format(dir=tmp_path) for a in args)]) == 2
    err = capsys.readouterr().err
    assert f"field '{field}'" in err and allowed in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # refused before anything was written


@pytest.mark.timeout(60)
def test_prove_says_the_refusal_in_the_cli_language(tmp_path, capsys):
    from aiworkbook.cli import main

    assert main(["--lang", "nl", "prove", "host", "--dir", str(tmp_path), "--cols", "2"]) == 2
    err = capsys.readouterr().err
    assert "cols" in err and "een geheel getal >= 3" in err


#: what each `prove` command needs to start (its required arguments)
CLI_REQUIRED = {"vram": ["tiny-llama"], "kv": ["tiny-llama"]}
CLI_DIR = {"checkpoint", "restore", "coldstart", "dataload", "host"}


class _Seen(Exception):
    pass


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_the_values_prove_passes_by_default_validate(name, tmp_path, monkeypatch):
    """The CLI's defaults and the model's agree: what `prove NAME` passes untouched builds the model."""
    from aiworkbook.cli import main

    built = {}

    def seen(proof, given=None, /, *, progress=None, cancel=None, **inputs):
        built[proof] = registry.get(proof).build(given, inputs)  # a SpecError here fails the test
        raise _Seen

    monkeypatch.setattr(registry, "plan", seen)
    monkeypatch.setattr(registry, "run", seen)
    args = CLI_REQUIRED.get(name, []) + (["--dir", str(tmp_path)] if name in CLI_DIR else [])
    main(["prove", name, *args])  # stops at the first call into the registry (an internal error, 1)
    assert isinstance(built.get(name), registry.get(name).input_model)


def test_every_declared_input_says_what_it_is_and_its_default_validates():
    from typing import Any

    for info in registry.proofs():
        model = info.input_model
        for field, f in model.model_fields.items():
            assert f.description, (info.name, field)
            assert f.annotation is not Any, (info.name, field)
            if f.default is not None:
                model.of({field: f.default})  # a default the model itself would refuse fails here


def test_a_model_built_by_keyword_refuses_as_the_registry_does():
    from aiworkbook.proofs.inputs import ColdstartInputs, HostInputs

    with pytest.raises(SpecError, match=r"field 'rows' = 10 .*an integer >= 100"):
        HostInputs(rows=10)
    with pytest.raises(SpecError, match=r"field 'dtype' = 'int8' .*fp32, bf16, fp16"):
        ColdstartInputs(dtype="int8")  # the proof's own check, now the model's: the same words


def test_a_python_caller_may_give_a_list_as_a_tuple():
    from aiworkbook.proofs import inputs as I

    assert I.KvInputs.of({"batches": (1, 2)}).batches == [1, 2]
    assert I.ServingInputs.of({"sweep": (0.5, 2)}).sweep == [0.5, 2]
    with pytest.raises(SpecError, match="field 'batches' = '1'"):
        I.KvInputs.of({"batches": ["1"]})  # each item strictly an int


def test_the_gpu_proof_scripts_steps_build_their_models():
    """benchmarks/gpu_proof.py runs on the GPU machine only: its inputs must validate here first."""
    import importlib.util
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_proof.py"
    spec = importlib.util.spec_from_file_location("gpu_proof", script)
    gp = importlib.util.module_from_spec(spec)
    sys.modules["gpu_proof"] = gp  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(gp)
    for step in gp.PLAN:
        takes = registry.get(step.proof).accepts
        for dry in (False, True):
            kw = dict(step.dry if dry else step.gpu)
            model = gp._model(step, dry)
            kw.update({"model": model} if model is not None else {})
            kw.update({k: v for k, v in (("device", "cuda"), ("dir", "/nonexistent")) if k in takes})
            assert isinstance(registry.get(step.proof).build(None, kw), registry.get(step.proof).input_model)
