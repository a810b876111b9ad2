"""`aiworkbook app [sizing|monitor|report]`: serve one Voilà dashboard for stakeholders.

Voilà runs as its own process on a dashboard notebook shipped in aiworkbook.widgets (package data);
this module imports no widget. Safe by default: 127.0.0.1, tracebacks hidden, sources stripped,
idle kernels culled, proofs off unless --allow-proofs (the report dashboard reads ALLOW_PROOFS_ENV;
the registry's one proof lock keeps them one at a time).
"""

from __future__ import annotations

import importlib.util
import ipaddress
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import typer

DASHBOARDS = ("sizing", "monitor", "report")
ALLOW_PROOFS_ENV = "AIWORKBOOK_ALLOW_PROOFS"
# Idle kernels (a viewer who left) are shut down after this long; checked every CULL_INTERVAL_S.
CULL_IDLE_S = 600
CULL_INTERVAL_S = 60
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
        raise SpecError("dashboard", name, f"one of {', '.join(DASHBOARDS)}")
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
) -> Launch:
    """The Voilà command for dashboard `name`. A non-loopback ip gets a token (generated when none is
    given): sharing is deliberate and never open. `preheat` > 0 keeps that many kernels warm
    (Voilà then renders in one go: pre-heating and progressive rendering exclude each other).
    progressive=False puts every cell's output in the first HTML answer (what a smoke test reads)."""
    from aiworkbook.errors import SpecError

    path = dashboard_path(name)
    if port is None:
        port = free_port(ip if ip != "localhost" else "127.0.0.1")
    if not (0 < port < 65536):
        raise SpecError("port", port, "1 to 65535")
    if token is not None and not token.strip():
        raise SpecError("token", token, "a non-empty string")
    if not _is_loopback(ip) and token is None:
        token = secrets.token_urlsafe(24)
    if preheat < 0:
        raise SpecError("preheat", preheat, "0 (off) or more kernels")
    argv = [
        sys.executable,
        "-m",
        "voila",
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
        # A closed page shuts its kernel down through a beacon POST that Voilà sends without the
        # _xsrf field it never set (voila-dashboards/voila#1458): it gets 403 and the kernel lives on
        # (a live monitor never idles, so culling never ends it). The POST can only end a kernel whose
        # random id the sender knows; loopback by default, a token when shared.
        "--Voila.tornado_settings=disable_check_xsrf=True",
        # After a cell's execute_reply, nbclient waits iopub_timeout (4 s by default) for the rest of
        # its IOPub messages, then returns the cell without them and only logs a warning: on a busy
        # server (ten viewers' kernels on two cores) the sizer cell's hundreds of widget messages came
        # late and the viewer got an empty cell, no error. The wait ends at the kernel's idle message,
        # so a longer bound costs nothing when the server keeps up.
        f"--VoilaExecutor.iopub_timeout={IOPUB_TIMEOUT_S}",
        # Voilà's lab template less its two FontAwesome stylesheets from a CDN (see template_root)
        f"--template={TEMPLATE}",
    ]
    if preheat:
        argv += ["--preheat_kernel=True", f"--pool_size={preheat}"]
    argv.append(f"--progressive_rendering={progressive and not preheat}")
    if token is not None:
        argv.append(f"--token={token}")
    host = f"[{ip}]" if ":" in ip else ip
    url = f"http://{host}:{port}/" + (f"?token={token}" if token else "")
    jupyter_path = os.pathsep.join(p for p in (str(template_root()), os.environ.get("JUPYTER_PATH")) if p)
    env = {ALLOW_PROOFS_ENV: "1" if allow_proofs else "0", "JUPYTER_PATH": jupyter_path}
    return Launch(argv=argv, env=env, url=url, port=port, ip=ip)


def start(spec: Launch, **popen_kwargs) -> subprocess.Popen:
    """Start Voilà as a child process with the launch's environment."""
    return subprocess.Popen(spec.argv, env={**os.environ, **spec.env}, **popen_kwargs)


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
    proc = start(spec, stdout=subprocess.DEVNULL, stderr=log, text=True)
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
        port: int = typer.Option(None, "--port", help="Port to serve on (default: a free one)."),
        ip: str = typer.Option(
            "127.0.0.1",
            "--ip",
            help="Address to bind; anything but loopback needs a token (one is generated).",
        ),
        token: str = typer.Option(None, "--token", help="Token viewers must present (?token=...)."),
        no_browser: bool = typer.Option(False, "--no-browser", help="Do not open a browser."),
        allow_proofs: bool = typer.Option(
            False, "--allow-proofs", help="Let viewers run proofs (one at a time) in the report dashboard."
        ),
        preheat: int = typer.Option(
            0, "--preheat", help="Keep this many kernels warm (0: render progressively)."
        ),
        print_command: bool = typer.Option(
            False, "--print-command", help="Print the Voilà command line and exit without starting it."
        ),
    ) -> None:
        """Serve a Voilà dashboard (sizing, monitor, report) on 127.0.0.1 and print its URL."""
        spec = launch(
            dashboard,
            ip=ip,
            port=port,
            token=token,
            allow_proofs=allow_proofs,
            open_browser=not no_browser,
            preheat=preheat,
        )
        if print_command:
            env = " ".join(f"{k}={v}" for k, v in spec.env.items())
            typer.echo(f"{env} {' '.join(spec.argv)}")
            typer.echo(spec.url)
            return
        import signal

        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # leave through serving(): stop Voilà too
        with serving(spec) as proc:
            proofs = "allowed, one at a time" if allow_proofs else "off"
            typer.echo(f"{dashboard} dashboard: {spec.url}  (proofs {proofs}; Ctrl-C stops it)")
            sys.stdout.flush()
            proc.wait()
