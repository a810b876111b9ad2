"""The client's CPU per request is measured request by request (aiworkbook/serving/cpumeter.py): each
coroutine's own steps are clocked, so two requests interleaved on one event loop each get their own
cost, not the run's CPU shared out. A fake thread clock that only the requests' own code advances
makes the attribution exact (the real clock is used everywhere else)."""

from __future__ import annotations

import asyncio
import types

import pytest

from aiworkbook.serving import cpumeter


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [0.0]
    monkeypatch.setattr(cpumeter, "time", types.SimpleNamespace(thread_time=lambda: now[0]))
    return now


def test_interleaved_requests_each_get_their_own_cpu(clock: list[float]):
    async def request(cost: float, steps: int) -> str:
        for _ in range(steps):
            clock[0] += cost  # this request's own work in this step
            await asyncio.sleep(0)  # the loop runs the other request here
        return f"{steps} steps"

    heavy: list[float] = []
    light: list[float] = []

    async def both() -> list[str]:
        return await asyncio.gather(
            cpumeter.metered(request(1.0, 3), heavy.append), cpumeter.metered(request(0.25, 5), light.append)
        )

    assert asyncio.run(both()) == ["3 steps", "5 steps"]
    assert sum(heavy) == 3.0 and sum(light) == 1.25  # the run's 4.25 s, each request its own share
    assert len(heavy) == 4 and len(light) == 6  # a step per resumption, the last one ending it


def test_a_request_that_raises_or_is_cancelled_keeps_its_cpu(clock: list[float]):
    async def fails() -> None:
        clock[0] += 2.0
        await asyncio.sleep(0)
        clock[0] += 0.5
        raise ValueError("server-error")

    async def hangs() -> None:
        clock[0] += 1.0
        try:
            await asyncio.sleep(60)
        finally:
            clock[0] += 0.125  # its clean-up, run in the cancellation's step

    got: list[float] = []
    with pytest.raises(ValueError, match="server-error"):
        asyncio.run(cpumeter.metered(fails(), got.append))
    assert sum(got) == 2.5

    async def cancel() -> None:
        task = asyncio.ensure_future(cpumeter.metered(hangs(), got.append))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    got.clear()
    asyncio.run(cancel())
    assert sum(got) == 1.125
