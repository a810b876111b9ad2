"""--engine-version takes the vLLM release a user runs (0.6.4 ... 0.19.x) and applies the arithmetic that
release uses; an unknown release is refused naming the known ones (issue 32, item 3)."""

from __future__ import annotations

import json

import pytest

from aiworkbook.cli import main
from aiworkbook.errors import SpecError
from aiworkbook.sizing.vllm import ENGINES, VllmSettings, engine_of


@pytest.mark.parametrize(
    ("release", "arithmetic"),
    [
        ("0.6.4", "v0"),
        ("0.7.3", "v0"),
        ("0.8.0", "v1"),
        ("v0.11.2", "v1"),
        ("0.18.1", "v1"),
        ("0.19.1", "v1-019"),
        ("0.19.x", "v1-019"),  # as the refusal writes it: any 0.19 patch
        ("0.10.X", "v1"),
    ],
)
def test_a_release_maps_to_the_arithmetic_it_uses(release, arithmetic):
    assert engine_of(release) == arithmetic
    assert VllmSettings(engine=release).engine == arithmetic


@pytest.mark.parametrize("name", ENGINES)
def test_arithmetic_names_still_accepted(name):
    assert engine_of(name) == name


@pytest.mark.parametrize(
    "bad", ["0.6.3", "0.6.x", "0.20.0", "0.20.x", "1.0", "0.19.y", "x.19.1", "latest", ""]
)
def test_an_unknown_release_is_refused_naming_the_known_ones(bad):
    with pytest.raises(SpecError, match=r"0\.6\.4 \.\.\. 0\.19\.x"):
        engine_of(bad)


def test_the_cli_gives_a_release_the_same_figures_as_its_arithmetic(capsys):
    args = ["size", "llama-3-8b", "--engine", "vllm", "--gpu", "H100-SXM", "--json", "--engine-version"]
    assert main([*args, "0.19.1"]) == 0
    by_release = json.loads(capsys.readouterr().out)
    assert main([*args, "v1-019"]) == 0
    by_arithmetic = json.loads(capsys.readouterr().out)
    assert by_release["vllm"].pop("engine_version") == "0.19.1"  # the release asked for, named
    assert by_arithmetic["vllm"].pop("engine_version") == "v1-019"
    assert by_release == by_arithmetic  # every figure the same
    assert main([*args, "0.20.1"]) == 2
    err = capsys.readouterr().err
    assert "'--engine-version'" in err and "0.19.x" in err
