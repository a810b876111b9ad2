"""Test helpers for the embedded server: every record its loggers write, and a raw POST."""

from __future__ import annotations

import contextlib
import logging
import urllib.error
import urllib.request
from collections.abc import Iterator

LOGGERS = ("aiohttp", "aiworkbook")


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def server_records() -> Iterator[list[logging.LogRecord]]:
    """Every record of aiohttp's and aiworkbook's loggers, at every level, while the block runs."""
    h = _Records()
    loggers = [logging.getLogger(n) for n in LOGGERS]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.addHandler(h)
        lg.setLevel(logging.DEBUG)
    try:
        yield h.records
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.removeHandler(h)
            lg.setLevel(level)


def loud(records: list[logging.LogRecord]) -> list[str]:
    """Records at WARNING or above, or carrying a traceback."""
    return [r.getMessage() for r in records if r.levelno >= logging.WARNING or r.exc_info]


def post(url: str, raw: bytes, timeout: float = 30) -> tuple[int, str, bytes]:
    """(status, content type, body) of a POST of raw bytes as JSON; an HTTP error is an answer too."""
    req = urllib.request.Request(url, raw, {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read()
