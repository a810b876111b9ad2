"""Packaging and layering: the explicit package list, cheap imports, no Jupyter in the core."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]


def test_package_list_matches_tree():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(cfg["packages"])
    on_disk = {
        "aiworkbook." + ".".join(p.parent.relative_to(ROOT / "aiworkbook").parts)
        for p in (ROOT / "aiworkbook").rglob("__init__.py")
    }
    on_disk = {p.rstrip(".") for p in on_disk} | {"aiworkbook.widgets", "aiworkbook._data"}
    assert listed == on_disk, "pyproject [tool.setuptools] packages must list every subpackage"
    assert cfg["package-dir"] == {"aiworkbook.widgets": "widgets", "aiworkbook._data": "data"}


def _imported_modules(stmt: str) -> set[str]:
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", stmt], capture_output=True, text=True, check=True
    )
    return {m.group(1).strip().split(".")[0] for m in re.finditer(r"\|\s+([\w.]+)\s*$", r.stderr, re.M)}


def test_specs_import_is_light():
    mods = _imported_modules("import aiworkbook.specs")
    assert not mods & {
        "torch",
        "ipywidgets",
        "IPython",
        "jupyter_core",
        "jupyter_client",
        "voila",
        "anywidget",
        "pynvml",
    }


def test_core_never_imports_jupyter():
    pattern = re.compile(r"^\s*(import|from)\s+(ipywidgets|IPython|voila|jupyter\w*|anywidget)\b", re.M)
    offenders = [str(p) for p in (ROOT / "aiworkbook").rglob("*.py") if pattern.search(p.read_text())]
    assert offenders == []


def test_widgets_importable_as_subpackage():
    import aiworkbook.widgets

    assert Path(aiworkbook.widgets.__file__).parent == ROOT / "widgets"


def test_data_dir_is_the_repository_data():
    from aiworkbook.paths import data_dir

    assert data_dir() == ROOT / "data"


def test_wheel_install_carries_catalogues_and_widgets(tmp_path):
    """A wheel (not the editable install) has the presets, the GPU catalogue and aiworkbook.widgets with
    the dashboards and their Voilà template."""
    wheel_dir, target = tmp_path / "wheel", tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(wheel_dir),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    wheel = next(wheel_dir.glob("aiworkbook-*.whl"))
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
    )
    code = (
        "import aiworkbook, aiworkbook.widgets; from aiworkbook.paths import data_dir; "
        "from aiworkbook.specs import load_model, get_gpu, list_nodes; "
        "print(aiworkbook.__file__); print(data_dir()); "
        "print(load_model('llama-3-8b').params, get_gpu('H200-SXM').name, len(list_nodes())); "
        "from aiworkbook.cli.app_cmds import TEMPLATE, dashboard_path, template_root; "
        "print(dashboard_path('report').is_file(), "
        "(template_root() / 'voila/templates' / TEMPLATE / 'index.html.j2').is_file(), "
        "(template_root() / 'voila/templates' / TEMPLATE / 'conf.json').is_file())"
    )
    env = {**__import__("os").environ, "PYTHONPATH": str(target)}
    env.pop("AIWORKBOOK_DATA", None)
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    module_file, data, facts, dashboards = r.stdout.splitlines()
    assert module_file.startswith(str(target)) and data.startswith(str(target))
    assert facts == "8030261248 H200-SXM 4"
    assert dashboards == "True True True"  # the dashboard notebooks and their Voilà template
