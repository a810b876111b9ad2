"""`aiworkbook app [sizing|monitor|report]`: serve one Voilà dashboard for stakeholders.

Voilà runs as its own process on a dashboard notebook shipped in aiworkbook.widgets (package data);
this module imports no widget (the server is aiworkbook.widgets.dashboard_server, Voilà plus the hooks
below). Safe by default: 127.0.0.1, tracebacks hidden, sources stripped, proofs off unless --allow-proofs
(the report dashboard reads ALLOW_PROOFS_ENV; the registry's one proof lock keeps them one at a time).
Safe to share: only the loopback names, the --ip address and --allow-host names are answered (DNS
rebinding), XSRF checks on, at most --max-viewers kernels, kernels without a page culled, and the token
passed to the server in its environment, never on a command line `ps` shows.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import os
import secrets
import shlex
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import typer

from aiworkbook.catalogue import check_lang
from aiworkbook.cli.lang import said
from aiworkbook.cli.options import option
from aiworkbook.i18n_format import LANG_ENV  # noqa: F401  (the page language `--lang` sets; defined there)
from aiworkbook.message import Msg
from aiworkbook.paths import TOKEN_ENV

DASHBOARDS = ("sizing", "monitor", "report")
ALLOW_PROOFS_ENV = "AIWORKBOOK_ALLOW_PROOFS"
#: the Prometheus server whose fleet the monitor dashboard shows (docs/fleet.md)
PROMETHEUS_ENV = "AIWORKBOOK_PROMETHEUS_URL"
#: the server module: Voilà with the Host allowlist, XSRF, the kernel cap and culling without a page
SERVER_MODULE = "aiworkbook.widgets.dashboard_server"
# Idle kernels (connected or not, no output) are shut down after this long; every kernel is checked
# every CULL_INTERVAL_S.
CULL_IDLE_S = 600
CULL_INTERVAL_S = 10
#: a kernel no page has connected to this long after it started is culled (the page is still loading)
FIRST_CONNECT_S = 120
#: a kernel whose last page connection closed this long ago is culled, busy or not (a live monitor's
#: samples count as activity: idle culling never ends it). Its browser killed: gone within
#: DISCONNECT_GRACE_S + CULL_INTERVAL_S; its network lost: the websocket ping (10 s, 30 s timeout) first.
DISCONNECT_GRACE_S = 20
#: live kernels (viewers) per dashboard; one more viewer gets a "full, try again later" page (503)
MAX_VIEWERS = 8
TOKEN_FILE_BYTES = 64 * 1024  # the most of a --token-file read
#: How long a cell's execution waits for its remaining output messages after the kernel replies.
IOPUB_TIMEOUT_S = 60
#: the Voilà template the dashboards are served with (under template_root())
TEMPLATE = "aiworkbook"


def dashboards_dir() -> Path:
    """The folder of the dashboard notebooks, found without importing aiworkbook.widgets."""
    spec = importlib.util.find_spec("aiworkbook.widgets")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("aiworkbook.widgets is not installed; reinstall the package")
    return Path(next(iter(spec.submodule_search_locations))) / "dashboards"


def template_root() -> Path:
    """The Jupyter data folder holding the dashboards' Voilà template (voila/templates/TEMPLATE): the lab
    template without its render-blocking FontAwesome stylesheets from cdn.jsdelivr.net, which hold the
    first paint until the browser gives up on a network with no way out (Voilà's own bundle already
    carries FontAwesome, which the widgets' icons use)."""
    return dashboards_dir() / "jupyter"


def dashboard_path(name: str) -> Path:
    """The notebook of dashboard `name` (one of DASHBOARDS)."""
    from aiworkbook.errors import SpecError

    if name not in DASHBOARDS:
        raise SpecError("dashboard", name, Msg("allowed.one_of", names=", ".join(DASHBOARDS)))
    path = dashboards_dir() / f"{name}.ipynb"
    if not path.is_file():
        raise FileNotFoundError(f"dashboard notebook missing: {path}; reinstall the package")
    return path


def free_port(ip: str = "127.0.0.1") -> int:
    """A port the OS says is free now (another process may take it before Voilà binds it)."""
    with socket.socket(socket.AF_INET6 if ":" in ip else socket.AF_INET) as s:
        s.bind((ip, 0))
        return int(s.getsockname()[1])


def _is_loopback(ip: str) -> bool:
    if ip == "localhost":
        return True
    try:
        return ipaddress.ip_address(ip).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Launch:
    """How to start Voilà for one dashboard: the command line, its environment additions, the URL."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    url: str = ""
    port: int = 0
    ip: str = "127.0.0.1"
    #: the server's working folder: the dashboards' own, so `python -m` finds the installed aiworkbook,
    #: not an `aiworkbook/` folder of a checkout the command was typed in (and Voilà's root is not the
    #: caller's folder)
    cwd: str | None = None


def launch(
    name: str,
    *,
    ip: str = "127.0.0.1",
    port: int | None = None,
    token: str | None = None,
    allow_proofs: bool = False,
    open_browser: bool = False,
    preheat: int = 0,
    progressive: bool = True,
    allow_hosts: Sequence[str] = (),
    max_viewers: int = MAX_VIEWERS,
    lang: str = "en",
    prometheus: str | None = None,
) -> Launch:
    """The Voilà command for dashboard `name`. A non-loopback ip gets a token (generated when none is
    given): sharing is deliberate and never open. `preheat` > 0 keeps that many kernels warm
    (Voilà then renders in one go: pre-heating and progressive rendering exclude each other).
    progressive=False puts every cell's output in the first HTML answer (what a smoke test reads).
    `allow_hosts`: names (NAME or NAME:PORT) the dashboard answers to besides loopback and `ip`.
    The token goes to the server in Launch.env (TOKEN_ENV), never in argv. `lang` (en, nl, de) is the
    pages' language (LANG_ENV); a viewer's `?lang=` picks another. `prometheus` (monitor only): the
    Prometheus server whose fleet the monitor shows (PROMETHEUS_ENV); a viewer cannot pick another."""
    from aiworkbook.errors import SpecError
    from aiworkbook.hosts import parse_allow_host

    path = dashboard_path(name)
    if port is None:
        port = free_port(ip if ip != "localhost" else "127.0.0.1")
    if not (0 < port < 65536):
        raise SpecError("port", port, "1 to 65535")
    if token is not None and not token.strip():
        raise SpecError("token", token, Msg("allowed.nonempty"))
    if not _is_loopback(ip) and token is None:
        token = secrets.token_urlsafe(24)
    check_lang(lang)  # the page languages: the catalogues present (widgets.i18n.page_lang reads LANG_ENV)
    if prometheus is not None:
        _check_prometheus(name, prometheus)
    if preheat < 0:
        raise SpecError("preheat", preheat, Msg("allowed.preheat"))
    if not (1 <= max_viewers <= 1000):
        raise SpecError("max-viewers", max_viewers, "1 to 1000 kernels")
    if preheat >= max_viewers:
        raise SpecError("preheat", preheat, Msg("allowed.preheat_viewers", n=max_viewers))
    hosts = [parse_allow_host(h) for h in allow_hosts]
    argv = _voila_argv(path, ip, port, open_browser, max_viewers)
    if preheat:
        argv += ["--preheat_kernel=True", f"--pool_size={preheat}"]
    argv.append(f"--progressive_rendering={progressive and not preheat}")
    argv += [f"--DashboardVoila.allow_hosts={n if p is None else _host_port(n, p)}" for n, p in hosts]
    shown = socket.gethostname() if ip in ("0.0.0.0", "::") else ip  # a name the allowlist holds
    host = f"[{shown}]" if ":" in shown else shown
    url = f"http://{host}:{port}/" + (f"?token={token}" if token else "")
    jupyter_path = os.pathsep.join(p for p in (str(template_root()), os.environ.get("JUPYTER_PATH")) if p)
    env = {ALLOW_PROOFS_ENV: "1" if allow_proofs else "0", "JUPYTER_PATH": jupyter_path, LANG_ENV: lang}
    if prometheus is not None:
        env[PROMETHEUS_ENV] = prometheus  # widgets/dashboards/monitor.ipynb shows the fleet
    if token is not None:
        env[TOKEN_ENV] = token  # not argv: `ps` shows a command line to every user of the machine
    return Launch(argv=argv, env=env, url=url, port=port, ip=ip, cwd=str(path.parent))


def _check_prometheus(name: str, prometheus: str) -> None:
    """`--prometheus` is for the monitor only, and an http(s) URL."""
    from urllib.parse import urlsplit

    from aiworkbook.errors import SpecError

    if name != "monitor":
        raise SpecError("prometheus", prometheus, Msg("allowed.monitor_only"))
    parts = urlsplit(prometheus)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise SpecError("prometheus", prometheus, Msg("allowed.prom_url"))


def _voila_argv(path: Path, ip: str, port: int, open_browser: bool, max_viewers: int) -> list[str]:
    """The Voilà server's command line before the pre-heat and rendering choices."""
    return [
        sys.executable,
        "-m",
        SERVER_MODULE,
        str(path),
        f"--Voila.ip={ip}",
        f"--port={port}",
        "--show_tracebacks=False",
        "--strip_sources=True",
        f"--Voila.open_browser={open_browser}",
        f"--MappingKernelManager.cull_idle_timeout={CULL_IDLE_S}",
        f"--MappingKernelManager.cull_interval={CULL_INTERVAL_S}",
        "--MappingKernelManager.cull_connected=False",
        "--MappingKernelManager.cull_busy=False",
        f"--VoilaConfiguration.multi_kernel_manager_class={SERVER_MODULE}.ViewerKernelManager",
        f"--ViewerKernelManager.max_viewers={max_viewers}",
        f"--ViewerKernelManager.first_connect_s={FIRST_CONNECT_S}",
        f"--ViewerKernelManager.disconnect_grace_s={DISCONNECT_GRACE_S}",
        # XSRF checks stay on: the server sets the _xsrf cookie Voilà's unload beacon sends back with
        # its shutdown POST (voila-dashboards/voila#1458), so a closed page still ends its kernel.
        # A viewer's query string picks no other template or theme (those are the server's choice).
        "--VoilaConfiguration.allow_template_override=NO",
        "--VoilaConfiguration.allow_theme_override=NO",
        # After a cell's execute_reply, nbclient waits iopub_timeout (4 s by default) for the rest of
        # its IOPub messages, then returns the cell without them and only logs a warning: on a busy
        # server (ten viewers' kernels on two cores) the sizer cell's hundreds of widget messages came
        # late and the viewer got an empty cell, no error. The wait ends at the kernel's idle message,
        # so a longer bound costs nothing when the server keeps up.
        f"--VoilaExecutor.iopub_timeout={IOPUB_TIMEOUT_S}",
        # Voilà's lab template less its two FontAwesome stylesheets from a CDN (see template_root)
        f"--template={TEMPLATE}",
    ]


def _host_port(name: str, port: int) -> str:
    return f"[{name}]:{port}" if ":" in name else f"{name}:{port}"


def read_token(token: str | None, token_file: Path | None) -> str | None:
    """The token from --token (or TOKEN_ENV, which typer reads into it) or from --token-file's first
    line; both at once is an error."""
    from aiworkbook.errors import SpecError

    if token_file is None:
        return token
    if token is not None:
        raise SpecError("token-file", str(token_file), Msg("allowed.token_one_source", env=TOKEN_ENV))
    from aiworkbook.persist import read_text

    try:  # a regular file of at most 64 KiB: a FIFO or a device named by mistake is refused, not read
        text = read_text(token_file, what=Msg("file.token"), max_bytes=TOKEN_FILE_BYTES).strip().splitlines()
    except SpecError as exc:
        raise SpecError("token-file", str(token_file), str(exc.allowed)) from None
    if not text or not text[0].strip():
        raise SpecError("token-file", str(token_file), Msg("allowed.token_file"))
    return text[0].strip()


def start(
    spec: Launch, stdout: int | IO[str] | None = None, stderr: int | IO[str] | None = None
) -> subprocess.Popen:
    """Start Voilà as a child process with the launch's environment (the token arrives there, not in
    argv; a TOKEN_ENV this process inherited is not passed on unless it is the launch's token), its
    output to `stdout` and `stderr` (files or subprocess.DEVNULL; None: this process's), as text."""
    env = {k: v for k, v in os.environ.items() if k != TOKEN_ENV}
    return subprocess.Popen(
        spec.argv, env={**env, **spec.env}, cwd=spec.cwd, stdout=stdout, stderr=stderr, text=True
    )


def stop(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """Terminate Voilà (it shuts its kernels down), killing it if it does not exit in time."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def serving(spec: Launch, timeout: float = 60.0) -> Iterator[subprocess.Popen]:
    """Voilà running for `spec` while the block runs (listening when the block starts), stopped after.
    A server that fails to start raises OSError with the last line of its log."""
    log = tempfile.TemporaryFile(mode="w+")  # Voilà's log: shown only when it fails to start
    proc = start(spec, stdout=subprocess.DEVNULL, stderr=log)
    try:
        try:
            wait_listening(proc, spec.ip, spec.port, timeout)
        except (OSError, TimeoutError) as exc:
            stop(proc)
            log.seek(0)
            last = log.read().strip().splitlines()[-1:] or [""]
            raise OSError(f"{exc} {last[0]}".strip()) from None
        yield proc
    finally:
        stop(proc)
        log.close()


def wait_listening(proc: subprocess.Popen, ip: str, port: int, timeout: float = 60.0) -> None:
    """Return once the server accepts connections; raise if it exits or does not listen in time."""
    connect_ip = "127.0.0.1" if ip in ("0.0.0.0", "localhost") else ("::1" if ip == "::" else ip)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise OSError(f"voila exited with code {proc.returncode} before serving on port {port}")
        try:
            with socket.create_connection((connect_ip, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"voila did not listen on {ip}:{port} within {timeout:.0f} s")


def register(app: typer.Typer) -> None:
    """Add `aiworkbook app` to the CLI."""

    @app.command("app")
    def app_cmd(
        dashboard: str = typer.Argument("sizing", help="sizing | monitor | report"),
        port: int = option("--port", "Port to serve on (default: a free one)."),
        ip: str = option(
            "--ip", "Address to bind; anything but loopback needs a token (one is generated).", "127.0.0.1"
        ),
        token: str = typer.Option(
            None,
            "--token",
            envvar=TOKEN_ENV,
            help=f"Token viewers must present (?token=...); better from ${TOKEN_ENV} or --token-file, "
            "which `ps` does not show.",
        ),
        token_file: Path = option("--token-file", "Read the token from this file's first line."),
        allow_host: list[str] = option(
            "--allow-host",
            "Also answer to this host name (NAME or NAME:PORT; repeatable), e.g. the name viewers "
            "type or a reverse proxy's. Any other Host gets 403.",
        ),
        max_viewers: int = option(
            "--max-viewers", "Most viewers (kernels) at once; one more sees 'full'.", MAX_VIEWERS
        ),
        no_browser: bool = option("--no-browser", "Do not open a browser.", False),
        allow_proofs: bool = option(
            "--allow-proofs", "Let viewers run proofs (one at a time) in the report dashboard.", False
        ),
        preheat: int = option("--preheat", "Keep this many kernels warm (0: render progressively).", 0),
        lang: str = option(
            "--lang", "Language of the pages: en, nl or de (a viewer's ?lang= picks another).", "en"
        ),
        prometheus: str = option(
            "--prometheus",
            "monitor only: show the fleet a Prometheus server scrapes (URL, e.g. http://prom:9090).",
        ),
        print_command: bool = option(
            "--print-command", "Print the Voilà command line and exit without starting it.", False
        ),
    ) -> None:
        """Serve a Voilà dashboard (sizing, monitor, report) on 127.0.0.1 and print its URL."""
        spec = launch(
            dashboard,
            ip=ip,
            port=port,
            token=read_token(token, token_file),
            allow_proofs=allow_proofs,
            open_browser=not no_browser,
            preheat=preheat,
            allow_hosts=allow_host or (),
            max_viewers=max_viewers,
            lang=lang,
            prometheus=prometheus,
        )
        if print_command:
            env = " ".join(f"{k}={v}" for k, v in spec.env.items())
            typer.echo(f"cd {shlex.quote(spec.cwd or '.')} && {env} {' '.join(spec.argv)}")
            typer.echo(spec.url)
            return
        # SIGTERM and Ctrl-C arrive as KeyboardInterrupt (aiworkbook.signals, set up by the command line's
        # main): serving() stops Voilà on the way out, and main says so in one line, 143 or 130
        with serving(spec) as proc:
            proofs = Msg("cli.app.proofs_on") if allow_proofs else Msg("cli.app.proofs_off")
            typer.echo(said(Msg("cli.app.serving", dashboard=dashboard, url=spec.url, proofs=proofs)))
            sys.stdout.flush()
            proc.wait()
