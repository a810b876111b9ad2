"""A refusal a proof's or the sizer's inputs get is said in the viewer's language: what is allowed is a
message, so a German or Dutch error does not end in an English phrase (issue 33, readable in three
languages). Each case is refused by the code a user reaches (a proof's plan, the deployment's placement,
vLLM's start-up arithmetic), and its German words are checked whole."""

from __future__ import annotations

import pytest

from aiworkbook.errors import SpecError
from aiworkbook.message import words
from aiworkbook.sizing import Workload
from aiworkbook.specs import get_gpu, load_model


def _cuda_asked_on_a_cpu_machine(monkeypatch):
    from aiworkbook.proofs import device

    monkeypatch.setattr(device, "cuda_available", lambda: False)
    device.resolve_device("cuda")


def _allreduce_sizes(monkeypatch):
    from aiworkbook.proofs.allreduce import parse_sizes

    parse_sizes("1,,x", "cpu", True)


def _vllm_serving_training(monkeypatch):
    from aiworkbook.sizing.placement import vllm_workload

    vllm_workload(load_model("llama-3-8b"), Workload(mode="train"), get_gpu("H100-SXM"))


def _vllm_startup_of_an_encoder(monkeypatch):
    from aiworkbook.sizing.vllm import startup

    startup(load_model("bert-base-uncased"), get_gpu("H100-SXM"))


def _kv_proof_of_an_encoder(monkeypatch):
    from aiworkbook.proofs.inputs import KvInputs
    from aiworkbook.proofs.kv import plan

    plan(KvInputs(model="bert-base-uncased"))


def _serving_port(monkeypatch):
    from aiworkbook.serving.limits import check_port

    check_port(70000)


def _kv_pool_too_large(monkeypatch):
    from aiworkbook.serving.pool import MAX_BLOCKS, BlockPool

    BlockPool(MAX_BLOCKS + 1)


def _arrival_rate(monkeypatch):
    from aiworkbook.serving.arrivals import schedule

    schedule(4, 0.0)


def _monitor_duration(monkeypatch):
    from aiworkbook.telemetry.monitor import check_duration

    check_duration(-1.0)


def _slurm_gres_and_gpus(monkeypatch):
    from aiworkbook.profile.slurm import SlurmJob

    SlurmJob(gres="gpu:1", gpus=1).validate()


def _slurm_time(monkeypatch):
    from aiworkbook.profile.slurm import SlurmJob

    SlurmJob(time="soon").validate()


def _pasted_config_with_odd_heads(monkeypatch):
    import json

    from aiworkbook.specs.reader import spec_from_text

    cfg = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4}
    spec_from_text(json.dumps({**cfg, "num_key_value_heads": 3, "vocab_size": 100}))


def _unknown_node(monkeypatch):
    from aiworkbook.specs.node import get_node

    get_node("no-such-node")


def _preheat_past_the_viewers(monkeypatch):
    from aiworkbook.cli.app_cmds import launch

    launch("sizing", max_viewers=2, preheat=2)


def _monitor_interval(monkeypatch):
    from aiworkbook.telemetry.sampler import check_interval

    check_interval(0.0)


def _price_file_date(monkeypatch):
    import json
    import tempfile

    from aiworkbook.specs.gpu import set_prices

    with tempfile.TemporaryDirectory() as d:
        path = f"{d}/prices.json"
        with open(path, "w") as f:
            json.dump({"source": "our contract", "date": "last week", "prices": {"L4": 0.5}}, f)
        try:
            set_prices(path)
        finally:
            set_prices(None)


CASES = [
    (_cuda_asked_on_a_cpu_machine, "auto oder cpu (torch.cuda.is_available() ist hier False)"),
    (_allreduce_sizes, "Nachrichtengrößen in KiB, durch Kommas getrennt, jede >= 4 Byte"),
    (_vllm_serving_training, "infer (vLLM bedient Inferenz-Workloads)"),
    (_vllm_startup_of_an_encoder, "ein Decoder (die KV-Cache-Dimensionierung von vLLM braucht einen)"),
    (
        _kv_proof_of_an_encoder,
        "ein Decoder: der KV-Cache-Nachweis erzeugt Tokens, und dieses Modell ist ein reiner Encoder",
    ),
    (_serving_port, "eine ganze Zahl 0..65535 (0: ein freier Port)"),
    (_arrival_rate, "> 0 Anfragen pro Sekunde oder inf"),
    (_monitor_duration, "eine positive, endliche Zahl an Sekunden (höchstens ein Jahr)"),
    (_slurm_gres_and_gpus, "entweder --gres oder --gpus, nicht beides"),
    (_slurm_time, "Minuten, MM:SS, HH:MM:SS, D-HH, D-HH:MM oder D-HH:MM:SS"),
    (_pasted_config_with_odd_heads, "ein Teiler von num_attention_heads (4)"),
    (
        _unknown_node,
        "cpu-highmem, gpu-training-8xh100, hybrid-pools, inference-4xl40s oder eine .json-Datei mit einem Knotenprofil",
    ),
    (_preheat_past_the_viewers, "weniger als --max-viewers (2): warme Kernels zählen mit"),
    (_monitor_interval, "Sekunden zwischen 0,1 und 3600,0"),
    (_price_file_date, "das Datum, an dem die Preise erhoben wurden, JJJJ-MM-TT"),
]


@pytest.mark.parametrize(("refuse", "de"), CASES, ids=[c[0].__name__.strip("_") for c in CASES])
def test_the_allowed_part_of_a_refusal_is_said_in_the_language(refuse, de, monkeypatch):
    with pytest.raises(SpecError) as info:
        refuse(monkeypatch)
    allowed = info.value.allowed
    assert words(allowed, "de") == de
    english = words(allowed, "en")
    assert words(allowed, "nl") not in (english, de)


def test_a_figure_in_a_refusal_is_written_as_the_language_writes_it(monkeypatch):
    from aiworkbook.serving.pool import MAX_BLOCKS

    with pytest.raises(SpecError) as info:
        _kv_pool_too_large(monkeypatch)
    assert words(info.value.allowed, "en") == f"<= {MAX_BLOCKS:,} blocks (lower the KV budget)"
    assert words(info.value.allowed, "de") == f"<= {MAX_BLOCKS:,} Blöcke (das KV-Budget senken)".replace(
        ",", "."
    )
