"""Start-up work of a dashboard's kernel, without a browser: the CPU seconds a fresh kernel spends from
its start until the dashboard's cells have run and every widget has shown its first result, against a
kernel that runs the bare page's one cell (`import ipywidgets` + one HTML widget; the reference of
benchmarks/bench_dashboard_startup.py), both measured in the same run, rounds alternating.

CPU time (user + system of the kernel process, all its threads, from psutil) rather than wall time:
on a machine shared by several people the wall clock of a browser load varies with the neighbours'
work, the CPU a kernel spends does much less, so this tracks the cost the browser bench's ratio is
made of. The kernel runs as `aiworkbook app` runs it (the Python 3 kernel in the notebook's folder,
the chart bundle served by URL). Rows: the kernel's CPU from its start (ratio against the bare
kernel's), the cells' CPU alone (the page's own work beyond a kernel's start) and the wall time from
the first cell to settled, each the median of the rounds.

    .venv/bin/python benchmarks/bench_kernel_startup.py [--n 5] [--pages sizing,monitor,report]
or `python benchmarks/run.py kernel_startup` (`make bench` runs it with the other benches).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DASHBOARDS = ROOT / "widgets" / "dashboards"
TIMEOUT_S = 180.0  # one cell; a loaded two-core machine is slow, never unbounded
BARE_CELL = """import ipywidgets as W
w = W.HTML("x")
w.add_class("aiwb-ready")
w"""
#: run after the page's cells: every widget that computes on a worker thread has shown its result
#: (BackgroundComposite.wait drains the results posted to the kernel's loop, as the loop would)
SETTLE_CELL = """import ipywidgets.widgets.widget as _aiwb_w
for _aiwb_x in list(_aiwb_w._instances.values()):
    if hasattr(_aiwb_x, "_bg") and callable(getattr(_aiwb_x, "wait", None)):
        assert _aiwb_x.wait(120), "a widget did not show its first result"
"""


def compile_bytecode(enabled: bool = True) -> str:
    """Byte-compile aiworkbook and its widgets where they are imported from, as `pip install` does when
    it installs a package: the bare page's ipywidgets came compiled from pip, while a checkout under
    PYTHONDONTWRITEBYTECODE (set in some shared workplaces) compiles every aiworkbook module from source
    in every kernel (about 0.1 s of a sizing kernel), a cost no installed copy has. Returns the words for
    the rows' notes. `enabled=False` (`--source`): measure the checkout as it is."""
    if not enabled:
        return "aiworkbook as found (--source)"
    import compileall

    import aiworkbook.widgets

    import aiworkbook

    folders = {Path(aiworkbook.__file__).parent, Path(aiworkbook.widgets.__file__).parent}
    done = all(compileall.compile_dir(str(f), quiet=2) for f in sorted(folders))
    return (
        "aiworkbook byte-compiled as pip installs it" if done else "aiworkbook not byte-compiled (read-only)"
    )


def code_cells(notebook: Path) -> list[str]:
    """The code cells of a notebook, in order, as Voilà runs them."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    out = []
    for c in cells:
        if c["cell_type"] == "code":
            out.append(c["source"] if isinstance(c["source"], str) else "".join(c["source"]))
    return out


def _run(kc, code: str) -> None:
    """Run `code` in the kernel and wait for its reply; an error in the cell fails the bench."""
    msg_id = kc.execute(code, store_history=False)
    reply = kc.get_shell_msg(timeout=TIMEOUT_S)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=TIMEOUT_S)
    content = reply["content"]
    if content["status"] != "ok":
        raise RuntimeError(f"{content.get('ename')}: {content.get('evalue')}")


def kernel_load(cells: list[str], cwd: Path) -> dict[str, float]:
    """One fresh kernel through `cells` and SETTLE_CELL: {"cpu": from its start, "cells_cpu", "wall"},
    and "ready_cpu", "ready_wall": from the first cell until the last one has run (every widget built
    and marked `aiwb-ready`; what the page still does after that, a chart waiting for altair, is not in
    them)."""
    import psutil
    from jupyter_client.manager import KernelManager

    env = {**os.environ, "AIWORKBOOK_CHART_JS": "/aiwb/charts/"}  # as dashboard_server sets it
    km = KernelManager(kernel_name="python3")
    # the kernel's own log (its TCP warning) is not the bench's output; a failing cell still fails it
    km.start_kernel(cwd=str(cwd), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kc = km.client()
    try:
        kc.start_channels()
        kc.wait_for_ready(timeout=TIMEOUT_S)
        proc = psutil.Process(km.provisioner.pid)  # type: ignore[union-attr]

        def cpu() -> float:
            t = proc.cpu_times()
            return t.user + t.system

        started, t0 = cpu(), time.perf_counter()
        for code in cells:
            _run(kc, code)
        built, built_wall = cpu(), time.perf_counter() - t0  # every widget built and marked ready
        _run(kc, SETTLE_CELL)
        wall, done = time.perf_counter() - t0, cpu()
        return {
            "cpu": done,
            "cells_cpu": done - started,
            "wall": wall,
            "ready_cpu": built - started,
            "ready_wall": built_wall,
        }
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def run(
    n: int = 5, pages: tuple[str, ...] = ("sizing", "monitor", "report"), bytecode: bool = True
) -> list[dict]:
    import tempfile

    compiled = compile_bytecode(bytecode)
    loads: dict[str, list[dict[str, float]]] = {p: [] for p in ("bare", *pages)}
    cells = {"bare": [BARE_CELL], **{p: code_cells(DASHBOARDS / f"{p}.ipynb") for p in pages}}
    order = ["bare", *pages]
    with tempfile.TemporaryDirectory() as tmp:
        for p in order:  # one warm-up each (the disk cache), not counted
            kernel_load(cells[p], DASHBOARDS if p != "bare" else Path(tmp))
        for i in range(n):
            for p in order if i % 2 == 0 else order[::-1]:
                loads[p].append(kernel_load(cells[p], DASHBOARDS if p != "bare" else Path(tmp)))

    def med(p: str, key: str) -> float:
        return statistics.median(x[key] for x in loads[p])

    load = os.getloadavg()[0]
    rows = []
    for p in pages:
        note = f"median of {n} alternating rounds; load average {load:.2f}; {compiled}"
        rows += [
            {
                "name": f"{p} kernel CPU, start to first results",
                "value": med(p, "cpu"),
                "unit": "s",
                "reference": med("bare", "cpu"),
                "ratio": med(p, "cpu") / med("bare", "cpu"),
                "note": f"reference: a kernel running the bare page's cell; {note}",
            },
            {
                "name": f"{p} cells CPU (beyond the kernel's start)",
                "value": med(p, "cells_cpu"),
                "unit": "s",
                "reference": med("bare", "cells_cpu"),
                "ratio": med(p, "cells_cpu") / med("bare", "cells_cpu"),
                "note": f"reference: the bare cell's; {note}",
            },
            {
                "name": f"{p} cells CPU to ready (last cell run)",
                "value": med(p, "ready_cpu"),
                "unit": "s",
                "reference": med("bare", "ready_cpu"),
                "ratio": med(p, "ready_cpu") / med("bare", "ready_cpu"),
                "note": f"reference: the bare cell's; {note}",
            },
            {
                "name": f"{p} cells wall to ready (last cell run)",
                "value": med(p, "ready_wall"),
                "unit": "s",
                "reference": med("bare", "ready_wall"),
                "ratio": med(p, "ready_wall") / med("bare", "ready_wall"),
                "note": f"reference: the bare cell's; {note}",
            },
            {
                "name": f"{p} cells wall, first cell to settled",
                "value": med(p, "wall"),
                "unit": "s",
                "reference": med("bare", "wall"),
                "ratio": med(p, "wall") / med("bare", "wall"),
                "note": f"reference: the bare cell's; {note}",
            },
        ]
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5, help="counted rounds (default 5)")
    ap.add_argument("--pages", default="sizing,monitor,report", help="dashboards, comma-separated")
    ap.add_argument("--source", action="store_true", help="do not byte-compile aiworkbook first")
    args = ap.parse_args(argv)
    pages = tuple(p for p in args.pages.split(",") if p)
    for p in pages:
        if not (DASHBOARDS / f"{p}.ipynb").is_file():
            print(f"--pages: no dashboard {p!r} (allowed: sizing, monitor, report)", file=sys.stderr)
            return 2
    if args.n < 1:
        print(f"--n: {args.n} (allowed: 1 or more)", file=sys.stderr)
        return 2
    for r in run(args.n, pages, bytecode=not args.source):
        print(
            f"{r['name']:<46} {r['value']:8.3f} {r['unit']}  ref {r['reference']:.3f}  {r['ratio']:.2f}x  {r['note']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
