"""Re-run every `$ aiworkbook ...` example in the docs and replace its printed output.

Docs show real output; after a change to the engine, `python tools/refresh_docs.py docs/sizing.md`
keeps them true. Only commands inside ``` fences are run; the block's lines up to the next `$ ` line
or the closing fence are replaced.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent


def refreshed(path: Path) -> tuple[str, int]:
    """The document's text with every example's output re-run, and how many examples there were."""
    lines = path.read_text().splitlines()
    out: list[str] = []
    in_fence, skipping, n = False, False, 0
    for line in lines:
        if line.startswith("```"):
            in_fence = not in_fence
            skipping = False
            out.append(line)
            continue
        if in_fence and line.startswith("$ aiworkbook "):
            if skipping:
                out.append("")  # a blank line between one example's output and the next command
            skipping = True
            out.append(line)
            argv = [str(BIN / "aiworkbook"), *shlex.split(line[len("$ aiworkbook ") :])]
            res = subprocess.run(argv, capture_output=True, text=True, check=False)
            shown = (
                res.stdout if res.returncode == 0 else res.stdout + res.stderr
            )  # progress bars go to stderr
            out.extend(shown.rstrip("\n").splitlines())
            n += 1
            continue
        if skipping and not line.startswith("$ "):
            continue
        skipping = False
        out.append(line)
    return "\n".join(out) + "\n", n


def refresh(path: Path) -> int:
    text, n = refreshed(path)
    path.write_text(text)
    return n


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(f"{arg}: {refresh(Path(arg))} commands re-run")
