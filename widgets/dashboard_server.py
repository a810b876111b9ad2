"""The Voilà server behind `aiworkbook app`: Voilà with what a shared dashboard needs.

`python -m aiworkbook.widgets.dashboard_server NOTEBOOK [Voilà flags]` runs Voilà's own application with:
- a Host/Origin allowlist in front of every route (pages, API, websockets, static files): a request
  naming any other host gets 403 before a kernel starts, which defeats DNS rebinding. jupyter_server's
  own check (allow_remote_access=False, local_hostnames) refuses the same names on its handlers when
  every allowed address is loopback; the router rule also covers Voilà's static handlers, the port,
  a non-loopback --ip and the Origin of websockets.
- XSRF checking on: the page sets the `_xsrf` cookie that Voilà's unload beacon sends back with its
  shutdown POST (voila-dashboards/voila#1458: the cookie was never set, so the beacon got 403).
- at most `ViewerKernelManager.max_viewers` kernels; one more viewer gets a plain 503 page.
- a kernel that no page has been connected to for a grace period is shut down, busy or not (a live
  monitor's samples count as activity, so idle culling alone never ends it).
- the token from the AIWORKBOOK_TOKEN environment variable (removed before any kernel inherits it),
  never from the command line, where `ps` shows it to every user of the machine.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from jupyter_core.utils import ensure_async
from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from jupyter_server.utils import url_path_join
from tornado import web
from tornado.httputil import HTTPServerRequest
from tornado.routing import Matcher, Rule
from traitlets import Float, Int, List, Unicode, default
from voila.app import Voila
from voila.tornado.handler import TornadoVoilaHandler

from aiworkbook.hosts import HostAllowlist, allowlist
from aiworkbook.paths import CHART_BUNDLE_PREFIX, CHART_JS_ENV, TOKEN_ENV, cache_dir

FULL_PAGE = (
    "<!doctype html><html><head><meta charset='utf-8'><title>Dashboard full</title></head>"
    "<body><h1>This dashboard is full</h1><p>{n} viewers are using it now. Try again later.</p>"
    "</body></html>"
)
REFUSED = "403: this dashboard does not answer to that host name or origin\n"


#: the page request now running in this task: the kernel it starts counts as connected while it renders
_PAGE: ContextVar[tuple[DashboardPage | None, asyncio.Task | None]] = ContextVar(
    "aiworkbook_dashboard_page", default=(None, None)
)


class ViewersFull(web.HTTPError):
    """The kernel cap is reached: the page handler answers 503 with FULL_PAGE."""

    def __init__(self, cap: int) -> None:
        super().__init__(503, reason="Dashboard full")
        self.cap = cap


class ViewerKernelManager(AsyncMappingKernelManager):
    """Voilà's kernel manager with a cap on live kernels and culling of kernels no page is connected to."""

    max_viewers = Int(8, config=True, help="Most live kernels (one per viewer); one more gets 503.")
    first_connect_s = Float(
        120.0, config=True, help="A kernel no page has connected to this long after it started is culled."
    )
    disconnect_grace_s = Float(
        20.0, config=True, help="A kernel whose last page connection closed this long ago is culled."
    )
    clock: Callable[[], float] = staticmethod(time.monotonic)  # tests inject their own

    @default("cull_idle_timeout")
    def _cull_idle_default(self) -> int:
        return 600  # jupyter_server runs its culler (and so cull_kernel_if_idle below) only when > 0

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._starting = 0
        self._alone_since: dict[str, float] = {}  # kernel id -> when its page connections reached 0
        self._connected_once: set[str] = set()
        self._seen: set[str] = set()  # kernels cull_kernel_if_idle has looked at

    def live(self) -> int:
        """Kernels running or starting now."""
        return len(self.list_kernel_ids()) + self._starting

    async def start_kernel(self, *args: Any, **kwargs: Any) -> str:  # type: ignore[override]
        if self.live() >= self.max_viewers:  # checked and counted with no await between: no race
            self.log.warning("Dashboard full: %d kernels live, refusing another", self.max_viewers)
            raise ViewersFull(self.max_viewers)
        self._starting += 1
        try:
            kernel_id = await super().start_kernel(*args, **kwargs)
        finally:
            self._starting -= 1
        kernel_id = str(kernel_id)
        page, task = _PAGE.get()
        if page is not None and task is asyncio.current_task():  # the page request's own kernel (not
            page.rendering = kernel_id  # a pre-heat refill it set off): not alone while it renders
            super().notify_connect(kernel_id)
        else:
            self._alone_since[kernel_id] = self.clock()
        return kernel_id

    def page_done(self, kernel_id: str) -> None:
        """The page request that started `kernel_id` ended: the page's websocket has first_connect_s
        to connect."""
        super().notify_disconnect(kernel_id)
        if self._kernel_connections.get(kernel_id, 1) <= 0:
            self._alone_since[kernel_id] = self.clock()

    def notify_connect(self, kernel_id: str) -> None:
        super().notify_connect(kernel_id)
        self._alone_since.pop(kernel_id, None)
        self._connected_once.add(kernel_id)

    def notify_disconnect(self, kernel_id: str) -> None:
        super().notify_disconnect(kernel_id)
        if self._kernel_connections.get(kernel_id, 0) <= 0 and kernel_id in self._kernel_connections:
            self._alone_since[kernel_id] = self.clock()

    def alone_too_long(self, kernel_id: str) -> bool:
        """No page connected for longer than the grace: first_connect_s for a kernel never connected
        (the page is still loading), disconnect_grace_s after its last connection closed."""
        since = self._alone_since.get(kernel_id)
        if since is None or self._kernel_connections.get(kernel_id, 0) > 0:
            return False
        grace = self.disconnect_grace_s if kernel_id in self._connected_once else self.first_connect_s
        return self.clock() - since > grace

    async def cull_kernels(self) -> None:
        for gone in (set(self._alone_since) | self._connected_once | self._seen) - set(self._kernels):
            self._alone_since.pop(gone, None)
            self._connected_once.discard(gone)
            self._seen.discard(gone)
        await super().cull_kernels()

    async def cull_kernel_if_idle(self, kernel_id: str) -> None:
        # Voilà's pre-heat manager does not call this for a kernel still in its pool: the first call
        # comes once a viewer has it, so its wait for a page starts then, not when it was warmed.
        if kernel_id not in self._seen:
            self._seen.add(kernel_id)
            pooled = hasattr(self, "_pools")  # Voilà's pre-heat manager (--preheat)
            if pooled and kernel_id in self._alone_since and kernel_id not in self._connected_once:
                self._alone_since[kernel_id] = self.clock()
        if self.alone_too_long(kernel_id):
            self.log.warning("Culling kernel %s: no page connected to it", kernel_id)
            await ensure_async(self.shutdown_kernel(kernel_id))
            return
        await super().cull_kernel_if_idle(kernel_id)


class DashboardPage(TornadoVoilaHandler):
    """Voilà's page handler that serves only `/`, sets the `_xsrf` cookie (Voilà's unload beacon sends it
    back, so the shutdown POST passes the XSRF check) and answers a full dashboard with a plain 503 page."""

    rendering: str | None = None  # the kernel this request started (ViewerKernelManager.start_kernel)

    def get(self, path: str | None = None) -> Any:
        if path:  # one dashboard, one page: Voilà would redirect to /voila/files/PATH (a 500 for a
            raise web.HTTPError(404)  # path with control characters, found by tests/test_dashboards_fuzz.py)
        self.xsrf_token  # noqa: B018 - reading it sets the cookie
        bundle = newest_chart_bundle()
        if bundle is not None:  # fetched and compiled while the kernel starts, not after its first chart
            url = url_path_join(self.base_url, CHART_JS_PATH, bundle)
            self.set_header("Link", f"<{url}>; rel=modulepreload")
        _PAGE.set((self, asyncio.current_task()))
        return super().get(path)

    def _page_done(self) -> None:
        kernel_id, self.rendering = self.rendering, None
        if kernel_id is not None:
            self.kernel_manager.page_done(kernel_id)

    def on_finish(self) -> None:
        self._page_done()
        super().on_finish()

    def on_connection_close(self) -> None:
        self._page_done()
        super().on_connection_close()

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        exc = kwargs.get("exc_info", (None, None, None))[1]
        if isinstance(exc, ViewersFull):
            self.set_header("Content-Type", "text/html; charset=utf-8")
            self.set_header("Retry-After", "60")
            self.finish(FULL_PAGE.format(n=exc.cap))
            return
        super().write_error(status_code, **kwargs)


class _BadPathIs404:
    """Mixed into Voilà's static file handlers: a path they cannot split (`/voila/templates/` with no
    `NAME/static/FILE`, found by tests/test_dashboards_fuzz.py) fails an assert or a tuple unpacking
    inside Voilà, a 500; it is a file that is not there."""

    async def get(self, path: str, include_body: bool = True) -> None:
        try:
            await super().get(path, include_body)  # type: ignore[misc]
        except (AssertionError, ValueError):
            raise web.HTTPError(404) from None


def _guarded(handler: Any) -> Any:
    if isinstance(handler, type) and issubclass(handler, web.StaticFileHandler):
        return type(handler.__name__, (_BadPathIs404, handler), {})
    return DashboardPage if handler is TornadoVoilaHandler else handler


def _is_logout(handler: Any) -> bool:
    from jupyter_server.auth.logout import LogoutHandler

    return isinstance(handler, type) and issubclass(handler, LogoutHandler)


#: where the page finds Altair's offline bundle (under the base URL): aiworkbook.widgets.base.chart_view
CHART_JS_PATH = "aiwb/charts/"


class ChartBundle(web.StaticFileHandler):
    """Altair's offline JupyterChart bundle as the kernels cached it (aiworkbook.charts.render): every
    chart of a page imports this one URL, so the browser fetches and evaluates ~0.9 MB once per page,
    not once per chart, and the kernels no longer send it with each chart. Only the cache's
    content-named bundles are served (the route's pattern), kept for a year: a new bundle has a new name."""

    def get_cache_time(self, path: str, modified: Any, mime_type: str) -> int:
        return 365 * 24 * 3600


def newest_chart_bundle() -> str | None:
    """The name of the newest chart bundle the kernels cached (aiworkbook.charts.render), or None. The
    page names it in a `Link: rel=modulepreload` header, so the browser fetches and compiles Altair's
    ~0.9 MB of JavaScript while the kernel starts and runs the cells, instead of after the first chart
    arrives (about half a second of a sizing page's load on two cores). The newest: a kernel writes a
    new one only when vl-convert or Vega-Lite change; a bundle no chart imports costs one fetch."""
    import re

    name = re.compile(rf"{CHART_BUNDLE_PREFIX}[0-9a-f]{{32}}\.js")
    try:
        found = [
            (p.stat().st_mtime, p.name)
            for p in cache_dir().glob(f"{CHART_BUNDLE_PREFIX}*.js")
            if name.fullmatch(p.name)
        ]
    except OSError:
        return None
    return max(found)[1] if found else None


def chart_bundle_route(server_url: str) -> tuple[str, type[ChartBundle], dict[str, str]]:
    pattern = url_path_join(server_url, CHART_JS_PATH, rf"({CHART_BUNDLE_PREFIX}[0-9a-f]{{32}}\.js)")
    return (pattern, ChartBundle, {"path": str(cache_dir())})


class _Foreign(Matcher):
    """Matches a request whose Host or Origin names no allowed host (then the Refused handler runs)."""

    def __init__(self, hosts: HostAllowlist) -> None:
        self.hosts = hosts

    def match(self, request: HTTPServerRequest) -> dict[str, Any] | None:
        headers = request.headers
        origin = headers.get("Origin", headers.get("Sec-Websocket-Origin"))
        if self.hosts.allows_host(headers.get("Host")) and self.hosts.allows_origin(origin):
            return None
        return {}


class _EveryMethod(tuple):
    def __contains__(self, method: object) -> bool:
        return True


class Refused(web.RequestHandler):
    """403 for every method (PROPFIND too, not 405), before any handler (and any kernel) runs."""

    SUPPORTED_METHODS = _EveryMethod()  # type: ignore[assignment]

    def prepare(self) -> None:
        self.set_status(403)
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.finish(REFUSED)


def host_settings(hosts: HostAllowlist) -> dict[str, Any]:
    """jupyter_server's own Host check, where it refuses exactly the foreign names (it cannot allow a
    non-loopback IP address: then the router rule alone does it)."""
    if not hosts.all_local():
        return {}
    return {"allow_remote_access": False, "local_hostnames": hosts.hostnames()}


class DashboardVoila(Voila):
    """Voilà for one aiworkbook dashboard (see the module docstring)."""

    allow_hosts = List(Unicode(), config=True, help="Host names allowed besides loopback and --ip.")
    hosts: HostAllowlist

    def initialize(self, argv: Any = None) -> None:
        token = os.environ.pop(TOKEN_ENV, None)  # not inherited by the kernels
        super().initialize(argv)
        if token:
            self.token = token
        os.environ[CHART_JS_ENV] = url_path_join(self.base_url, CHART_JS_PATH)  # the kernels inherit it
        self.port_retries = 0  # the allowlist names this port: never serve on another
        self.hosts = allowlist(self.ip, self.port, self.allow_hosts)

    def init_settings(self) -> dict[str, Any]:
        settings: dict[str, Any] = super().init_settings()
        settings.update(host_settings(self.hosts))
        settings["ws_ping_interval"] = 10_000  # a vanished browser's websocket closes after 30 s
        return settings

    def init_handlers(self) -> list[Any]:
        # no /logout: jupyter_server's page wants a logout.html Voilà's templates lack (a 500, found by
        # tests/test_dashboards_fuzz.py); the path then gets the page handler's 404
        handlers = [h for h in super().init_handlers() if not _is_logout(h[1])]
        bundle = chart_bundle_route(self.server_url or self.base_url)  # before the page's catch-all
        return [bundle, *((h[0], _guarded(h[1]), *h[2:]) for h in handlers)]

    def listen(self) -> None:
        router = self.app.default_router
        router.rules.insert(0, router.process_rule(Rule(_Foreign(self.hosts), Refused)))
        super().listen()


main = DashboardVoila.launch_instance

if __name__ == "__main__":
    # run the imported module, not this __main__ copy: the kernel manager Voilà loads by name must share
    # its classes and context variable with the page handler
    from aiworkbook.widgets.dashboard_server import main as _main

    _main()
