"""The serving proof's settings: one frozen ServingSettings checked once from the inputs, which the
plan shows and the run's helpers read (no untyped dict passed along)."""

from __future__ import annotations

import dataclasses

import pytest

from aiworkbook.errors import SpecError
from aiworkbook.proofs import registry
from aiworkbook.serving.proof import ServingSettings


def test_settings_are_frozen_and_the_plan_shows_their_sizes():
    s = ServingSettings.from_inputs({"quick": True, "rate": 4, "model": "gpt2"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.requests = 3  # type: ignore[misc]
    assert (s.kind, s.loads, s.concurrency, s.rate) == ("rate", (4.0,), None, None)
    both = ServingSettings.from_inputs({"rate": 4, "concurrency": 2})  # a concurrency sweep at a fixed rate
    assert (both.kind, both.loads, both.rate) == ("concurrency", (2,), 4)
    sizes = registry.plan("serving", quick=True, rate=4, model="gpt2").sizes
    assert sizes == {"model": "gpt2", **s.sizes()}
    assert "backend" not in sizes and "api" not in sizes and sizes["loads"] == [4.0]


def test_the_deadline_is_set_only_when_the_run_starts_with_a_max_duration():
    s = ServingSettings.from_inputs({"max_duration_s": 5})
    assert s.deadline is None and not s.past_deadline()
    started = s.started()
    assert started.deadline is not None and started is not s and s.deadline is None
    assert ServingSettings.from_inputs({}).started().deadline is None


@pytest.mark.parametrize(
    ("inputs", "field"),
    [
        ({"sweep_kind": "poisson"}, "sweep_kind"),
        ({"sweep": [1, 0]}, "sweep"),
        ({"scheduler": "fifo"}, "scheduler"),
        ({"requests": -2}, "requests"),
        ({"request_timeout_s": float("inf")}, "request_timeout_s"),
    ],
)
def test_bad_settings_are_spec_errors_naming_the_field(inputs, field):
    with pytest.raises(SpecError) as err:
        ServingSettings.from_inputs(inputs)
    assert err.value.field == field


def test_an_option_not_given_is_its_declared_default_once():
    """`prove serving` passes None for every option not set: ServingInputs turns it into the declared
    default where the type has no None (no fallback of the proof's own), and keeps None where it means
    something (no rate, no SLO, no MODEL beside --target)."""
    from typing import get_args

    from aiworkbook.proofs.inputs import ServingInputs

    fields = ServingInputs.model_fields
    unset = dict.fromkeys(fields)
    m = ServingInputs.of(unset)
    for name, f in fields.items():
        takes_none = type(None) in get_args(f.annotation)
        assert getattr(m, name) == (None if takes_none else f.default), name
    assert ServingSettings.from_inputs(unset) == ServingSettings.from_inputs({})
    assert ServingSettings.from_inputs({"scheduler": None}).scheduler == fields["scheduler"].default
    assert ServingSettings.from_inputs({}).model == fields["model"].default
