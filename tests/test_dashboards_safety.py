"""Dashboards safe to share (issue 21, item 7): a Host/Origin allowlist against DNS rebinding, XSRF checks
on while a closed page still ends its kernel, a cap on live kernels with a plain 503 page, kernels with
no page culled within the documented time (a sampling monitor's too), and the token never on a command
line. The HTTP tests run one real `aiworkbook app monitor` server for the module, with short graces."""

from __future__ import annotations

import time

import psutil
import pytest
from dashboard_http import Server, running

from aiworkbook.cli import main
from aiworkbook.cli.app_cmds import (
    CULL_INTERVAL_S,
    DISCONNECT_GRACE_S,
    FIRST_CONNECT_S,
    MAX_VIEWERS,
    TOKEN_ENV,
    launch,
)
from aiworkbook.errors import SpecError
from aiworkbook.hosts import allowlist, parse_allow_host

CAP = 2
FIRST_S, GRACE_S, INTERVAL_S = 6.0, 2.0, 1
EVIL = "evil.example"


@pytest.fixture(scope="module")
def server():
    flags = (
        f"--ViewerKernelManager.first_connect_s={FIRST_S}",
        f"--ViewerKernelManager.disconnect_grace_s={GRACE_S}",
        f"--MappingKernelManager.cull_interval={INTERVAL_S}",
    )
    # the monitor, rendered in the GET: its kernel samples (activity) from the first answer on
    with running("monitor", *flags, progressive=False, max_viewers=CAP, allow_hosts=["dash.example"]) as s:
        yield s


def _wait_gone(s: Server, kernel_id: str, bound_s: float) -> float:
    """Seconds until the kernel is gone; fails past bound_s."""
    t0 = time.monotonic()
    while s.alive(kernel_id):
        if time.monotonic() - t0 > bound_s:
            pytest.fail(f"kernel {kernel_id} still alive after {bound_s:.0f} s")
        time.sleep(0.25)  # real time: a real Voilà server culls kernels on its own clock
    return time.monotonic() - t0


def _drain(s: Server, bound_s: float = 60) -> None:
    """Wait until the server holds no kernel (earlier tests' kernels culled)."""
    deadline = time.monotonic() + bound_s
    while s.kernels() and time.monotonic() < deadline:
        time.sleep(0.25)  # real time: the real server's culler runs on its own clock
    assert s.kernels() == 0


def _page(s: Server, host: str | None = None):
    a = s.request("GET", "/", host=host, timeout=120)
    assert a.status == 200 and a.kernel_id, (a.status, a.body[:300])
    return a


# -- the allowlist itself (the router rule) ---------------------------------------------------------


def test_allowlist_names_loopback_with_the_port_the_ip_and_allow_hosts():
    hosts = allowlist("10.0.0.5", 8866, ["dash.example", "proxy.example:443", "[fe80::1]"])
    for ok in (
        "127.0.0.1:8866",
        "LOCALHOST:8866",
        "[::1]:8866",
        "10.0.0.5:8866",
        "dash.example",
        "dash.example:1234",
        "proxy.example:443",
        "[fe80::1]:9",
    ):
        assert hosts.allows_host(ok), ok
    for bad in (
        "evil.example:8866",
        "127.0.0.1:8867",
        "localhost",
        "10.0.0.5:80",
        "proxy.example:444",
        "127.0.0.2:8866",
        "",
        None,
        "localhost:8866:1",
        "[::1:8866",
        "localhost.:8866",
        "dash.example.evil.example",
    ):
        assert not hosts.allows_host(bad), bad
    assert hosts.allows_origin(None) and hosts.allows_origin("http://localhost:8866")
    assert hosts.allows_origin("https://dash.example") and hosts.allows_origin("http://[::1]:8866/")
    for bad in ("null", "http://evil.example:8866", "file://", "ws://localhost:8866", "http://localhost:bad"):
        assert not hosts.allows_origin(bad), bad
    assert not hosts.all_local()  # 10.0.0.5 is not loopback: jupyter_server's check cannot be used
    assert allowlist("127.0.0.1", 1, ["dash.example"]).all_local()


def test_wildcard_bind_allows_this_machines_addresses():
    import socket

    hosts = allowlist("0.0.0.0", 9000)
    assert hosts.allows_host(f"{socket.gethostname()}:9000") and not hosts.allows_host("0.0.0.0:9000")
    assert not hosts.allows_host(f"{EVIL}:9000")


@pytest.mark.parametrize(
    "bad", ["", "*", "evil example", "a:b:c", "host:0", "host:70000", "0.0.0.0", "-x.com"]
)
def test_bad_allow_host_names_the_field(bad):
    with pytest.raises(SpecError) as err:
        parse_allow_host(bad)
    assert err.value.field == "allow-host"


def test_jupyter_servers_own_host_check_refuses_foreign_names():
    """What exists does the job on jupyter_server's handlers: allow_remote_access=False with
    local_hostnames (the settings the server adds) refuses a foreign Host even without the router rule."""
    from aiworkbook.widgets.dashboard_server import host_settings
    from jupyter_server.base.handlers import JupyterHandler
    from tornado.httputil import HTTPHeaders, HTTPServerRequest, RequestStartLine
    from tornado.web import Application

    settings = host_settings(allowlist("127.0.0.1", 8866, ["dash.example"]))
    assert settings["allow_remote_access"] is False
    app = Application(**settings)

    def allowed(host: str) -> bool:
        line = RequestStartLine("GET", "/", "HTTP/1.1")
        req = HTTPServerRequest(start_line=line, headers=HTTPHeaders({"Host": host}))
        req.connection = type("C", (), {"set_close_callback": lambda *a: None})()
        return JupyterHandler(app, req).check_host()

    assert allowed("localhost:8866") and allowed("127.0.0.1:8866") and allowed("dash.example:8866")
    assert not allowed(f"{EVIL}:8866")
    assert host_settings(allowlist("10.0.0.5", 8866)) == {}  # the router rule alone, then


# -- launch and CLI ---------------------------------------------------------------------------------


def test_launch_keeps_xsrf_on_and_caps_viewers():
    argv = " ".join(launch("sizing").argv)
    assert "disable_check_xsrf" not in argv
    assert f"--ViewerKernelManager.max_viewers={MAX_VIEWERS}" in argv and MAX_VIEWERS >= 2
    assert "-m aiworkbook.widgets.dashboard_server" in argv
    assert "allow_template_override=NO" in argv


def test_the_token_is_never_on_the_command_line():
    spec = launch("monitor", ip="10.0.0.5", port=9999, token="s3cret-token")
    assert not any("s3cret-token" in a for a in spec.argv)
    assert spec.env[TOKEN_ENV] == "s3cret-token"
    generated = launch("report", ip="0.0.0.0", port=9999)
    assert len(generated.env[TOKEN_ENV]) >= 24 and not any(
        generated.env[TOKEN_ENV] in a for a in generated.argv
    )


@pytest.mark.parametrize(
    "args, field",
    [
        (["--allow-host", "evil example"], "allow-host"),
        (["--max-viewers", "0"], "max-viewers"),
        (["--preheat", "3", "--max-viewers", "3"], "preheat"),
        (["--token-file", "/nonexistent/token"], "token-file"),
    ],
)
def test_cli_bad_sharing_values_exit_2(capsys, args, field):
    assert main(["app", "sizing", "--no-browser", "--print-command", *args]) == 2
    assert field in capsys.readouterr().err


def test_cli_token_from_file_or_environment_not_argv(capsys, tmp_path, monkeypatch):
    f = tmp_path / "token"
    f.write_text("from-a-file\n")
    assert main(["app", "sizing", "--no-browser", "--print-command", "--token-file", str(f)]) == 0
    cmd, url = capsys.readouterr().out.strip().splitlines()
    assert f"{TOKEN_ENV}=from-a-file " in cmd and url.endswith("?token=from-a-file")
    assert "--token" not in cmd.split("-m", 1)[1]
    monkeypatch.setenv(TOKEN_ENV, "from-the-env")
    assert main(["app", "sizing", "--no-browser", "--print-command"]) == 0
    assert capsys.readouterr().out.strip().endswith("?token=from-the-env")
    assert main(["app", "sizing", "--no-browser", "--print-command", "--token-file", str(f)]) == 2
    assert "token-file" in capsys.readouterr().err


def test_documented_cull_figures_are_the_launch_defaults():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "widgets.md").read_text()
    assert (
        f"{DISCONNECT_GRACE_S + CULL_INTERVAL_S} s" in doc and f"{FIRST_CONNECT_S + CULL_INTERVAL_S} s" in doc
    )


def test_viewer_kernel_manager_graces_with_an_injected_clock():
    from aiworkbook.widgets.dashboard_server import ViewerKernelManager

    km = ViewerKernelManager(first_connect_s=100, disconnect_grace_s=10)
    now = [0.0]
    km.clock = lambda: now[0]
    km._kernel_connections["k"] = 0
    km._alone_since["k"] = 0.0  # started, no page yet
    now[0] = 100.0
    assert not km.alone_too_long("k")
    now[0] = 100.5
    assert km.alone_too_long("k")
    km.notify_connect("k")
    now[0] = 1000.0
    assert not km.alone_too_long("k")  # connected: never alone, however long
    km.notify_disconnect("k")
    now[0] = 1010.0
    assert not km.alone_too_long("k")
    now[0] = 1010.5
    assert km.alone_too_long("k")  # after a connection closed: the short grace


# -- a real server ----------------------------------------------------------------------------------


def test_foreign_host_gets_403_everywhere_and_starts_no_kernel(server):
    _drain(server)
    mine = _page(server)
    before = server.kernels()
    for host in (f"{EVIL}:{server.port}", f"127.0.0.1:{server.port + 1}", "0.0.0.0:" + str(server.port)):
        for method, path in (
            ("GET", "/"),
            ("GET", f"/api/kernels/{mine.kernel_id}"),
            ("GET", "/voila/static/voila.js"),
            ("GET", "/voila/templates/lab/static/index.css"),
            ("POST", f"/voila/api/shutdown/{mine.kernel_id}"),
            ("DELETE", f"/api/kernels/{mine.kernel_id}"),
        ):
            a = server.request(method, path, host=host)
            assert a.status == 403 and a.kernel_id is None and "kernelId" not in a.body, (host, method, path)
        assert server.websocket(mine.kernel_id, host=host) == 403
    assert server.kernels() == before and server.alive(mine.kernel_id)
    assert server.shutdown(mine.kernel_id, mine.cookies["_xsrf"]).status == 204


def test_websocket_origin_is_checked_against_the_same_names(server):
    _drain(server)
    mine = _page(server)
    for origin in (f"http://{EVIL}:{server.port}", "null", f"http://127.0.0.1:{server.port + 1}"):
        assert server.websocket(mine.kernel_id, origin=origin) == 403, origin
    assert server.websocket(mine.kernel_id, origin=f"http://127.0.0.1:{server.port}") == 101
    a = server.request("GET", "/", headers={"Origin": f"http://{EVIL}"})
    assert a.status == 403 and a.kernel_id is None
    assert server.shutdown(mine.kernel_id, mine.cookies["_xsrf"]).status == 204


def test_allowed_names_are_served(server):
    for host in (f"localhost:{server.port}", f"[::1]:{server.port}", "dash.example", "dash.example:8080"):
        _drain(server)
        a = _page(server, host=host)
        assert server.shutdown(a.kernel_id, a.cookies["_xsrf"], host=host).status == 204


def test_xsrf_is_checked_and_the_pages_cookie_ends_its_kernel(server):
    _drain(server)
    a = _page(server)
    assert "_xsrf" in a.cookies  # set by the page: Voilà's unload beacon sends it back
    assert server.shutdown(a.kernel_id, None).status == 403  # no token: refused, kernel lives
    forged = "2|00000000|" + "0" * 32 + "|1"
    assert (
        server.request("POST", f"/voila/api/shutdown/{a.kernel_id}", body=f"_xsrf={forged}".encode()).status
        == 403
    )  # a field without the matching cookie
    assert server.alive(a.kernel_id)
    assert server.shutdown(a.kernel_id, a.cookies["_xsrf"]).status == 204
    assert not server.alive(a.kernel_id)


def test_viewer_cap_gives_a_plain_503_page(server):
    _drain(server)
    pages = [_page(server) for _ in range(CAP)]
    full = server.request("GET", "/")
    assert full.status == 503 and full.kernel_id is None
    assert "full" in full.body and "Try again later" in full.body and "Traceback" not in full.body
    assert full.headers.get("retry-after") == "60"
    assert server.kernels() == CAP
    assert server.shutdown(pages[0].kernel_id, pages[0].cookies["_xsrf"]).status == 204
    again = _page(server)  # a seat came free
    for p in (pages[1], again):
        server.shutdown(p.kernel_id, p.cookies["_xsrf"])


@pytest.mark.timeout(180)
def test_eight_plain_page_loads_at_once_fill_the_cap_and_the_rest_get_the_full_page(server):
    """Eight page loads at once, none of which ever opens its websocket (a crawler, a script): CAP of
    them render, every other one gets the plain 503 page (none waits for a seat), and the seats come
    free once the pages' kernels are culled for never connecting."""
    from concurrent.futures import ThreadPoolExecutor

    _drain(server)
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: server.request("GET", "/", timeout=120), range(8)))
    ok = [a for a in answers if a.status == 200]
    full = [a for a in answers if a.status != 200]
    assert len(ok) == CAP and all(a.kernel_id for a in ok), [a.status for a in answers]
    assert all(a.status == 503 and "This dashboard is full" in a.body for a in full), [a.status for a in full]
    assert all("Traceback" not in a.body for a in answers)
    assert server.kernels() == CAP
    for a in ok:
        _wait_gone(server, a.kernel_id, FIRST_S + INTERVAL_S + 10)
    again = _page(server)  # a seat came free without anyone shutting a kernel down
    server.shutdown(again.kernel_id, again.cookies["_xsrf"])


def test_a_page_that_never_connects_is_culled_within_its_grace(server):
    _drain(server)
    a = _page(server)
    took = _wait_gone(server, a.kernel_id, FIRST_S + INTERVAL_S + 10)
    assert took <= FIRST_S + INTERVAL_S + 10


def test_a_sampling_monitor_whose_page_went_away_is_culled(server):
    """The monitor's samples keep its kernel active (idle culling never ends it): once its last websocket
    closed, it is shut down within disconnect grace + cull interval anyway."""
    _drain(server)
    a = _page(server)
    assert server.websocket(a.kernel_id, hold_s=1.0) == 101  # the page connected, then its browser died
    closed = time.time()
    active_after_close = False
    t0 = time.monotonic()
    while (model := server.kernel_model(a.kernel_id)) is not None:
        from datetime import datetime

        last = datetime.fromisoformat(model["last_activity"].replace("Z", "+00:00")).timestamp()
        active_after_close |= last > closed
        # real time: the server's disconnect grace and cull interval are real seconds; the bound fails a leak
        assert time.monotonic() - t0 < GRACE_S + INTERVAL_S + 10, "the monitor's kernel outlived its page"
        time.sleep(0.2)
    assert active_after_close, "the monitor did not sample after its page left (nothing to prove)"


def test_token_reaches_the_server_but_not_its_command_line_or_kernels(tmp_path):
    with running("sizing", token="tok-" + "x" * 20) as s:
        cmdlines = [psutil.Process(s.proc.pid).cmdline()]
        assert s.request("GET", "/").status in (302, 403)  # no token: no page (login redirect)
        a = s.request("GET", "/?token=tok-" + "x" * 20, timeout=120)
        assert a.status == 200 and a.kernel_id
        kernels = [
            p
            for p in psutil.Process(s.proc.pid).children(recursive=True)
            if "ipykernel" in " ".join(p.cmdline())
        ]
        assert kernels and all(TOKEN_ENV not in p.environ() for p in kernels)
        cmdlines += [p.cmdline() for p in kernels]
        assert not any("tok-" in part for line in cmdlines for part in line)


def test_what_the_fuzzer_found_is_a_404_not_a_500(server):
    """tests/test_dashboards_fuzz.py found three 500s in Voilà's routes: a path with a control character
    (the page handler redirects it to /voila/files/, an unsafe Location), /voila/templates/ without
    NAME/static/FILE (an assert in Voilà) and /logout (a template Voilà lacks)."""
    for path in ("/%1F", "/api/kernels/%1F", "/voila/templates/", "/voila/templates/x", "/logout", "/a/b"):
        a = server.request("GET", path)
        assert a.status == 404 and a.kernel_id is None and "Traceback" not in a.body, (path, a.status)
