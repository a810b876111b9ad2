"""Time to a useful replica (aiworkbook.sizing.replica, `aiworkbook replica-time`): the seeds' example
(14 GB image, 140 GB weights, useful four minutes later, after the spike), the coldstart proof's
measured rate in place of an assumed one, and bad input as one line naming the field."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from aiworkbook.cli import main
from aiworkbook.errors import SpecError
from aiworkbook.sizing.replica import ColdStart, replica_time

GB = 1e9
#: the seeds' example at plain bandwidths: a 2 Gbit/s registry, a 10 Gbit/s object store, one NVMe
SEEDS = dict(
    image_bytes=14 * GB,
    weights_bytes=140 * GB,
    image_pull_bps=0.25 * GB,
    weights_download_bps=1.25 * GB,
    load_bps=3 * GB,
    warmup_s=25.0,
)


def test_the_seeds_example_is_useful_four_minutes_after_scale_up():
    r = replica_time(**SEEDS, reaction_s=60, spike_s=180)
    seconds = {p.name: p.seconds for p in r.phases}
    assert seconds == pytest.approx(
        {"node provisioning": 0, "image pull": 56, "weight download": 112, "load": 140 / 3, "warm-up": 25}
    )
    assert r.to_first_token_s == pytest.approx(56 + 112 + 140 / 3 + 25)  # 239.7 s: four minutes
    assert 3.5 * 60 < r.to_first_token_s <= 4 * 60
    assert r.from_load_rise_s == pytest.approx(r.to_first_token_s + 60)
    assert r.follows is False and r.slowest().name == "weight download"
    assert r.verdict().startswith("scaling out cannot follow") and "keep warm capacity" in r.verdict()
    assert all(p.kind in ("assumed", "skipped") for p in r.phases)


def test_cached_image_and_weights_can_follow_a_long_spike():
    r = replica_time(**SEEDS, reaction_s=30, spike_s=180, image_cached=True, weights_cached=True)
    assert r.to_first_token_s == pytest.approx(140 / 3 + 25)
    assert r.follows is True and r.verdict().startswith("scaling out can follow")
    assert replica_time(**SEEDS).follows is None  # no spike given: no verdict on it


def test_a_node_to_provision_comes_first():
    r = replica_time(**SEEDS, provision_s=90)
    assert r.phases[0].name == "node provisioning" and r.phases[0].seconds == 90
    assert r.to_first_token_s == pytest.approx(90 + 56 + 112 + 140 / 3 + 25)


def test_the_coldstart_rate_replaces_the_assumed_load_bandwidth():
    cs = ColdStart(weights_bytes=int(2 * GB), measured_s=1.0, device="cuda")
    r = replica_time(**{**SEEDS, "load_bps": None}, coldstart=cs)
    load = next(p for p in r.phases if p.name == "load to first token")
    assert load.seconds == pytest.approx(70.0) and load.kind == "measured" and "cuda" in load.formula
    with pytest.raises(SpecError, match="load_bps"):
        replica_time(**{**SEEDS, "load_bps": None})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("image_pull_bps", 0),
        ("weights_download_bps", -1.0),
        ("weights_bytes", float("nan")),
        ("load_bps", True),
        ("warmup_s", -5),
        ("spike_s", 0),
        ("reaction_s", 1e12),
    ],
)
def test_bad_numbers_name_their_field(field, value):
    with pytest.raises(SpecError, match=field):
        replica_time(**{**SEEDS, field: value})


def test_the_cli_prints_the_phases_and_the_verdict(capsys):
    argv = ["replica-time", "--image-gb", "14", "--weights-gb", "140", "--pull-gb-s", "0.25"]
    argv += ["--download-gb-s", "1.25", "--load-gb-s", "3", "--warmup-s", "25", "--reaction-s", "60"]
    assert main([*argv, "--spike-s", "180"]) == 0
    out = capsys.readouterr().out
    assert "image pull" in out and "4.0 min" in out and "scaling out cannot follow" in out
    assert main([*argv, "--spike-s", "180", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["to_first_token_s"] == pytest.approx(239.6667, abs=1e-3) and doc["follows"] is False
    assert main([*argv, "--pull-gb-s", "0"]) == 2
    assert "pull_gb_s" in capsys.readouterr().err
    assert main(["replica-time", "--image-gb", "14", "--pull-gb-s", "1", "--download-gb-s", "1"]) == 2
    assert "weights_gb" in capsys.readouterr().err


def test_the_cli_takes_the_weights_of_a_model_and_a_real_coldstart_result(tmp_path, capsys):
    """The coldstart proof run here (CPU, tiny model) feeds its measured rate into the estimate."""
    from aiworkbook.proofs.result import ProofResult

    out = tmp_path / "coldstart.json"
    argv = ["prove", "coldstart", "tiny-llama", "--dir", str(tmp_path / "w"), "--quick", "--device", "cpu"]
    assert main([*argv, "--json", str(out)]) == 0
    capsys.readouterr()
    proof = ProofResult.load(out)
    rate = proof.details["weights_bytes"] / proof.measured
    assert main(["replica-time", "--image-gb", "14", "--model", "llama-3-8b", "--pull-gb-s", "0.25"]
                + ["--download-gb-s", "1.25", "--coldstart", str(out), "--json"]) == 0  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    load = next(p for p in doc["phases"] if p["name"] == "load to first token")
    weights = next(p for p in doc["phases"] if p["name"] == "weight download")["seconds"] * 1.25 * GB
    assert load["kind"] == "measured" and load["seconds"] == pytest.approx(weights / rate, rel=1e-6)
    assert 15 * GB < weights < 17 * GB  # Llama-3-8B in bf16
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"proof": "vram", "unit": "B", "measured": 1}))
    assert main(["replica-time", "--image-gb", "1", "--weights-gb", "1", "--pull-gb-s", "1"]
                + ["--download-gb-s", "1", "--coldstart", str(bad)]) == 2  # fmt: skip
    assert "coldstart" in capsys.readouterr().err


def test_the_module_imports_no_torch():
    code = "import sys, aiworkbook.sizing.replica; print('torch' in sys.modules)"
    assert (
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
        ).stdout.strip()
        == "False"
    )
