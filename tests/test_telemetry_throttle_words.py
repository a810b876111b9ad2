"""Clocks-event reasons in words (issue 36, item 5): a power cap and idle clocks are information, heat,
the hardware slowdown and the power brake are warnings; `throttled` follows the warnings only."""

from __future__ import annotations

import pytest
from fake_nvml import DATACENTER, FakeNVML

from aiworkbook.telemetry.gpu_metrics import THROTTLE_REASONS, decode_throttle, is_throttled, throttle_notes


@pytest.mark.parametrize(
    ("mask", "levels", "throttled"),
    [
        (0x4, ["info"], False),  # sw_power_cap: an H100 at its power limit under dense GEMMs
        (0x1, ["info"], False),  # idle
        (0x1 | 0x4, ["info", "info"], False),
        (0x20, ["warning"], True),  # software thermal slowdown
        (0x40, ["warning"], True),  # hardware thermal slowdown
        (0x8, ["warning"], True),  # hardware slowdown
        (0x80, ["warning"], True),  # power brake
        (0x4 | 0x40, ["info", "warning"], True),
        (0x10000, ["warning"], True),  # a bit this library does not know
    ],
)
def test_each_reason_has_words_and_a_level(mask, levels, throttled):
    reasons = decode_throttle(mask)
    notes = throttle_notes(reasons)
    assert [n["level"] for n in notes] == levels and all(n["words"] for n in notes)
    assert is_throttled(reasons) is throttled


def test_every_known_reason_has_words():
    assert {n["reason"] for n in throttle_notes(list(THROTTLE_REASONS.values()))} == set(
        THROTTLE_REASONS.values()
    )
    assert all(
        n["words"] != "a clocks-event reason this library does not know"
        for n in throttle_notes(list(THROTTLE_REASONS.values()))
    )
    assert throttle_notes({"na": "not supported"}) is None


def test_a_healthy_h100_at_its_power_limit_is_not_throttled_in_the_environment():
    import importlib

    from aiworkbook.telemetry.sampler import reset_shared_sampler

    env_mod = importlib.import_module("aiworkbook.telemetry.environment")
    reset_shared_sampler()  # environment() prefers a live sampler's reader: not one an earlier test opened
    with FakeNVML([DATACENTER, {**DATACENTER, "uuid": "GPU-hot", "throttle": 0x4 | 0x20}]):
        env_mod.reset()
        try:
            env = env_mod.environment()
        finally:
            env_mod.reset()
    cool, hot = env["gpus"]
    assert cool["throttled"] is False and cool["throttle_notes"][0]["words"].startswith("at its power limit")
    assert hot["throttled"] is True and hot["throttle_notes"][1]["level"] == "warning"
