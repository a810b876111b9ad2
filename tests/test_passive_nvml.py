"""`check --passive` beyond the fingerprint (issue 38): the driver and CUDA driver version, each GPU's
VBIOS and MIG layout recorded by `lock` on a GPU and compared, and XIDs raised while it runs, all
through NVML only (the fake NVML, tests/fake_nvml.py: NotSupported where a GPU lacks a call,
NoPermission for GPU instances without root). Old profiles without the record still load and say
what was not checked."""

from __future__ import annotations

import json

import pytest
from fake_nvml import CONSUMER, DATACENTER, MIG, FakeNVML
from profile_fakes import write_locked

from aiworkbook.cli import main
from aiworkbook.profile import load_profile
from aiworkbook.profile.gpu_facts import NvmlFacts, compare, read_facts
from aiworkbook.profile.passive import passive_check
from aiworkbook.telemetry.environment import reset as reset_reader

pytestmark = pytest.mark.timeout(60)

HEALTHY = {**DATACENTER, "name": "NVIDIA L40S", "throttle": 0, "ecc": (0, 0, 0, 0), "remapped": (0, 0, 0, 0)}
A100 = {**MIG, "throttle": 0, "ecc": (0, 0, 0, 0)}
NO_WAIT = {"sleep": lambda s: None}  # the fake's event wait returns at once (no real sleeping)


@pytest.fixture(scope="module")
def old(tmp_path_factory):
    """A profile as an older aiworkbook (or a lock without a GPU) wrote it: no node.nvml."""
    return write_locked(tmp_path_factory.mktemp("passive"))


def _with_facts(old, tmp_path, gpus, **fake):
    """The old profile with node.nvml as `lock` records it on these GPUs (the fake's)."""
    with FakeNVML(gpus, **NO_WAIT, **fake):
        facts = read_facts()
    doc = json.loads(old.read_text())
    doc["node"]["nvml"] = facts.model_dump(mode="json")
    doc["node"]["fingerprint"]["gpu"] = facts.gpus[0].name  # locked on these GPUs
    p = tmp_path / "gpu.json"
    p.write_text(json.dumps(doc))
    return p


def _check(path, gpus, xids=(), **fake):
    with FakeNVML(gpus, **NO_WAIT, **fake) as f:
        for gpu, x in xids:
            f.inject_xid(gpu, x)
        reset_reader()
        try:
            return passive_check(load_profile(path), xid_wait_s=0.2)
        finally:
            reset_reader()


def test_facts_read_through_nvml_as_the_gpu_answers():
    with FakeNVML([HEALTHY, CONSUMER, A100], root=True, **NO_WAIT):
        facts = read_facts()
    assert facts is not None and facts.driver == "550.54.15" and facts.cuda_driver == "12.4"
    h100, geforce, a100 = facts.gpus
    assert h100.vbios == "96.00.99.00.01" and h100.mig_mode == "disabled" and h100.mig_instances == {}
    assert (
        geforce.mig_mode is None and geforce.mig_instances is None and not geforce.unreadable
    )  # NotSupported
    assert a100.mig_mode == "enabled" and a100.mig_instances == {"MIG 2g.20gb": 1, "MIG 3g.40gb": 1}


def test_gpu_instances_without_root_are_unreadable_and_not_compared():
    with FakeNVML([A100], **NO_WAIT):
        facts = read_facts()
    assert facts.gpus[0].mig_instances is None and facts.gpus[0].unreadable == {
        "mig_instances": "no permission"
    }
    with FakeNVML([A100], root=True, **NO_WAIT):
        as_root = read_facts()
    bad, notes = compare(as_root, facts)
    assert bad == [] and notes == ["GPU 0: MIG instances unreadable now (no permission): not checked"]


def test_no_gpu_means_nothing_recorded():
    with FakeNVML([], **NO_WAIT):
        assert read_facts() is None
    with FakeNVML([HEALTHY], driver=False):
        assert read_facts() is None


def test_an_old_profile_loads_and_says_what_it_did_not_check(old):
    rep = _check(old, [HEALTHY])
    assert rep.exit_code == 0, rep.problems
    assert any("not recorded in the profile: not checked" in n for n in rep.notes)


def test_the_same_node_passes(old, tmp_path):
    p = _with_facts(old, tmp_path, [HEALTHY])
    assert load_profile(p).node.nvml.gpus[0].vbios == "96.00.99.00.01"
    rep = _check(p, [HEALTHY])
    assert rep.exit_code == 0, rep.problems
    assert not any("not recorded" in n for n in rep.notes)
    assert "XIDs watched for 0.2 s on GPU(s) 0" in rep.notes


def test_a_new_vbios_and_driver_fail_with_one_line(old, tmp_path):
    p = _with_facts(old, tmp_path, [HEALTHY])
    rep = _check(p, [{**HEALTHY, "vbios": "96.00.a1.00.02"}], driver_version="560.35.03")
    assert rep.exit_code == 1
    assert "driver 550.54.15 -> 560.35.03" in rep.problems
    assert "CUDA driver 12.4 -> 12.6" in rep.problems
    assert "GPU 0: VBIOS 96.00.99.00.01 -> 96.00.a1.00.02" in rep.problems
    assert sum("driver 550" in x for x in rep.problems) == 1  # the fingerprint's driver is not said twice
    assert "\n" not in rep.summary() and "VBIOS" in rep.summary()


def test_a_changed_mig_layout_fails(old, tmp_path):
    p = _with_facts(old, tmp_path, [A100], root=True)
    assert _check(p, [A100], root=True).exit_code == 0
    rep = _check(p, [{**A100, "gpu_instances": [(0, 19), (1, 19), (2, 9)]}], root=True)
    assert rep.problems == [
        "GPU 0: MIG instances MIG 2g.20gb x1, MIG 3g.40gb x1 -> MIG 1g.10gb x2, MIG 3g.40gb x1"
    ]
    off = {**A100, "mig": None}
    rep = _check(p, [off], root=True)
    assert "GPU 0: MIG mode enabled -> disabled" in rep.problems
    assert "GPU 0: MIG instances MIG 2g.20gb x1, MIG 3g.40gb x1 -> none" in rep.problems


def test_a_critical_xid_fails_an_application_xid_is_noted(old, tmp_path):
    rep = _check(old, [HEALTHY], xids=[(0, 79)])
    assert rep.exit_code == 1 and rep.problems == ["GPU 0: XID 79 (GPU has fallen off the bus)"]
    rep = _check(old, [HEALTHY], xids=[(0, 13)])
    assert rep.exit_code == 0
    assert any(n.startswith("GPU 0: XID 13 ") and "application" in n for n in rep.notes)


def test_a_gpu_without_xid_events_is_said_not_watched(old):
    rep = _check(old, [{**HEALTHY, "event_types": 0}])
    assert rep.exit_code == 0 and "XIDs not watched: no GPU supports XID events" in rep.notes


def test_the_cli_prints_notes_and_the_one_line_reason(old, tmp_path, capsys):
    p = _with_facts(old, tmp_path, [HEALTHY])
    with FakeNVML([{**HEALTHY, "vbios": "96.00.a1.00.02"}], **NO_WAIT):
        reset_reader()
        try:
            code = main(["check", str(p), "--passive"])
        finally:
            reset_reader()
    out = capsys.readouterr().out
    assert code == 1
    assert "fail: GPU 0: VBIOS 96.00.99.00.01 -> 96.00.a1.00.02" in out
    assert out.strip().splitlines()[-1].startswith("aiworkbook check: ") and "VBIOS" in out.splitlines()[-1]
    assert "note: XIDs watched" in out


def test_recorded_facts_validate_strictly():
    with pytest.raises(ValueError):
        NvmlFacts.model_validate({"driver": "550", "gpus": [{"index": -1}]})


def test_lock_on_a_gpu_records_the_facts():
    from aiworkbook.profile import lock

    with FakeNVML([HEALTHY], **NO_WAIT):
        prof = lock("llm-inference", detected=True)
    assert prof.node.nvml is not None and prof.node.nvml.gpus[0].vbios == "96.00.99.00.01"
    assert prof.node.nvml.cuda_driver == "12.4"
