"""The peers' venv, pinned: tools/peers-lock.txt holds every package of .venv-peers at one exact
version with its sha256, resolved so that each version is one both peers allow. GuideLLM is resolved
with its dependencies and the packages vLLM's benchmark client imports (peer_results.VLLM_CLIENT_DEPS),
under vLLM's own requirements as constraints (vLLM itself is pinned but its engine's dependencies, CUDA
kernels among them, are not installed). Each peer's requirement on a locked package is written into the
lock as a comment, so the lock can be checked against them without a network (tests/test_peers_lock.py).

    python tools/peers_lock.py              # re-resolve and rewrite tools/peers-lock.txt (the registry)
    pip install --no-deps --require-hashes -r tools/peers-lock.txt   # what peer_results.setup runs

The hashes are of the files the resolver chose for this machine's kind (CPython 3.11, x86-64 Linux);
another platform re-resolves with the first command.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "tools" / "peers-lock.txt"
PEERS = ("guidellm==0.8.1", "vllm==0.34.0")  # peer_results.GUIDELLM, peer_results.VLLM


def _report(args: list[str], where: Path) -> list[dict]:
    """pip's resolution of `args` (a dry run: metadata only, nothing installed) as its report's list."""
    out = where / "report.json"
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--dry-run",
        "--ignore-installed",
        "-q",
        "--report",
        str(out),
    ]
    subprocess.run([*cmd, *args], check=True)
    return list(json.loads(out.read_text())["install"])


def requirements(metadata: dict) -> list[Requirement]:
    """A distribution's unconditional requirements that apply here (no extra's, markers evaluated)."""
    env = default_environment()
    out = []
    for line in metadata.get("requires_dist") or []:
        r = Requirement(line)
        if r.marker is None or ("extra" not in str(r.marker) and r.marker.evaluate(env)):
            out.append(r)
    return out


def resolve(client_deps: list[str]) -> str:
    """The lock's text: one `name==version --hash=sha256:...` per package, after comments that carry
    each peer's requirement on a locked package."""
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        peers = {canonicalize_name(i["metadata"]["name"]): i for i in _report(["--no-deps", *PEERS], where)}
        vllm = peers["vllm"]
        constraints = where / "vllm-constraints.txt"
        reqs = requirements(vllm["metadata"])
        constraints.write_text("".join(f"{r.name}{r.specifier}\n" for r in reqs))
        got = _report(["-c", str(constraints), PEERS[0], *client_deps], where)
    pinned = {canonicalize_name(i["metadata"]["name"]): i for i in got} | {"vllm": vllm}
    lines = [
        "# The peers' venv (.venv-peers), every package at one version both peers allow: written by",
        "# tools/peers_lock.py, installed by tools/peer_results.py --setup with --no-deps --require-hashes.",
    ]
    for peer in (peers["guidellm"], vllm):
        m = peer["metadata"]
        for r in requirements(m):
            if canonicalize_name(r.name) in pinned and str(r.specifier):
                lines.append(
                    f"# requires {m['name']}=={m['version']}: {canonicalize_name(r.name)}{r.specifier}"
                )
    for name in sorted(pinned):
        i = pinned[name]
        sha = i["download_info"]["archive_info"]["hashes"]["sha256"]
        lines.append(f"{name}=={i['metadata']['version']} --hash=sha256:{sha}")
    return "\n".join(lines) + "\n"


def read(text: str) -> tuple[dict[str, Version], list[tuple[str, Requirement]]]:
    """The lock's pins (name -> version) and the peers' requirements written beside them."""
    pins: dict[str, Version] = {}
    needs: list[tuple[str, Requirement]] = []
    for line in text.splitlines():
        if line.startswith("# requires "):
            peer, req = line.removeprefix("# requires ").split(": ", 1)
            needs.append((peer, Requirement(req)))
        elif line and not line.startswith("#"):
            name, version = line.split()[0].split("==")
            pins[canonicalize_name(name)] = Version(version)
    return pins, needs


def violations(text: str) -> list[str]:
    """Each pin a peer's requirement does not allow, in words (none for a good lock)."""
    pins, needs = read(text)
    return [
        f"{name} {pins[name]} (lock) outside {peer}'s {req}"
        for peer, req in needs
        if (name := canonicalize_name(req.name)) in pins
        and not req.specifier.contains(pins[name], prereleases=True)
    ]


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "tools"))
    from peer_results import VLLM_CLIENT_DEPS

    text = resolve(list(VLLM_CLIENT_DEPS))
    bad = violations(text)
    if bad:
        sys.exit("the resolution broke a peer's requirement: " + "; ".join(bad))
    LOCK.write_text(text)
    print(f"wrote {LOCK}: {len(read(text)[0])} packages")
