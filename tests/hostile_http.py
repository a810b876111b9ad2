"""Hostile HTTP servers on loopback for the tests of what the project reads from servers someone else
runs (Prometheus, a serving target): each a ThreadingHTTPServer whose handler reads its `mode` (and
`other`, a second origin to redirect to) from the server."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    """Quiet, with `_send` for a whole answer of a stated length."""

    def log_message(self, *args):  # quiet
        pass

    def _send(self, body: bytes, status: int = 200, headers: dict | None = None) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def servers(handler: type[BaseHTTPRequestHandler]) -> Iterator[Callable[..., str]]:
    """A fixture body: yields start(mode, other="") -> base URL; every server started is shut after."""
    started: list[ThreadingHTTPServer] = []

    def start(mode: str, other: str = "") -> str:
        srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        srv.daemon_threads = True
        srv.mode = mode  # type: ignore[attr-defined]
        srv.other = other  # type: ignore[attr-defined]
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        started.append(srv)
        return f"http://127.0.0.1:{srv.server_address[1]}"

    try:
        yield start
    finally:
        for srv in started:
            srv.shutdown()
            srv.server_close()
