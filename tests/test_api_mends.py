"""Mends from the read-through: throttle_window reuses the shared sampler and never creates one."""

from __future__ import annotations

from aiworkbook.proofs import environment as penv
from aiworkbook.telemetry import sampler as smod


def test_throttle_window_never_creates_the_shared_sampler(monkeypatch):
    smod.reset_shared_sampler()
    assert penv.throttle_window(0.0) is None
    assert smod.existing_sampler() is None  # asking did not create one


def test_throttle_window_reads_a_running_shared_sampler(monkeypatch):
    class Running:
        running = True

        def window(self, since):
            assert since == 5.0

            class W:
                def throttle_share(self):
                    return {"gpu0": {"sw_power_cap": 0.5}}

            return W()

    monkeypatch.setattr(smod, "existing_sampler", lambda: Running())
    assert penv.throttle_window(5.0) == {"gpu0": {"sw_power_cap": 0.5}}
