"""`make bench`: run every benchmarks/bench_*.py and print each figure as a ratio against its
reference measured in the same run (never an absolute time judged against a constant).

Each bench module exposes `run() -> list[dict]` with rows {name, value, unit, reference, ratio, note}.
`python benchmarks/run.py [substring ...] [--json FILE]` runs the modules whose name contains a substring;
--json writes {"kind": "aiworkbook.bench-results", "schema_version": 1, "rows": [...]} atomically.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCH_KIND = "aiworkbook.bench-results"
BENCH_SCHEMA_VERSION = 1


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("only", nargs="*", help="run only bench modules whose name contains one of these")
    ap.add_argument("--json", help="also write all rows to this JSON file")
    args = ap.parse_args(argv)
    if args.json:
        try:
            from aiworkbook.persist import check_writable
        except ImportError:  # run as a script from a checkout without an install: the package beside it
            sys.path.insert(0, str(HERE.parent))
            from aiworkbook.persist import check_writable

        check_writable(args.json, "json")  # before the benches run, not after
    rows: list[dict] = []
    for path in sorted(HERE.glob("bench_*.py")):
        if args.only and not any(s in path.stem for s in args.only):
            continue
        t0 = time.perf_counter()
        try:
            got = _load(path).run()
        except Exception as exc:  # one broken bench must not hide the others' figures
            print(f"{path.stem}: FAILED ({type(exc).__name__}: {exc})", file=sys.stderr)
            rows.append({"bench": path.stem, "name": "(failed)", "note": str(exc)})
            continue
        for r in got:
            rows.append({"bench": path.stem, **r})
        print(f"# {path.stem} ({time.perf_counter() - t0:.1f} s)")
        for r in got:
            ratio = r.get("ratio")
            ratio_s = f"{ratio:.3f}x" if isinstance(ratio, int | float) else "-"
            print(
                f"  {r['name']:<48} {_fmt(r.get('value')):>12} {r.get('unit', ''):<8} "
                f"ref {_fmt(r.get('reference')):>10}  ratio {ratio_s:>9}  {r.get('note', '')}"
            )
    if args.json:
        from aiworkbook.persist import write_json

        write_json(args.json, {"rows": rows}, kind=BENCH_KIND, schema_version=BENCH_SCHEMA_VERSION)
    return 1 if any(r.get("name") == "(failed)" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
