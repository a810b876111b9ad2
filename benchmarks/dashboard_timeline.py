"""Where a dashboard's load time goes, in the browser: when each thing appears in the page (seconds from
navigation, Chromium's performance.now), per load and the median, beside the bare one-cell page of
benchmarks/bench_dashboard_startup.py. A diagnostic, not a ratio: `make bench` does not run it.

Events: the kernel's websocket made, open, its first message; the first cell output; the n-th widget
marked `.aiwb-ready` (ready-1, ready-2, ...); the sizer's headline numbers and its chart's SVG; the
last websocket message before the page settled, and how many there were.

    .venv/bin/python benchmarks/dashboard_timeline.py [PAGES] [N]     (default: bare,sizing 3)
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the browser tests' flags
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_dashboard_startup import BARE_CELL, _leave, _settle, expected_ready  # noqa: E402
from bench_dashboards import _bare_notebook  # noqa: E402
from chromium import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

TIMEOUT_MS = 120_000
STAMP_JS = r"""
window.__ev = [];
const st = (k) => { if (!window.__ev.find((e) => e[0] === k)) window.__ev.push([k, performance.now()]); };
const WS = window.WebSocket;
window.WebSocket = function (...a) {
  const w = new WS(...a); st('ws-new'); w.addEventListener('open', () => st('ws-open'));
  let n = 0;
  w.addEventListener('message', () => { n++; if (n === 1) st('ws-first-msg');
    window.__last_msg = performance.now(); window.__nmsg = n; });
  return w;
};
window.WebSocket.prototype = WS.prototype; Object.assign(window.WebSocket, WS);
new MutationObserver(() => {
  const r = document.querySelectorAll('.aiwb-ready').length; if (r) st('ready-' + r);
  if (document.querySelector('.jp-OutputArea-output')) st('first-output');
  const v = document.querySelector('.aiwb-model-sizer .aiwb-value');
  if (v && v.textContent.trim()) st('headline');
  if (document.querySelector('.aiwb-model-sizer svg.marks')) st('chart');
}).observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
"""


def main(argv: list[str]) -> int:
    from playwright.sync_api import sync_playwright

    from aiworkbook.cli.app_cmds import launch, serving

    pages = (argv[0] if argv else "bare,sizing").split(",")
    n = int(argv[1]) if len(argv) > 1 else 3
    seen: dict[str, list[dict[str, float]]] = {p: [] for p in pages}
    counts: dict[str, list[int]] = {p: [] for p in pages}
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw, ExitStack() as stack:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        urls, want, procs = {}, {}, []
        for p in pages:
            spec = launch("sizing" if p == "bare" else p, max_viewers=4)
            if p == "bare":
                spec = replace(
                    spec, argv=[*spec.argv[:3], str(_bare_notebook(Path(tmp), BARE_CELL)), *spec.argv[4:]]
                )
            procs.append(stack.enter_context(serving(spec)))
            urls[p], want[p] = spec.url, expected_ready(Path(spec.argv[3]))
        for i in range(n + 1):  # the first round warms the disk cache: not counted
            for p in pages if i % 2 == 0 else pages[::-1]:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.add_init_script(STAMP_JS)
                page.goto(urls[p])
                page.wait_for_function(
                    "(n) => document.querySelectorAll('.aiwb-ready').length >= n",
                    arg=want[p],
                    timeout=TIMEOUT_MS,
                    polling=20,
                )
                if p == "sizing":
                    page.wait_for_selector(".aiwb-model-sizer svg.marks", timeout=TIMEOUT_MS)
                time.sleep(0.5)  # the messages after the last widget
                ev = dict(page.evaluate("window.__ev.concat([['last-msg', window.__last_msg]])"))
                counts[p].append(int(page.evaluate("window.__nmsg")))
                _leave(page)
                _settle(procs)
                if i:
                    seen[p].append(ev)
                else:
                    counts[p].clear()
        browser.close()
    for p in pages:
        print(p)
        for key in seen[p][0]:
            vals = [r[key] / 1000 for r in seen[p] if r.get(key) is not None]
            cells = " ".join(f"{v:6.2f}" for v in vals)
            print(f"  {key:14s} {cells}   median {statistics.median(vals):.2f}")
        print(f"  {'messages':14s} " + " ".join(f"{c:6d}" for c in counts[p]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
