"""The peers' venv is pinned (tools/peers-lock.txt, written by tools/peers_lock.py): every package at
one exact version with its sha256, each allowed by both peers' own requirements (written into the lock
beside the pins), and the venv is made from the lock alone. The old set-up installed GuideLLM's newest
dependencies and then vLLM's client beside them: transformers 5.25 against vLLM 0.34's <5.23."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import peer_results  # noqa: E402
import peers_lock  # noqa: E402


def test_every_package_is_pinned_with_its_hash_and_allowed_by_both_peers():
    text = peers_lock.LOCK.read_text()
    pins, needs = peers_lock.read(text)
    lines = [x for x in text.splitlines() if x and not x.startswith("#")]
    assert all("==" in x and " --hash=sha256:" in x for x in lines) and len(lines) == len(pins)
    for spec in (peer_results.GUIDELLM, peer_results.VLLM, *peers_lock.PEERS):
        name, version = spec.split("==")
        assert str(pins[name]) == version
    assert all(peers_lock.canonicalize_name(d) in pins for d in peer_results.VLLM_CLIENT_DEPS)
    assert {peer for peer, _ in needs} == set(peers_lock.PEERS) and len(needs) > 20
    assert peers_lock.violations(text) == []


def test_a_pin_a_peer_does_not_allow_is_named():
    text = peers_lock.LOCK.read_text()
    pins, _ = peers_lock.read(text)
    old = f"transformers=={pins['transformers']} "
    assert old in text
    bad = peers_lock.violations(text.replace(old, "transformers==5.25.0 "))
    assert bad == ["transformers 5.25.0 (lock) outside vllm==0.34.0's transformers<5.23.0,>=5.16.1"]


def test_the_venv_is_made_from_the_lock_alone(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    ran: list[list[str]] = []
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: ran.append([str(x) for x in cmd]))
    peer_results.setup(tmp_path / "venv")
    assert ran[0][1:] == ["-m", "venv", str(tmp_path / "venv")]
    assert ran[1:] == [
        [
            str(tmp_path / "venv" / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--require-hashes",
        ]
        + ["-r", str(peers_lock.LOCK)]
    ]
