"""Dashboards in a real browser (Debian Chromium + Playwright) against `aiworkbook app`'s Voilà.

Figures, each against a bare Voilà notebook measured in the same run (one IntText whose kernel
callback writes a Label: the floor of Voilà + a kernel + a widget round trip on this machine):
- time to interactive of each dashboard (page request to `.aiwb-ready`; target < 5 s), first viewer
  (cold kernel) and a second viewer;
- control change to updated numbers in the browser (sizing: concurrency typed, headline changed;
  median of 5; target < 200 ms);
- the monitor's kernel CPU at 2 Hz while a page shows it (target < 2 % of one core);
- memory per viewer: the kernel's USS once the dashboard is ready;
- the sizing dashboard with a pre-heated kernel (`aiworkbook app sizing --preheat 1`).
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the browser tests' flags
from chromium import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

ARGS = CHROMIUM_ARGS

TIMEOUT_MS = 180_000
CPU_WINDOW_S = 20.0
PREHEAT_WAIT_S = 40.0  # a pre-heated kernel runs the whole notebook before the first viewer

BARE_CELL = """import ipywidgets as W
box = W.IntText(value=8, description="Concurrency")
out = W.HTML("8")
out.add_class("aiwb-value")
box.observe(lambda ch: setattr(out, "value", f"{ch['new']} x"), names="value")
ui = W.VBox([box, out])
ui.add_class("aiwb-ready")
ui"""


def _bare_notebook(folder: Path, cell: str = BARE_CELL) -> Path:
    """bare.ipynb in `folder`: one code cell (`cell`), the Python 3 kernel."""
    import nbformat as nbf

    nb = nbf.v4.new_notebook()
    nb.cells = [nbf.v4.new_code_cell(cell)]
    nb.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}}
    path = folder / "bare.ipynb"
    nbf.write(nb, path)
    return path


def _kernels(proc) -> list:
    import psutil

    return [
        p
        for p in psutil.Process(proc.pid).children(recursive=True)
        if any("ipykernel" in a for a in p.cmdline())
    ]


def _leave(page) -> None:
    page.goto("about:blank")  # fires Voilà's unload beacon: the kernel is shut down
    page.close()


def _open(browser, url: str) -> tuple[object, float]:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    t0 = time.perf_counter()
    page.goto(url, wait_until="commit", timeout=TIMEOUT_MS)
    page.wait_for_selector("#loading", state="hidden", timeout=TIMEOUT_MS)
    page.wait_for_selector(".aiwb-ready", timeout=TIMEOUT_MS)
    return page, time.perf_counter() - t0


def _change_latency(page, scope: str, label: str, values: list[int]) -> float:
    """Median ms from typing a value + Enter to the first `.aiwb-value` text changing (measured in the page)."""
    field = (
        page.locator(f"{scope} .widget-inline-hbox")
        .filter(has=page.locator("label", has_text=label))
        .locator("input")
        .first
    )
    headline = page.locator(f"{scope} .aiwb-value").first
    times = []
    for v in values:
        field.fill(str(v))
        handle = headline.element_handle()
        page.evaluate(
            """el => { window.__aiwb = {t0: 0, t1: 0};
                 new MutationObserver((m, obs) => { window.__aiwb.t1 = performance.now(); obs.disconnect(); })
                   .observe(el, {childList: true, subtree: true, characterData: true}); }""",
            handle,
        )
        page.evaluate("() => { window.__aiwb.t0 = performance.now(); }")
        field.press("Enter")
        page.wait_for_function("() => window.__aiwb.t1 > 0", timeout=60_000)
        times.append(page.evaluate("() => window.__aiwb.t1 - window.__aiwb.t0"))
    return statistics.median(times)


def _cpu_share(kernel, seconds: float) -> float:
    c0 = sum(kernel.cpu_times()[:2])
    t0 = time.monotonic()
    time.sleep(seconds)
    return (sum(kernel.cpu_times()[:2]) - c0) / (time.monotonic() - t0)


def _row(name, value, unit, reference, note):
    ratio = value / reference if isinstance(value, int | float) and reference else None
    return {"name": name, "value": value, "unit": unit, "reference": reference, "ratio": ratio, "note": note}


def run() -> list[dict]:
    from aiworkbook.widgets.i18n import label
    from playwright.sync_api import sync_playwright

    from aiworkbook.cli.app_cmds import launch, serving

    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        base = launch("sizing")
        bare = replace(base, argv=[*base.argv[:3], str(_bare_notebook(Path(tmp))), *base.argv[4:]])
        with serving(bare) as proc:
            page, ref_cold = _open(browser, bare.url)
            ref_mem = _kernels(proc)[0].memory_full_info().uss
            ref_change = _change_latency(page, ".jp-OutputArea", "Concurrency", [9, 10, 11, 12, 13])
            ref_cpu = _cpu_share(_kernels(proc)[0], CPU_WINDOW_S / 2)
            _leave(page)
            page, ref_warm = _open(browser, bare.url)
            _leave(page)
        for name in ("sizing", "monitor", "report"):
            spec = launch(name)
            with serving(spec) as proc:
                page, cold = _open(browser, spec.url)
                kernel = _kernels(proc)[0]
                mem = kernel.memory_full_info().uss
                if name == "sizing":
                    ms = _change_latency(
                        page, ".aiwb-model-sizer", label("concurrency", "en"), [9, 10, 11, 12, 13]
                    )
                    rows.append(
                        _row("sizing: control change to new numbers", ms, "ms", ref_change, "target < 200 ms")
                    )
                if name == "monitor":
                    cpu = _cpu_share(kernel, CPU_WINDOW_S)
                    rows.append(
                        _row(
                            "monitor: kernel CPU at 2 Hz (share of a core)",
                            cpu,
                            "core",
                            ref_cpu,
                            f"target < 0.02; reference: the bare kernel idle; window {CPU_WINDOW_S:.0f} s",
                        )
                    )
                _leave(page)
                page, warm = _open(browser, spec.url)
                _leave(page)
            rows.append(
                _row(f"{name}: time to interactive, first viewer", cold, "s", ref_cold, "target < 5 s")
            )
            rows.append(
                _row(f"{name}: time to interactive, next viewer", warm, "s", ref_warm, "target < 5 s")
            )
            rows.append(
                _row(f"{name}: kernel memory per viewer (USS)", mem / 2**20, "MiB", ref_mem / 2**20, "")
            )
        # Pre-heated kernels: Voilà executes the notebook before the viewer comes (--preheat 1).
        spec = launch("sizing", preheat=1)
        with serving(spec):
            time.sleep(PREHEAT_WAIT_S)
            page, heated = _open(browser, spec.url)
            _leave(page)
        rows.append(
            _row(
                "sizing --preheat 1: time to interactive",
                heated,
                "s",
                ref_cold,
                "target < 5 s; pool filled first",
            )
        )
        browser.close()
    return rows


if __name__ == "__main__":
    print(json.dumps(run(), indent=1))
