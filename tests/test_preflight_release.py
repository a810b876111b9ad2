"""`preflight vllm` sizes with the installed vLLM's release (issue 32, item 3): read through
importlib.metadata from a vLLM distribution's metadata on sys.path (a real dist-info folder written
here: the package's code is not needed to read its version), refused naming the modelled releases when
this project does not model it, overridden by --engine-version; the panel takes a release number."""

from __future__ import annotations

import json

import pytest
from fake_nvml import DATACENTER, FakeNVML

from aiworkbook.cli import main
from aiworkbook.preflight.vllm import installed_release, resolve_release
from aiworkbook.sizing.vllm import NEWEST_RELEASE

IDLE = {**DATACENTER, "mem_used": 300 * 2**20, "processes": []}


@pytest.fixture
def vllm_installed(tmp_path, monkeypatch):
    """Install vLLM's metadata (not its code) at `version` on sys.path."""

    def install(version: str) -> None:
        info = tmp_path / f"vllm-{version.replace('+', '_')}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n")
        monkeypatch.syspath_prepend(str(tmp_path))

    return install


def _json(capsys, *args: str) -> tuple[int, dict]:
    code = main(["preflight", "vllm", "llama-3-8b", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_the_installed_release_is_read_and_its_arithmetic_used(vllm_installed, capsys):
    vllm_installed("0.10.1rc1+cu128")
    assert installed_release() == "0.10.1"
    with FakeNVML([IDLE]):
        code, doc = _json(capsys)
        assert code == 0
        st = doc["settings"]
        assert (st["engine"], st["engine_version"], st["engine_version_source"]) == (
            "v1",
            "0.10.1",
            "the installed vLLM",
        )
        assert doc["at_utilization"]["vllm"]["arithmetic"] == "v1"
        assert main(["preflight", "vllm", "llama-3-8b"]) == 0
    out = capsys.readouterr().out
    assert "arithmetic: vLLM 0.10.1 (arithmetic v1), the installed vLLM" in out
    assert "(vLLM 0.10.1 (arithmetic v1), an estimate)" in out


def test_an_installed_release_not_modelled_is_refused_naming_the_known_ones(vllm_installed, capsys):
    vllm_installed("0.20.1")
    with FakeNVML([IDLE]):
        assert main(["preflight", "vllm", "llama-3-8b"]) == 2
        err = capsys.readouterr().err
        assert "'engine_version'" in err and "0.20.1 (the installed vLLM)" in err
        assert "0.6.4 ... 0.19.x" in err and "--engine-version" in err and "Traceback" not in err
        code, doc = _json(capsys, "--engine-version", "0.19.1")  # the user says which: sized with it
    assert code == 0 and doc["settings"]["engine_version_source"] == "--engine-version"
    assert doc["settings"]["engine"] == "v1-019"


def test_without_vllm_the_newest_release_modelled():
    here = installed_release()
    release, source = resolve_release(None)
    if here is None:
        assert (release, source) == (NEWEST_RELEASE, "the newest release modelled (no vLLM installed here)")
    else:  # a machine with vLLM installed: its release
        assert (release, source) == (here, "the installed vLLM")
    assert resolve_release("0.8.5") == ("0.8.5", "--engine-version")


def test_the_panel_takes_a_release_number_and_names_it():
    from aiworkbook.widgets import PreflightPanel

    with FakeNVML([IDLE]):
        p = PreflightPanel(auto=False)
        p.engine_version.value = "0.10.2"
        p.read()
        assert p.wait(30)
        assert p.result["settings"]["engine"] == "v1" and p.error == ""
        assert "vLLM 0.10.2 (v1)" in p.details.value
        p.engine_version.value = "0.20.1"
        p.read()
        assert p.wait(30)
    assert "engine_version" in p.error and "0.19.x" in p.error and "Traceback" not in p.error_area.value
