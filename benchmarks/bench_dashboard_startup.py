"""Start-up of every dashboard (sizing, monitor, report) against a bare one-cell Voilà page, all served
in the same run with the same `aiworkbook app` flags (progressive rendering, the same template, the
same kernel manager). Target (issue 33): each dashboard's median time to ready at most 1.5x the bare
page's median (the ratio of medians; the median of per-round ratios is printed beside it).

The reference (BARE_CELL) is the floor of a widget page: Voilà + a fresh kernel + `import ipywidgets` +
one `ipywidgets.HTML` carrying `aiwb-ready`. A load is a fresh browser page from navigation until
Voilà's spinner is gone and every widget of the page that marks itself ready is in the page with its
`.aiwb-ready` (sizing: the sizer, the KV planner and the pre-flight panel; `expected_ready` counts them
in the notebook), not only the first one, which tests/browser/conftest.py waits for (the time to that
first marker is printed too); for sizing also until the headline shows its numbers
(`.aiwb-model-sizer .aiwb-value` not empty) and the memory chart has drawn its SVG, so a page that
marks itself ready early cannot pass for fast.
aiworkbook is byte-compiled first, as `pip install` leaves an installed copy and as the bare page's
ipywidgets are (a checkout under PYTHONDONTWRITEBYTECODE otherwise compiles it in every kernel; `--source`
measures it as found; benchmarks/bench_kernel_startup.py).
Pages alternate in rounds (bare, sizing, monitor, report, then the reverse), one warm-up load each is
not counted, each page is left (its kernel shut down) and the kernels are let end before the next
load. The machine's load average (1 min) is recorded before every load and printed with the result:
on a shared machine a ratio is only as good as the load beside it. Then, unless --viewers 0, ten
viewers at once on the sizing page: ten pages opened together, time until the last is ready.

    .venv/bin/python benchmarks/bench_dashboard_startup.py [--n 5] [--viewers 10] [--pages sizing,report]
or `python benchmarks/run.py dashboard_startup` (`make bench` runs it with the other benches).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the browser tests' flags
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_dashboards import _bare_notebook  # noqa: E402
from bench_kernel_startup import compile_bytecode  # noqa: E402
from chromium import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

TIMEOUT_MS = 180_000  # one load; ten kernels at once on two shared cores are slow, never unbounded
CROWD_S = 300.0  # all of the viewers at once must be ready within this; else the row says how many were
SETTLE_S = 20.0  # at most this long for the last page's kernels to end before the next load
BARE_CELL = """import ipywidgets as W
w = W.HTML("x")
w.add_class("aiwb-ready")
w"""
#: true once `n` elements carry `.aiwb-ready` outside any other such element (a widget nested in a
#: ready composite is that composite's part, not one more of the page's widgets)
ALL_READY_JS = """(n) => [...document.querySelectorAll('.aiwb-ready')]
  .filter((e) => !(e.parentElement && e.parentElement.closest('.aiwb-ready'))).length >= n"""
NUMBERS_JS = """() => {
  const v = document.querySelector('.aiwb-model-sizer .aiwb-value');
  return !!(v && v.textContent.trim()) && !!document.querySelector('.aiwb-model-sizer svg.marks');
}"""


def expected_ready(notebook: Path) -> int:
    """How many `.aiwb-ready` widgets the notebook's page shows: the aiworkbook.widgets composites it
    builds (each calls `ready()` last; widgets/base.py) and the explicit `add_class("aiwb-ready")` calls
    in its code cells (one branch of a conditional expression: the monitor builds FleetMonitor or
    GPUMonitor). Read from the code, never run; at least 1."""
    from aiworkbook.widgets import __all__ as composites

    def count(node: ast.AST) -> int:
        if isinstance(node, ast.IfExp):  # `A() if x else B()` shows one of them, never both
            return count(node.test) + max(count(node.body), count(node.orelse))
        here = 0
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            marks = name == "add_class" and [ast.dump(a) for a in node.args] == [
                ast.dump(ast.Constant("aiwb-ready"))
            ]
            here = int(name in composites or marks)
        return here + sum(count(child) for child in ast.iter_child_nodes(node))

    n = 0
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code":
            continue
        src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        n += count(ast.parse(src))
    return max(n, 1)


def _kernels(proc) -> list:
    import psutil

    try:
        kids = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    out = []
    for p in kids:
        try:
            if any("ipykernel" in a for a in p.cmdline()):
                out.append(p)
        except psutil.Error:
            pass
    return out


def _settle(procs) -> None:
    """Wait (bounded) until no kernel of a left page is still running: it would slow the next load."""
    deadline = time.monotonic() + SETTLE_S
    while time.monotonic() < deadline and any(_kernels(p) for p in procs):
        time.sleep(0.2)


def _leave(page) -> None:
    try:
        page.goto("about:blank", timeout=30_000)  # Voilà's unload beacon shuts the kernel down
    finally:
        page.close()


def _all_ready(page, n: int, timeout_ms: int = TIMEOUT_MS) -> None:
    """Voilà's spinner gone and `n` ready widgets in the page (ALL_READY_JS)."""
    page.wait_for_selector("#loading", state="hidden", timeout=timeout_ms)
    page.wait_for_function(ALL_READY_JS, arg=n, timeout=timeout_ms, polling=20)


def _wait_ready(page, t0: float, n: int, numbers: bool) -> tuple[float, float, float | None]:
    """(seconds to the first `.aiwb-ready`, to all `n` of them, to the sizer's numbers or None)."""
    page.wait_for_selector(".aiwb-ready", timeout=TIMEOUT_MS)
    first = time.perf_counter() - t0
    _all_ready(page, n)
    ready = time.perf_counter() - t0
    if not numbers:
        return first, ready, None
    page.wait_for_function(NUMBERS_JS, timeout=TIMEOUT_MS, polling=20)
    return first, ready, time.perf_counter() - t0


def _load(browser, url: str, n: int, numbers: bool) -> tuple[float, float, float | None]:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        t0 = time.perf_counter()
        page.goto(url, wait_until="commit", timeout=TIMEOUT_MS)
        return _wait_ready(page, t0, n, numbers)
    finally:
        _leave(page)


def _crowd(browser, url: str, n: int, viewers: int) -> tuple[float, int]:
    """(seconds from opening `viewers` pages at once until the last one is ready, how many were ready
    within CROWD_S)."""
    pages = [browser.new_page(viewport={"width": 1400, "height": 1000}) for _ in range(viewers)]
    ready = 0
    try:
        t0 = time.perf_counter()
        for p in pages:
            p.goto(url, wait_until="commit", timeout=TIMEOUT_MS)
        for p in pages:
            left_ms = max(1_000, int((CROWD_S - (time.perf_counter() - t0)) * 1000))
            try:
                _all_ready(p, n, left_ms)
                ready += 1
            except Exception:  # a Playwright timeout: counted as not ready
                pass
        return time.perf_counter() - t0, ready
    finally:
        for p in pages:
            _leave(p)


def measure(
    n: int = 5, viewers: int = 10, pages: tuple[str, ...] | None = None, bytecode: bool = True
) -> dict[str, object]:
    """Every load's seconds: {"bare": [...], "<dashboard>": [...] (all of its widgets ready),
    "sizing_first": [...] (its first `.aiwb-ready`), "sizing_numbers": [...], "load": [...] (the load
    average before each counted load), "crowd_bare", "crowd_sizing"} for the dashboards `pages`
    (default: all of aiworkbook.cli.app_cmds.DASHBOARDS). aiworkbook is byte-compiled first, as an
    installed copy is (bench_kernel_startup.compile_bytecode), unless `bytecode` is False."""
    from contextlib import ExitStack

    from playwright.sync_api import sync_playwright

    from aiworkbook.cli.app_cmds import DASHBOARDS, dashboard_path, launch, serving

    names = tuple(pages or DASHBOARDS)
    compiled = compile_bytecode(bytecode)
    times: dict[str, list[float]] = {
        "bare": [],
        **{d: [] for d in names},
        "sizing_first": [],
        "sizing_numbers": [],
    }
    loads: list[float] = []
    crowd = {"crowd_bare": 0.0, "crowd_sizing": 0.0, "ready_bare": 0, "ready_sizing": 0}
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw, ExitStack() as stack:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        specs = {d: launch(d, max_viewers=viewers + 2) for d in names}
        other = launch("sizing", max_viewers=viewers + 2)  # its own port; the notebook replaced
        bare = replace(
            other, argv=[*other.argv[:3], str(_bare_notebook(Path(tmp), BARE_CELL)), *other.argv[4:]]
        )
        procs = [stack.enter_context(serving(bare))] + [stack.enter_context(serving(specs[d])) for d in names]
        urls = {"bare": bare.url, **{d: specs[d].url for d in names}}
        want = {
            "bare": expected_ready(Path(bare.argv[3])),
            **{d: expected_ready(dashboard_path(d)) for d in names},
        }
        order = ("bare", *names)
        for name in order:  # warm-up: the disk cache, Chromium's first page; not counted
            _load(browser, urls[name], want[name], numbers=name == "sizing")
            _settle(procs)
        for i in range(n):
            for name in order if i % 2 == 0 else tuple(reversed(order)):
                loads.append(os.getloadavg()[0])
                first, ready, shown = _load(browser, urls[name], want[name], numbers=name == "sizing")
                times[name].append(ready)
                if shown is not None:
                    times["sizing_first"].append(first)
                    times["sizing_numbers"].append(shown)
                _settle(procs)
                print(f"  {name} {ready:.2f} s (load {loads[-1]:.1f})", file=sys.stderr, flush=True)
        if viewers and "sizing" in names:
            crowd["crowd_bare"], crowd["ready_bare"] = _crowd(browser, urls["bare"], want["bare"], viewers)
            _settle(procs)
            crowd["crowd_sizing"], crowd["ready_sizing"] = _crowd(
                browser, urls["sizing"], want["sizing"], viewers
            )
            _settle(procs)
        browser.close()
    return {
        **times,
        **crowd,
        "load": loads,
        "cores": os.cpu_count(),
        "pages": names,
        "viewers": viewers,
        "widgets": {d: want[d] for d in names},
        "bytecode": compiled,
    }


def _row(name: str, value: float, reference: float, note: str) -> dict:
    return {
        "name": name,
        "value": value,
        "unit": "s",
        "reference": reference,
        "ratio": value / reference,
        "note": note,
    }


def _load_note(m: dict) -> str:
    load = m["load"]
    return (
        f"load average (1 min) {min(load):.1f}-{max(load):.1f}, median {statistics.median(load):.1f} "
        f"on {m['cores']} logical CPUs; {m.get('bytecode', '')}"
    )


def rows_from(m: dict) -> list[dict]:
    bare = statistics.median(m["bare"])
    n = len(m["bare"])
    rows = []
    for d in m["pages"]:
        rows.append(
            {
                **_row(
                    f"{d}: time to all widgets .aiwb-ready (ratio of medians)",
                    statistics.median(m[d]),
                    bare,
                    f"n={n}; {m['widgets'][d]} widgets; target ≤ 1.5x; median of per-round ratios "
                    f"{statistics.median(s / b for s, b in zip(m[d], m['bare'], strict=True)):.2f}x; "
                    + _load_note(m),
                ),
            }
        )
    if "sizing" in m["pages"]:
        rows.append(
            _row(
                "sizing: time to headline + chart drawn (median)",
                statistics.median(m["sizing_numbers"]),
                bare,
                f"n={n}; reference: the bare page's ready",
            )
        )
    if m["viewers"] and "sizing" in m["pages"]:
        rows.append(
            _row(
                f"sizing: {m['viewers']} viewers at once, last ready",
                m["crowd_sizing"],
                m["crowd_bare"],
                f"ready: {m['ready_sizing']}/{m['viewers']} sizing, {m['ready_bare']}/{m['viewers']} bare"
                f" within {CROWD_S:.0f} s",
            )
        )
    return rows


def run(n: int = 5, viewers: int = 10) -> list[dict]:
    return rows_from(measure(n, viewers))


def main(argv: list[str] | None = None) -> int:
    from aiworkbook.cli.app_cmds import DASHBOARDS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5, help="counted loads of each page (at least 1; default 5)")
    ap.add_argument(
        "--viewers", type=int, default=10, help="sizing pages opened at once (0: none; default 10)"
    )
    ap.add_argument("--pages", default=",".join(DASHBOARDS), help="dashboards to load (default: all)")
    ap.add_argument("--source", action="store_true", help="do not byte-compile aiworkbook first")
    args = ap.parse_args(argv)
    pages = tuple(p for p in args.pages.split(",") if p)
    if args.n < 1 or not 0 <= args.viewers <= 50 or not pages or set(pages) - set(DASHBOARDS):
        ap.error(f"--n must be at least 1, --viewers 0 to 50, --pages some of {','.join(DASHBOARDS)}")
    m = measure(args.n, args.viewers, pages, bytecode=not args.source)
    print(f"{'page':<14} {'loads (s)':<48} median")
    for name in ("bare", *pages, *(("sizing_first", "sizing_numbers") if "sizing" in pages else ())):
        loads = " ".join(f"{x:.2f}" for x in m[name])
        print(f"{name:<14} {loads:<48} {statistics.median(m[name]):.2f}")
    print(f"{'load avg':<14} {' '.join(f'{x:.1f}' for x in m['load'])}")
    for r in rows_from(m):
        print(
            f"{r['name']:<52} {r['value']:7.2f} s  ref {r['reference']:6.2f} s  ratio {r['ratio']:.2f}x  {r['note']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
