"""Rates from monotonically increasing counters (energy, disk and network bytes): delta over the time
between the two reads. The first read, a counter that went backwards (reset, wrap) and a zero time
step give NA instead of a wrong number."""

from __future__ import annotations

from aiworkbook.telemetry.na import NA, is_number


class RateTracker:
    """Remembers the last (time, value) per key; `rate(key, value, t)` returns units per second."""

    def __init__(self) -> None:
        self._last: dict[str, tuple[float, float]] = {}

    def rate(self, key: str, value, t: float, scale: float = 1.0):
        if not is_number(value):
            self._last.pop(key, None)
            return value if isinstance(value, NA) else NA("counter not available")
        prev = self._last.get(key)
        self._last[key] = (t, float(value))
        if prev is None:
            return NA("first sample (no delta yet)")
        dt = t - prev[0]
        dv = float(value) - prev[1]
        if dt <= 0:
            return NA("no time elapsed")
        if dv < 0:
            return NA("counter reset")
        return dv * scale / dt
