"""Re-execute the tutorial notebooks in place (outputs kept for nbval) and drop the widget state that
execution stores in their metadata (megabytes of JavaScript nbval never reads).

    .venv/bin/python tools/run_notebooks.py                 # every notebook under notebooks/
    .venv/bin/python tools/run_notebooks.py notebooks/04_prove_checkpoint_and_data.ipynb
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent


def run(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    nb.metadata.pop("widgets", None)
    nbformat.write(nb, path)
    print(f"executed {path.relative_to(ROOT)}")


if __name__ == "__main__":
    paths = [Path(p).resolve() for p in sys.argv[1:]] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    for p in paths:
        run(p)
