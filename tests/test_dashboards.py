"""`aiworkbook app` and the Voilà dashboards: the launch is safe by default, the shipped notebooks are
thin and stripped, and each dashboard executes in Voilà without an error cell (HTTP smoke test)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request

import pytest

from aiworkbook.cli import main
from aiworkbook.cli.app_cmds import ALLOW_PROOFS_ENV, DASHBOARDS, dashboard_path, launch, serving
from aiworkbook.errors import SpecError

VOILA_ERROR = "There was an error when executing cell"


def test_launch_is_loopback_hidden_tracebacks_no_token_proofs_off():
    spec = launch("sizing")
    argv = " ".join(spec.argv)
    assert spec.url == f"http://127.0.0.1:{spec.port}/"
    for flag in (
        "--Voila.ip=127.0.0.1",
        f"--port={spec.port}",
        "--show_tracebacks=False",
        "--strip_sources=True",
        "--progressive_rendering=True",
        "--MappingKernelManager.cull_idle_timeout=",
        "--Voila.open_browser=False",
        "--ViewerKernelManager.max_viewers=",
    ):
        assert flag in argv
    assert "--token" not in argv and "disable_check_xsrf" not in argv  # XSRF on (the beacon sends it)
    assert spec.env[ALLOW_PROOFS_ENV] == "0"
    assert spec.argv[3] == str(dashboard_path("sizing"))


def test_cells_wait_for_their_late_output_on_a_busy_server():
    """The executor Voilà builds from the launch's flags waits IOPUB_TIMEOUT_S, not nbclient's 4 s, for
    a cell's output after the kernel replies: at ten viewers on two cores the sizer cell's widget
    messages came later than 4 s and the page showed an empty cell (tests/browser: ten viewers)."""
    import nbformat
    from aiworkbook.widgets.dashboard_server import DashboardVoila
    from voila.execute import VoilaExecutor

    from aiworkbook.cli.app_cmds import IOPUB_TIMEOUT_S

    app = DashboardVoila()
    app.parse_command_line(launch("sizing").argv[3:])
    ex = VoilaExecutor(nbformat.v4.new_notebook(), km=None, config=app.config)
    assert ex.iopub_timeout == IOPUB_TIMEOUT_S >= 30 > VoilaExecutor(nbformat.v4.new_notebook()).iopub_timeout


def test_sharing_needs_a_token_and_proofs_are_opt_in():
    import socket

    from aiworkbook.cli.app_cmds import TOKEN_ENV

    shared = launch("report", ip="0.0.0.0", port=9999, allow_proofs=True)
    token = shared.env[
        TOKEN_ENV
    ]  # in the server's environment, not its argv (tests/test_dashboards_safety.py)
    # the URL names this machine (an allowed Host), not 0.0.0.0
    assert len(token) >= 24 and shared.url == f"http://{socket.gethostname()}:9999/?token={token}"
    assert shared.env[ALLOW_PROOFS_ENV] == "1"
    mine = launch("monitor", ip="10.0.0.5", port=9999, token="s3cret")
    assert mine.env[TOKEN_ENV] == "s3cret" and mine.url.endswith("?token=s3cret")


def test_preheat_replaces_progressive_rendering():
    argv = launch("sizing", preheat=2).argv
    assert "--preheat_kernel=True" in argv and "--pool_size=2" in argv
    assert "--progressive_rendering=False" in argv


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"name": "bogus"}, "dashboard"),
        ({"port": 70000}, "port"),
        ({"token": " "}, "token"),
        ({"preheat": -1}, "preheat"),
    ],
)
def test_bad_launch_values_name_the_field(kwargs, field):
    kwargs = {"name": "sizing", **kwargs}
    with pytest.raises(SpecError) as err:
        launch(kwargs.pop("name"), **kwargs)
    assert err.value.field == field


def test_cli_refuses_an_unknown_dashboard_with_exit_2(capsys):
    assert main(["app", "bogus", "--no-browser"]) == 2
    assert "dashboard" in capsys.readouterr().err


def test_cli_print_command(capsys):
    assert main(["app", "monitor", "--port", "8899", "--no-browser", "--print-command"]) == 0
    out = capsys.readouterr().out
    assert (
        "aiworkbook.widgets.dashboard_server" in out
        and "monitor.ipynb" in out
        and "http://127.0.0.1:8899/" in out
    )


def test_app_imports_no_widget():
    code = (
        "import sys; from aiworkbook.cli.app_cmds import launch; launch('sizing');"
        "print(sorted(m for m in sys.modules if m.startswith(('ipywidgets', 'aiworkbook.widgets', 'voila'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("name", DASHBOARDS)
def test_dashboards_are_stripped_and_thin(name):
    nb = json.loads(dashboard_path(name).read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(c["outputs"] == [] and c["execution_count"] is None for c in code)
    lines = [ln for c in code for ln in "".join(c["source"]).splitlines() if ln.strip()]
    assert len(lines) <= 15  # the widgets do the work (blank lines are not code)
    assert any("aiworkbook.widgets" in "".join(c["source"]) for c in code)


@pytest.fixture(scope="module")
def rendered():
    """Each dashboard served once (non-progressive, so the first answer holds every cell's output)."""
    pages: dict[str, tuple[int, str]] = {}

    def get(name: str) -> tuple[int, str]:
        if name not in pages:
            spec = launch(name, progressive=False)
            with serving(spec):
                with urllib.request.urlopen(spec.url, timeout=120) as resp:
                    pages[name] = (resp.status, resp.read().decode())
        return pages[name]

    return get


@pytest.mark.parametrize("name", DASHBOARDS)
def test_dashboard_serves_without_an_error_cell(rendered, name):
    status, page = rendered(name)
    assert status == 200
    assert VOILA_ERROR not in page
    assert "application/vnd.jupyter.widget-view+json" in page  # the widgets were displayed
    assert "Traceback" not in page


def test_dashboard_page_loads_nothing_from_a_cdn(rendered):
    """Voilà's lab template puts two FontAwesome stylesheets from cdn.jsdelivr.net in the page head: on a
    cluster with no way out they hold the first paint until the browser gives up. The dashboards' own
    template drops them; the icons come from Voilà's bundle (tests/browser checks they still draw)."""
    status, page = rendered("sizing")
    assert status == 200 and "voila-style" in page  # still Voilà's lab template underneath
    assert "cdn.jsdelivr.net" not in page and "fontawesome-free" not in page


def test_the_template_is_found_beside_a_users_jupyter_path(monkeypatch):
    from aiworkbook.cli.app_cmds import TEMPLATE, template_root

    assert (template_root() / "voila" / "templates" / TEMPLATE / "index.html.j2").is_file()
    monkeypatch.setenv("JUPYTER_PATH", "/opt/mine")
    spec = launch("sizing")
    assert f"--template={TEMPLATE}" in spec.argv
    assert spec.env["JUPYTER_PATH"].split(os.pathsep) == [str(template_root()), "/opt/mine"]
