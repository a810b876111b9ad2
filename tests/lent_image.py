"""An image built like the lent GPU machine, for tests/test_gpu_kit_offline.py: its `python3` is itself a
venv holding torch, numpy, typer, tqdm, psutil, nvidia-ml-py, pandas and safetensors (and what they
require), without pydantic or aiohttp, and there is no package index. The wheels the kit carries are
made here from this test environment's installed packages (repacked, RECORD rewritten), so the test
needs no network.

Differences from the machine, written down: torch is this venv's CPU build, shared by a .pth file
pointing at symlinks (not copied); the interpreter is this one's base Python, not 3.12.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata as md
import re
import subprocess
import sys
import zipfile
from pathlib import Path

#: what the lent machine's python3 holds, by distribution name
MACHINE_HAS = ("torch", "numpy", "typer", "tqdm", "psutil", "nvidia-ml-py", "pandas", "safetensors", "pip")
#: what it lacks, even where a newer release of the above requires it (typer >= 0.2x asks for pydantic)
MACHINE_LACKS = ("pydantic", "pydantic-core", "aiohttp", "babel")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(names: list[str] | tuple[str, ...], without: tuple[str, ...] = ()) -> dict[str, md.Distribution]:
    """The installed distributions `names` need, their requirements included (extras and markers
    that do not hold here left out, and `without`), by normalised name."""
    from packaging.requirements import Requirement

    found: dict[str, md.Distribution] = {}
    todo = list(names)
    while todo:
        key = _norm(todo.pop())
        if key in found or key in without:
            continue
        try:
            dist = md.distribution(key)
        except md.PackageNotFoundError:
            continue  # an optional requirement this environment does not have
        found[key] = dist
        for text in dist.requires or ():
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return found


def _top_entries(dist: md.Distribution) -> set[str]:
    """The first path parts, under site-packages, of what the distribution installed."""
    return {f.parts[0] for f in dist.files or () if f.parts and f.parts[0] not in ("..", "__pycache__")}


def build_python(where: Path) -> Path:
    """A venv at `where` from this interpreter's base, seeing MACHINE_HAS (and their requirements)
    from this environment through one .pth file: the lent machine's python3, as far as packages go."""
    # --without-pip: its pip is this environment's, shared like the rest (no ensurepip needed here)
    base = sys._base_executable  # type: ignore[attr-defined]
    subprocess.run([base, "-m", "venv", "--without-pip", str(where)], check=True, timeout=300)
    shared = where / "machine-packages"
    shared.mkdir()
    site = Path(md.distribution("torch").locate_file(""))
    for dist in closure(MACHINE_HAS, MACHINE_LACKS).values():
        for top in _top_entries(dist):
            src = site / top
            if src.exists() and not (shared / top).exists():
                (shared / top).symlink_to(src)
    (sp,) = where.glob("lib/python*/site-packages")
    (sp / "machine.pth").write_text(str(shared) + "\n")
    return where / "bin" / "python3"


def repack(dist: md.Distribution, dest: Path) -> Path:
    """A wheel of an installed distribution: its files under site-packages and its dist-info, with
    a fresh RECORD (what pip checks)."""
    site = Path(dist.locate_file(""))
    info = next(f for f in dist.files or () if f.parts[0].endswith(".dist-info")).parts[0]
    tags = [
        ln.split(":", 1)[1].strip() for ln in dist.read_text("WHEEL").splitlines() if ln.startswith("Tag:")
    ]
    name = re.sub(r"[-_.]+", "_", dist.metadata["Name"])
    wheel = dest / f"{name}-{dist.version}-{tags[0]}.whl"
    record = []
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for f in dist.files or ():
            rel = f.as_posix()
            path = site / rel
            if (
                rel.startswith("..")
                or "__pycache__" in f.parts
                or rel.endswith("RECORD")
                or not path.is_file()
            ):
                continue
            data = path.read_bytes()
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            z.writestr(rel, data)
            record.append(f"{rel},sha256={digest},{len(data)}")
        record.append(f"{info}/RECORD,,")
        z.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return wheel


def carried_wheels(requirements: list[str], dest: Path) -> list[Path]:
    """What tools/device_wheels.sh brings, made from here: every distribution the requirements need."""
    from packaging.requirements import Requirement

    dest.mkdir(parents=True, exist_ok=True)
    return [repack(d, dest) for d in closure([Requirement(r).name for r in requirements]).values()]
