"""A real `aiworkbook app` Voilà server on 127.0.0.1 for HTTP-level tests, and raw requests to it with any
Host, Origin, method and body (http.client sends the Host header it is given)."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from aiworkbook.cli.app_cmds import Launch, launch, serving

KERNEL_ID = re.compile(r'"kernelId":\s*"([0-9a-f-]{36})"')


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: str
    cookies: dict[str, str]

    @property
    def kernel_id(self) -> str | None:
        m = KERNEL_ID.search(self.body)
        return m.group(1) if m else None


@dataclass
class Server:
    spec: Launch
    proc: Any

    @property
    def port(self) -> int:
        return self.spec.port

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def request(
        self,
        method: str = "GET",
        path: str = "/",
        *,
        host: str | None = None,
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
        timeout: float = 60.0,
    ) -> Answer:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(
                method,
                path,
                body=body,
                headers={"Host": self.host if host is None else host, **(headers or {})},
            )
            resp = conn.getresponse()
            text = resp.read().decode("utf-8", "replace")
            cookies = dict(
                v.split(";", 1)[0].split("=", 1) for k, v in resp.getheaders() if k.lower() == "set-cookie"
            )
            return Answer(resp.status, {k.lower(): v for k, v in resp.getheaders()}, text, cookies)
        finally:
            conn.close()

    def alive(self, kernel_id: str) -> bool:
        """Whether the server still holds the kernel (its REST model answers)."""
        return self.request("GET", f"/api/kernels/{kernel_id}").status == 200

    def kernel_model(self, kernel_id: str) -> dict[str, Any] | None:
        import json

        a = self.request("GET", f"/api/kernels/{kernel_id}")
        return json.loads(a.body) if a.status == 200 else None

    def kernels(self) -> int:
        """Live kernel processes under the server (zombies not counted)."""
        import psutil

        n = 0
        for p in psutil.Process(self.proc.pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if p.status() != psutil.STATUS_ZOMBIE and any("ipykernel" in a for a in p.cmdline()):
                    n += 1
        return n

    def shutdown(self, kernel_id: str, xsrf: str | None, **kwargs: Any) -> Answer:
        """What Voilà's unload beacon sends: a POST with the page's _xsrf cookie as a form field
        (xsrf None: neither cookie nor field, as before the server set the cookie)."""
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        if xsrf is not None:
            headers["Cookie"] = f"_xsrf={xsrf}"
        body = f"_xsrf={xsrf}".encode() if xsrf is not None else b""
        return self.request("POST", f"/voila/api/shutdown/{kernel_id}", headers=headers, body=body, **kwargs)

    def websocket(
        self, kernel_id: str, *, host: str | None = None, origin: str | None = None, hold_s: float = 0.5
    ) -> int:
        """Open the kernel's channels websocket with this Host/Origin, hold it `hold_s`, close it: 101 when
        it connected, else the HTTP status of the refused handshake."""
        from tornado.httpclient import HTTPClientError, HTTPRequest
        from tornado.websocket import websocket_connect

        headers = {"Host": self.host if host is None else host}
        if origin is not None:
            headers["Origin"] = origin
        req = HTTPRequest(f"ws://127.0.0.1:{self.port}/api/kernels/{kernel_id}/channels", headers=headers)

        async def go() -> Any:
            try:
                ws = await asyncio.wait_for(websocket_connect(req), 30)
            except HTTPClientError as exc:
                return int(exc.code)
            await asyncio.sleep(hold_s)
            ws.close()
            await asyncio.sleep(0.2)  # let the close frame go out
            return 101

        return asyncio.run(go())


@contextlib.contextmanager
def running(name: str = "sizing", *extra_argv: str, **launch_kwargs: Any) -> Iterator[Server]:
    """`aiworkbook app NAME` (launch kwargs, and Voilà flags that replace the launch's own) while the block
    runs."""
    spec = launch(name, **launch_kwargs)
    keys = {f.split("=", 1)[0] + "=" for f in extra_argv}
    spec = replace(spec, argv=[*(a for a in spec.argv if not a.startswith(tuple(keys))), *extra_argv])
    with serving(spec) as proc:
        yield Server(spec, proc)
