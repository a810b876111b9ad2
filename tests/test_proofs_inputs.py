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
