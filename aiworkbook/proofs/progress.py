"""How a proof shows progress, in one place: `steps()` runs a proof's units of work and reports each to
the active control (the viewer's `progress(done, total, message)` callback: the ProofRunner widget's
bar, the CLI's; a cancel lands between units), and on a tqdm bar when a direct library call asked for
one (`prove_kv(..., progress=True)`); `units()` and `counted_bytes()` report a count a proof keeps
itself (batches read, bytes written: `byte_counter()` for a writer or reader that counts its bytes),
each saying what it counts, so a viewer draws bytes as bytes (`counts()`). `TqdmProgress` is that
callback drawn on a tqdm bar, the one the `prove` commands run every proof with (`run()`). No proof
calls `control.step` itself.

No torch import here: the CLI and the registry import this module before any proof runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from aiworkbook.message import words
from aiworkbook.proofs.control import BYTES as BYTES
from aiworkbook.proofs.control import UNITS as UNITS
from aiworkbook.proofs.control import Control, Viewer, report
from aiworkbook.proofs.control import counts as counts

T = TypeVar("T")


def bar(total: int, desc: str, enabled: bool = True) -> Any:
    """A tqdm bar (tqdm.auto: a widget in a notebook, text on a terminal) that leaves no line behind;
    disabled (draws nothing) unless `enabled`."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, disable=not enabled, leave=False)


def steps(
    items: Iterable[T],
    message: Callable[[int, T], str],
    *,
    total: int | None = None,
    start: int = 0,
    desc: str = "",
    show: bool = False,
    control: Control | None = None,
) -> Iterator[T]:
    """Each of `items` in turn, after reporting (start + i, total, message(i, item)) to `control` (by
    default the active one; a cancel raises Cancelled here); `total` defaults to start + the number of
    items (a proof with steps of its own before or after counts them in). With `show`, also a tqdm bar
    titled `desc`, closed however the loop ends."""
    seq = list(items)
    n = start + len(seq) if total is None else total
    to = report if control is None else control.step
    b = bar(len(seq), desc, show)
    try:
        for i, item in enumerate(seq):
            to(start + i, n, message(i, item))
            yield item
            b.update(1)
    finally:
        b.close()


def units(control: Control, done: int, total: int, message: str) -> None:
    """`done` of `total` units of work a proof counts itself, to `control` (then a cancel lands)."""
    control.step(done, total, message, UNITS)


def counted_bytes(control: Control, done: int, total: int, message: str) -> None:
    """`done` of `total` bytes written or read, to `control` (then a cancel lands)."""
    control.step(done, total, message, BYTES)


def byte_counter(control: Control, total: int, message: str, before: int = 0) -> Callable[[int], None]:
    """A callback for a writer or reader that counts its own bytes (fsio, shardio): each call with n
    reports before + n of `total` bytes."""

    def count(n: int) -> None:
        counted_bytes(control, before + n, total, message)

    return count


class Relay(Viewer):
    """A Viewer that hands each report, its unit included, to `show(done, total, message, unit)` (a
    widget posting it to its own thread)."""

    def __init__(self, show: Callable[[int, int, str, str], None]) -> None:
        self.show = show

    def __call__(self, done: int, total: int, message: str, unit: str = UNITS) -> None:
        self.show(done, total, message, unit)


class TqdmProgress(Viewer):
    """A progress(done, total, message) callback drawn on one tqdm bar, bytes as bytes (binary
    multiples) and units as units. A report repeated as it was (a proof polling a subprocess) is
    dropped; the bar redraws at most every tqdm mininterval, so per-request messages do not flood a
    log."""

    def __init__(self, desc: str, lang: str = "en") -> None:
        self.bar = bar(0, desc)
        self.lang = lang  # a message among the labels is said in it
        self._last: tuple[int, int, str, str] | None = None

    def __call__(self, done: int, total: int, message: str, unit: str = UNITS) -> None:
        if self._last == (done, total, message, unit):
            return
        if self._last is None or self._last[3] != unit:
            self.bar.unit, self.bar.unit_scale = ("B", True) if unit == BYTES else ("it", False)
            self.bar.unit_divisor = 1024 if unit == BYTES else 1000
        self._last = (done, total, message, unit)
        if self.bar.total != total:
            self.bar.total = total
        self.bar.set_postfix_str(words(message, self.lang)[:60], refresh=False)
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        self.bar.close()


def run(name: str, inputs: dict[str, Any], lang: str = "en") -> Any:
    """registry.run(name, **inputs) drawn on a TqdmProgress bar, its labels said in `lang` (closed however
    the run ends); bad input is refused before the bar is drawn."""
    from aiworkbook.proofs import registry

    model = registry.get(name).build(None, inputs)
    shown = TqdmProgress(name, lang)
    try:
        return registry.run(name, model, progress=shown)
    finally:
        shown.close()
