"""A bounded, thread-safe ring buffer: the sampler thread appends, readers copy a slice."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg

T = TypeVar("T")


class Ring(Generic[T]):
    """Keeps the newest `capacity` items; the oldest fall off (counted in `dropped`)."""

    def __init__(self, capacity: int) -> None:
        if not isinstance(capacity, int) or capacity < 1:
            raise SpecError("capacity", capacity, Msg("allowed.int_min", low=1))
        self.capacity = capacity
        self.dropped = 0
        self._items: deque[T] = deque(maxlen=capacity)
        self._lock = threading.Lock()

    def append(self, item: T) -> None:
        with self._lock:
            if len(self._items) == self.capacity:
                self.dropped += 1
            self._items.append(item)

    def items(self, keep: Callable[[T], bool] | None = None) -> list[T]:
        """A copy, oldest first, optionally filtered."""
        with self._lock:
            snapshot = list(self._items)
        return snapshot if keep is None else [x for x in snapshot if keep(x)]

    def last(self) -> T | None:
        with self._lock:
            return self._items[-1] if self._items else None

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)
