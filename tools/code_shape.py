"""Measure issue 24 item 8 ("code a reader can hold"): long functions and repeated runs.

Prints every function or method in aiworkbook/ and widgets/ longer than --max-lines (default 90,
counted from its ``def`` line to its last line, decorators excluded), then the count. With
``--duplicates`` it also runs the ``duplicates`` tool (when it is on PATH) over each folder and counts
the pairs it lists that are not marked boilerplate: runs of six or more same-shaped lines.

    python tools/code_shape.py [--max-lines 90] [--duplicates] [FOLDER ...]
"""

from __future__ import annotations

import argparse
import ast
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FOLDERS = ("aiworkbook", "widgets")


def long_functions(folder: Path, max_lines: int) -> list[tuple[str, str, int]]:
    """(file, qualified name, lines) for each function in ``folder`` longer than ``max_lines``."""
    found: list[tuple[str, str, int]] = []
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        rel = str(path.relative_to(ROOT))
        found.extend(_walk(tree, rel, "", max_lines))
    return found


def _walk(node: ast.AST, rel: str, prefix: str, max_lines: int) -> list[tuple[str, str, int]]:
    found: list[tuple[str, str, int]] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = f"{prefix}{child.name}"
            if not isinstance(child, ast.ClassDef):
                lines = (child.end_lineno or child.lineno) - child.lineno + 1
                if lines > max_lines:
                    found.append((rel, name, lines))
            found.extend(_walk(child, rel, name + ".", max_lines))
        else:
            found.extend(_walk(child, rel, prefix, max_lines))
    return found


def duplicate_pairs(folder: Path) -> list[str] | None:
    """Rows of ``duplicates`` for ``folder`` that are not boilerplate; None when the tool is absent."""
    tool = shutil.which("duplicates")
    if tool is None:
        return None
    cmd = [tool, "--repo", str(folder), "--most", "200", "--seconds", "120"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout
    return [
        line.strip()
        for line in out.splitlines()
        if line.strip().startswith("D") and "boilerplate" not in line
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", default=list(DEFAULT_FOLDERS))
    parser.add_argument("--max-lines", type=int, default=90)
    parser.add_argument("--duplicates", action="store_true", help="also count repeated runs")
    args = parser.parse_args(argv)
    total = 0
    for name in args.folders:
        rows = long_functions(ROOT / name, args.max_lines)
        for rel, func, lines in sorted(rows, key=lambda r: -r[2]):
            print(f"{lines:4d}  {rel}:{func}")
        total += len(rows)
    print(f"functions over {args.max_lines} lines: {total}")
    if args.duplicates:
        for name in args.folders:
            pairs = duplicate_pairs(ROOT / name)
            if pairs is None:
                print("duplicates: tool not on PATH, repeated runs not counted")
                break
            for row in pairs:
                print(f"  {row}")
            print(f"repeated runs (non-boilerplate pairs) in {name}/: {len(pairs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
