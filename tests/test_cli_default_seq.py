"""`size`/`fit` on a shipped preset with fewer positions than the default --seq: the default follows
the model (and says so), a --seq the user types is still refused past the positions."""

from __future__ import annotations

import json

import pytest

from aiworkbook.cli import main


@pytest.mark.parametrize(("model", "positions"), [("gpt2", 1024), ("bert-base-uncased", 512)])
def test_the_default_sequence_follows_a_shorter_model(capsys, model, positions):
    assert main(["size", model, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["workload"]["seq_len"] == positions
    assert main(["fit", model]) == 0
    assert f"sequence {positions:,} tokens: {model} has {positions:,} positions" in capsys.readouterr().out


def test_inference_leaves_room_for_the_new_tokens(capsys):
    assert main(["size", "gpt2", "--mode", "infer", "--new-tokens", "100", "--json"]) == 0
    w = json.loads(capsys.readouterr().out)["workload"]
    assert (w["seq_len"], w["new_tokens"]) == (924, 100)


def test_a_typed_sequence_is_never_shortened(capsys):
    assert main(["size", "gpt2", "--seq", "2048"]) == 2
    err = capsys.readouterr().err
    assert "'--seq' = 2048" in err and "(1024)" in err
    assert main(["size", "llama-3-8b", "--json"]) == 0  # a longer model keeps the default
    assert json.loads(capsys.readouterr().out)["workload"]["seq_len"] == 2048


def test_a_prompt_past_the_positions_is_named_as_typed():
    """In inference the positions hold the prompt and the new tokens: the refusal names the prompt the user
    typed and the room the new tokens leave (it named their sum as 'seq_len' before)."""
    from aiworkbook.errors import SpecError
    from aiworkbook.sizing import Workload
    from aiworkbook.specs import load_model

    with pytest.raises(SpecError) as err:
        Workload(mode="infer", seq_len=1000, new_tokens=100).check_against(load_model("gpt2"))
    assert (err.value.field, err.value.value) == ("seq_len", 1000)
    assert err.value.allowed.startswith("<= 924: max_position_embeddings (1024) of gpt2 less 100 new tokens")
    Workload(mode="infer", seq_len=924, new_tokens=100).check_against(load_model("gpt2"))  # the boundary fits
