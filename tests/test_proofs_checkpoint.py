"""Checkpoint, restore and cold-start proofs on the CPU at a few MB in tmp_path."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from aiworkbook.errors import SpecError
from aiworkbook.proofs import checkpoint as C
from aiworkbook.proofs import flags as F
from aiworkbook.proofs import fsio, registry, scratch
from aiworkbook.proofs.control import Control


@pytest.mark.parametrize("fmt", C.FORMATS)
def test_every_format_round_trips_bit_for_bit(tmp_path, fmt):
    state = C.synthetic_state(2 * 2**20, seed=1)
    s = C.save_checkpoint(tmp_path, state, fmt, 7)
    assert s["bytes"] >= C.state_bytes(state) and s["write_s"] >= s["stall_s"] > 0
    path, bad = C.restore_latest(tmp_path, fmt)
    assert path.name == "step-7" and bad == []
    loaded = C.load_checkpoint(path, fmt)
    assert all(torch.equal(loaded[k], v) for k, v in state.items())


def test_verify_names_a_corrupted_tensor(tmp_path):
    state = C.synthetic_state(3 * 2**20)
    s = C.save_checkpoint(tmp_path, state, "safetensors", 1)
    loaded = C.load_checkpoint(s["path"], "safetensors")
    loaded["model.w0"][0] += 1.0
    del loaded["optim.step"]
    assert C.verify(loaded, C.read_manifest(s["path"])) == ["optim.step", "model.w0"]


def test_model_state_holds_weights_and_adamw_moments():
    from aiworkbook.specs import load_model

    spec = load_model("tiny-llama")
    state = C.model_state(spec)
    assert any(k.endswith(".exp_avg_sq") for k in state) and "model.norm.weight" in state
    params = sum(v.numel() for k, v in state.items() if k.startswith("model."))
    assert params == spec.params
    assert C.state_bytes(state) == pytest.approx(12 * spec.params, rel=0.001)  # fp32 weights + m + v


def test_an_async_save_lets_the_loop_run_until_wait(tmp_path):
    state = C.synthetic_state(8 * 2**20)
    pending = C.start_save(tmp_path, state, "dcp-async", 3)
    assert pending.futures and not (tmp_path / "dcp-async" / "LATEST").exists()  # not published before wait
    s = pending.wait()
    assert pending.done() and s["stall_s"] <= s["write_s"]
    assert C.restore_latest(tmp_path, "dcp-async")[1] == []
    assert [p.name for p in (tmp_path / "dcp-async").iterdir() if p.name.startswith(fsio.TMP_PREFIX)] == []


def test_a_resaved_step_gets_a_new_folder_and_latest_follows(tmp_path):
    a, b = C.synthetic_state(2**20, seed=1), C.synthetic_state(2**20, seed=2)
    C.save_checkpoint(tmp_path, a, "safetensors", 5)
    s = C.save_checkpoint(tmp_path, b, "safetensors", 5)
    assert Path(s["path"]).name.startswith("step-5.")
    path, bad = C.restore_latest(tmp_path, "safetensors")
    assert path == Path(s["path"]) and bad == []
    assert torch.equal(C.load_checkpoint(path, "safetensors")["model.w0"], b["model.w0"])
    with pytest.raises(FileExistsError):
        fsio.publish(tmp_path / "x", path)


def test_only_the_newest_checkpoints_are_kept(tmp_path):
    state = C.synthetic_state(2**20)
    for step in range(4):
        C.save_checkpoint(tmp_path, state, "torch", step, keep=1)
    assert sorted(p.name for p in (tmp_path / "torch").iterdir()) == ["LATEST", "step-2", "step-3"]


def test_a_restarted_job_saving_a_lower_step_keeps_the_checkpoint_latest_names(tmp_path):
    """A job restarted from scratch saves step 2 after step 5: pruning by step number must not delete
    the folder LATEST has just moved to (the random-kill test met this)."""
    state = C.synthetic_state(2**20)
    for step in (4, 5, 2):
        C.save_checkpoint(tmp_path, state, "torch", step, keep=1)
    path, bad = C.restore_latest(tmp_path, "torch")
    assert path.name == "step-2" and path.is_dir() and bad == []


_SAVER = textwrap.dedent(
    """
    import sys
    from aiworkbook.proofs import checkpoint as C
    root, fmt = sys.argv[1], sys.argv[2]
    state = C.synthetic_state(24 * 2**20, seed=2)
    print("ready", flush=True)
    for step in range(2, 1000):
        C.save_checkpoint(root, state, fmt, step)
    """
)


@pytest.mark.parametrize("fmt", ["safetensors", "dcp"])
def test_a_save_killed_at_random_points_leaves_a_restorable_checkpoint(tmp_path, fmt):
    """SIGKILL a process that saves over and over, at random moments: LATEST always restores intact."""
    C.save_checkpoint(tmp_path, C.synthetic_state(2**20, seed=9), fmt, 1)
    rng = random.Random(12)
    for _ in range(3):
        p = subprocess.Popen(
            [sys.executable, "-c", _SAVER, str(tmp_path), fmt], stdout=subprocess.PIPE, text=True
        )
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.4))  # real time: the kill lands at a random point of a real save
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        path, bad = C.restore_latest(tmp_path, fmt)
        assert bad == [], f"{path} restored with differing tensors"
    leftovers = [p.name for p in (tmp_path / fmt).iterdir() if p.name.startswith(fsio.TMP_PREFIX)]
    assert all(name.startswith(fsio.TMP_PREFIX) for name in leftovers)  # litter of the kill, never LATEST


def test_proof_reports_every_format_beside_the_baseline(tmp_path):
    r = registry.run("checkpoint", size_mb=4, dir=str(tmp_path), quick=True)
    assert r.verdict in ("pass", "fail") and r.unit == "B/s" and r.measured > 0
    assert [f["format"] for f in r.details["formats"]] == list(C.FORMATS)
    assert all(f["integrity"] == "ok" for f in r.details["formats"])
    assert "fsynced" in r.flags
    async_row = next(f for f in r.details["formats"] if f["format"] == "dcp-async")
    assert async_row["stall_s"] <= async_row["write_s"]
    for f in r.details["formats"]:
        loop = f["loop"]
        assert loop["loop_stall_s"] >= 0 and loop["step_s"] > 0
        if f["format"] != "dcp-async":  # a sync save: the loop step waits for the whole durable write
            assert loop["overlapped_steps"] == 0 and loop["loop_stall_s"] >= loop["blocked_s"] > 0
    yd = r.details["young_daly"]
    assert 0 < yd["young_interval_s"] and 0 <= yd["waste_fraction"] <= 1
    assert r.details["baseline"]["write_bps"] > 0
    assert list(tmp_path.iterdir()) == []  # the scratch folder is gone


def test_cold_reads_are_flagged_when_not_possible(tmp_path, monkeypatch):
    monkeypatch.setattr(fsio, "fs_type", lambda p: "tmpfs")
    r = registry.run("checkpoint", size_mb=2, dir=str(tmp_path), formats="torch", format="torch", quick=True)
    assert "cache-cold" not in r.flags
    assert any("NOT cache-cold" in n for n in r.notes)


def test_restore_proof_measures_reads(tmp_path):
    r = registry.run("restore", size_mb=2, dir=str(tmp_path), quick=True)
    assert r.proof == "restore" and r.predicted_label == "assumed storage read speed"
    assert r.measured == pytest.approx(r.details["formats"][0]["read_bps"])


def test_cancel_stops_within_a_unit_and_cleans_up(tmp_path):
    import threading

    ev = threading.Event()
    seen = []

    def progress(done, total, msg):
        seen.append(msg)
        if len(seen) == 3:
            ev.set()

    r = registry.run("checkpoint", progress=progress, cancel=ev, size_mb=64, dir=str(tmp_path), quick=True)
    assert r.verdict == "interrupted"
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_removes_temporary_files(tmp_path):
    def boom(done, total, msg):
        if "shard" in msg:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):  # a BaseException: Control passes it through
        C.measure(
            size_mb=2, dir=str(tmp_path), formats="safetensors", quick=True, control=Control(progress=boom)
        )
    assert list(tmp_path.iterdir()) == []


def test_a_disk_too_small_is_refused_before_writing(tmp_path, monkeypatch):
    import shutil

    monkeypatch.setattr(shutil, "disk_usage", lambda p: shutil._ntuple_diskusage(10**9, 10**9 - 1000, 1000))
    from aiworkbook.diskfull import NoSpace

    with pytest.raises(NoSpace, match="needed ~2.10 MiB, free 1000 B"):
        C.measure(size_mb=1, dir=str(tmp_path), quick=True)
    assert list(tmp_path.iterdir()) == []


def test_a_state_larger_than_ram_is_refused_before_allocating(tmp_path):
    with pytest.raises(SpecError, match="RAM available"):
        C.measure(model="llama-3-70b", dir=str(tmp_path))  # 12 B/param: ~840 GB
    assert registry.plan("checkpoint", model="llama-3-70b", dir=str(tmp_path)).fits is False
    assert list(tmp_path.iterdir()) == []


def test_bad_inputs_are_spec_errors(tmp_path):
    with pytest.raises(SpecError, match="format"):
        C.parse_formats("zip")
    with pytest.raises(SpecError, match="size_mb"):
        registry.plan("checkpoint", size_mb=-1)
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(SpecError, match="dir"):
        scratch.root(f)
    (tmp_path / "torch").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "torch" / "LATEST").write_text("../elsewhere")
    with pytest.raises(SpecError, match="step folder beside it"):
        C.latest(tmp_path, "torch")  # LATEST may not lead out of its folder


def test_plan_predicts_size_and_time_from_the_estimate(tmp_path):
    p = registry.plan("checkpoint", model="tiny-llama", dir=str(tmp_path), quick=True)
    assert p.sizes["state_bytes"] == 12 * 4868352
    assert p.sizes["estimate_resumable_bytes"] == 12 * 4868352  # fp32 AdamW: weights + m + v
    assert p.fits is True and p.predicted == 2.0e9


def test_coldstart_runs_to_first_logits(tmp_path):
    r = registry.run("coldstart", model="tiny-llama", dir=str(tmp_path), quick=True, device="cpu")
    ph = r.details["phases_median_s"]
    assert set(ph) == {"load_s", "build_s", "transfer_s", "first_forward_s"}
    assert r.measured == pytest.approx(sum(ph.values()))
    assert list(tmp_path.iterdir()) == []
    if fsio.storage_read_bytes() is not None and fsio.fs_type(tmp_path) not in fsio.MEMORY_FS:
        assert F.CACHE_COLD in r.flags  # the weights came from storage (/proc/self/io)


def test_coldstart_counts_the_bytes_it_writes_also_for_a_quantised_config(tmp_path):
    """The proof writes the model it builds, every weight at the dtype; gpt-oss-20b's config ships MXFP4
    experts, so its checkpoint's bytes (the sizing library's) are a third of what the proof would write,
    read and hold: the plan and the space checks count the built bytes."""
    from aiworkbook.proofs.model import built_bytes
    from aiworkbook.specs import load_model

    r = registry.run("coldstart", model="tiny-llama", dir=str(tmp_path), quick=True, device="cpu", keep=True)
    written = next(tmp_path.rglob("model.safetensors")).stat().st_size
    assert 0 < written - r.details["weights_bytes"] < 64 * 1024  # the tensors, and the safetensors header
    p = registry.plan("coldstart", model="gpt-oss-20b", dtype="bf16")
    assert p.sizes["weights_bytes"] == built_bytes(load_model("gpt-oss-20b"), torch.bfloat16) > 40e9


def test_a_coldstart_whose_weights_did_not_come_from_storage_is_not_cold(tmp_path, monkeypatch):
    monkeypatch.setattr(fsio, "drop_cache", lambda path: (True, ""))  # says cold...
    monkeypatch.setattr(fsio, "storage_read_bytes", lambda: 1000)  # ...but nothing came from storage
    r = registry.run("coldstart", model="tiny-llama", dir=str(tmp_path), quick=True, device="cpu")
    assert F.CACHE_COLD not in r.flags
    assert any("NOT cache-cold" in n and "came from storage" in n for n in r.notes)


def test_restore_reads_a_kept_checkpoint_as_it_is(tmp_path):
    r = registry.run(
        "checkpoint", size_mb=2, dir=str(tmp_path), formats="torch", format="torch", quick=True, keep=True
    )
    kept = Path(r.details["scratch"])
    assert [p.name for p in tmp_path.iterdir()] == [kept.name] and kept.name.startswith(
        "aiworkbook-checkpoint-"
    )
    assert (kept / "torch" / "LATEST").read_text() == "step-0"
    assert sorted(p.name for p in kept.iterdir()) == ["torch"]  # the measurement's files are gone
    for where in (tmp_path, kept):  # the folder holding the kept one, or the kept one itself
        p = registry.plan("restore", dir=str(where), format="torch", quick=True)
        assert p.sizes["existing"] == str(kept / "torch" / "step-0")
    got = registry.run("restore", dir=str(kept), format="torch", quick=True)
    assert got.details["existing"] is True and got.details["formats"][0]["integrity"] == "ok"
    assert got.details["formats"][0]["bytes"] == r.details["formats"][0]["bytes"]
    assert sorted(p.name for p in kept.iterdir()) == ["torch"]  # restore's own folder is gone
    # a flipped byte in the kept checkpoint is caught
    shard = next((kept / "torch" / "step-0").glob("shard-*"))
    import torch as _t

    part = _t.load(shard, weights_only=True)
    part["model.w0"][3] = 42.0
    _t.save(part, shard)
    bad = registry.run("restore", dir=str(kept), format="torch", quick=True)
    assert bad.details["formats"][0]["mismatched"] == ["model.w0"] and bad.verdict == "fail"
    assert any("integrity FAILED" in n for n in bad.notes)


@pytest.mark.gpu
def test_coldstart_on_cuda_counts_the_transfer(tmp_path):
    r = registry.run("coldstart", model="tiny-llama", dir=str(tmp_path), quick=True, device="cuda")
    assert r.device == "cuda" and r.details["phases_median_s"]["transfer_s"] > 0
