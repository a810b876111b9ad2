"""One bounded HTTP GET for everything the project fetches from a server someone else runs.

urllib's `timeout` bounds each socket read, so a server that sends one byte every two seconds holds a
request for ever; it follows redirects to any host (and the data is then credited to the URL typed);
and it reads whatever size it is sent. Here a request has one deadline for the whole exchange
(connect, headers, body), a size cap, only http/https, and redirects only to the same origin (scheme,
host and port), at most MAX_REDIRECTS, each reported in `Answer.redirects`. Any failure is a
FetchError whose text is one short line.
"""

from __future__ import annotations

import http.client
import socket
import threading
import time
import urllib.parse
from dataclasses import dataclass

from aiworkbook.errors import printable
from aiworkbook.message import Msg, quoted

#: the most bytes one answer may have unless the caller says otherwise
MAX_BYTES = 64 * 2**20
MAX_REDIRECTS = 5
#: the longest quote of a server's words an error carries
QUOTE = 200


class FetchError(OSError):
    """The server could not be read within the bounds: no answer, too slow, too large, a redirect
    elsewhere, a scheme other than http(s)."""


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    url: str  # the URL that answered (the one asked for, or a same-origin redirect of it)
    redirects: tuple[str, ...] = ()
    server: str = ""  # the answer's Server header, as it says of itself (cut to 120 characters)


def _origin(parts: urllib.parse.SplitResult) -> tuple[str, str, int]:
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return parts.scheme, (parts.hostname or "").lower(), port


def _split(url: str) -> urllib.parse.SplitResult:
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError as exc:
        raise FetchError(Msg("fetch.not_url", url=printable(url, QUOTE), why=quoted(exc))) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FetchError(Msg("fetch.scheme", url=printable(url, QUOTE)))
    return parts


def get(
    url: str,
    *,
    deadline_s: float,
    max_bytes: int = MAX_BYTES,
    headers: dict[str, str] | None = None,
    clock=time.monotonic,
) -> Answer:
    """GET `url` within `deadline_s` seconds in all and at most `max_bytes` of body."""
    end = clock() + float(deadline_s)
    parts = _split(url)
    first = _origin(parts)
    redirects: list[str] = []
    while True:
        status, location, body, server = _one(parts, end, max_bytes, headers or {}, clock)
        if status not in (301, 302, 303, 307, 308) or location is None:
            return Answer(status, body, parts.geturl(), tuple(redirects), server)
        target = urllib.parse.urljoin(parts.geturl(), location)
        nxt = _split(target) if target.startswith(("http://", "https://")) else None
        if nxt is None or _origin(nxt) != first:
            raise FetchError(
                Msg("fetch.other_origin", url=printable(url, QUOTE), target=printable(target, QUOTE))
            )
        if len(redirects) >= MAX_REDIRECTS:
            raise FetchError(Msg("fetch.redirects", url=printable(url, QUOTE), n=MAX_REDIRECTS))
        redirects.append(target)
        parts = nxt


def _left(end: float, clock, url: str) -> float:
    left = end - clock()
    if left <= 0:
        raise FetchError(Msg("fetch.deadline", url=printable(url, QUOTE)))
    return left


def _one(
    parts, end: float, max_bytes: int, headers: dict[str, str], clock
) -> tuple[int, str | None, bytes, str]:
    url = parts.geturl()
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = cls(parts.hostname, parts.port, timeout=_left(end, clock, url))
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    watchdog: threading.Timer | None = None
    try:
        conn.connect()
        sock = conn.sock
        # a server trickling its headers a byte at a time would restart each read's timeout: at the
        # deadline the socket is shut, whatever phase the exchange is in
        watchdog = threading.Timer(_left(end, clock, url), _shut, (sock,))
        watchdog.daemon = True
        watchdog.start()
        conn.request("GET", path, headers={"Accept": "application/json", **headers})
        if sock is not None:
            sock.settimeout(_left(end, clock, url))
        resp = conn.getresponse()
        declared = resp.length  # http.client's reading of Content-Length: None when absent or not a number
        if declared is not None and declared > max_bytes:  # refused before any of the body is read
            raise FetchError(
                Msg("fetch.declared_over", url=printable(url, QUOTE), size=declared, max=max_bytes)
            )
        chunks, size = [], 0
        while True:
            if sock is not None:
                sock.settimeout(_left(end, clock, url))
            chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(65536)
            if not chunk:
                break
            size += len(chunk)
            if size > max_bytes:
                raise FetchError(Msg("fetch.over", url=printable(url, QUOTE), max=max_bytes))
            chunks.append(chunk)
            _left(end, clock, url)
        _left(end, clock, url)  # a body cut short by the watchdog is not an answer
        server = (resp.getheader("Server") or "")[:120]
        return resp.status, resp.getheader("Location"), b"".join(chunks), server
    except FetchError:
        raise
    except TimeoutError:
        raise FetchError(Msg("fetch.deadline", url=printable(url, QUOTE))) from None
    except (OSError, http.client.HTTPException, ValueError) as exc:
        _left(end, clock, url)  # the watchdog's shutdown surfaces as a reset or an incomplete read
        raise FetchError(
            f"{printable(url, QUOTE)}: {printable(str(exc) or type(exc).__name__, QUOTE)}"
        ) from None
    finally:
        if watchdog is not None:
            watchdog.cancel()
        conn.close()


def _shut(sock) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
