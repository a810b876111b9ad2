"""The machine's facts a proof sizes itself by (last-level cache, cores), read in one place.

A proof's plan depends on them (the roofline buffer is 4 × the last-level cache, a thread sweep
climbs to the core count), so two machines of one kind can plan differently. `AIWORKBOOK_HOST`
replaces a reading, e.g. ``llc=8MiB,cores=16,threads=16``: the test suite runs under fixed figures
(tests/conftest.py) so no result depends on the machine that ran it, and a user can reproduce a plan
made elsewhere. An injected figure says so where it is shown (its source reads "AIWORKBOOK_HOST").
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from aiworkbook.errors import SpecError

ENV = "AIWORKBOOK_HOST"
FACTS = ("llc", "cores", "threads")
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMG]?)i?B?\s*", re.I)
MiB = 2**20


def parse_size(text: str) -> int:
    """'8MiB', '512 M', '32768K', '1G' → bytes (sysfs and lscpu write sizes this way)."""
    m = _SIZE.fullmatch(text)
    if not m:
        raise ValueError(text)
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def injected() -> dict[str, int]:
    """The facts `AIWORKBOOK_HOST` sets; SpecError names the variable and the form it takes."""
    raw = os.environ.get(ENV, "").strip()
    out: dict[str, int] = {}
    if not raw:
        return out
    allowed = "comma-separated llc=<size such as 8MiB>, cores=<1..4096>, threads=<1..4096>"
    for item in raw.split(","):
        key, _, value = item.partition("=")
        key = key.strip().lower()
        try:
            n = parse_size(value) if key == "llc" else int(value)
        except ValueError:
            raise SpecError(ENV, raw, allowed) from None
        if key not in FACTS or n < 1 or (key != "llc" and n > 4096) or n > 2**40:
            raise SpecError(ENV, raw, allowed)
        out[key] = n
    return out


def llc_bytes() -> tuple[int, str]:
    """(size of the CPU's last-level cache, where it was read): AIWORKBOOK_HOST, sysfs, then lscpu,
    else an assumed 32 MiB."""
    if "llc" in (fake := injected()):
        return fake["llc"], ENV
    best = (0, 0)
    for idx in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            level = int((idx / "level").read_text())
            size = parse_size((idx / "size").read_text())
        except (OSError, ValueError):
            continue
        best = max(best, (level, size))
    if best[1]:
        return best[1], f"/sys/devices/system/cpu/cpu0/cache (L{best[0]})"
    try:
        out = subprocess.run(["lscpu", "-B"], capture_output=True, text=True, timeout=5).stdout
        sizes = [int(m.group(2)) for m in re.finditer(r"^L(\d)\w* cache:\s+(\d+)", out, re.M)]
        if sizes:
            return max(sizes), "lscpu"
    except (OSError, subprocess.SubprocessError, ValueError):
        pass
    return 32 * MiB, "assumed (no /sys cache info, no lscpu)"


def logical_cpus() -> int:
    """Logical CPUs this process may run on (its affinity mask, else the machine's count)."""
    if "threads" in (fake := injected()):
        return fake["threads"]
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def physical_cores() -> int:
    """Physical cores (what compute-bound kernels scale with), else logical CPUs."""
    if "cores" in (fake := injected()):
        return fake["cores"]
    import psutil

    return psutil.cpu_count(logical=False) or os.cpu_count() or 1
