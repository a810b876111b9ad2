"""What every composite shares: its CSS classes, a visible error area, validated callbacks, chart
slots and background work whose results reach the widgets from the kernel's event loop.

A Voilà viewer can fire any callback with any value, so every callback goes through `guarded`: a
SpecError (or any other error) becomes one line in the error area, never a traceback, and the widget
keeps its last good state.
"""

from __future__ import annotations

import asyncio
import collections
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import ipywidgets as W
import traitlets

from aiworkbook import _lazy_iri  # noqa: F401  (before anything imports altair; see its docstring)

from .i18n import check_lang, choice, label
from .idle import IDLE_WAIT_MAX_S, hurry, kernel_idle

_offline_done = False
_offline_lock = threading.Lock()
_chart_class: Any = None


def chart_view(chart: Any = None, lazy: bool = False, later: bool = False) -> Any:
    """An `alt.JupyterChart` showing `chart` (change it with `view.draw(chart)`), with Altair's JavaScript served from the installed
    packages (no CDN): `aiworkbook.charts.render.enable_offline` runs once per kernel. Under the
    dashboard server the chart loads that bundle from the server by URL (`shared_chart_class`), so a
    page fetches and evaluates it once for all its charts instead of once per chart. `lazy`: a
    `ChartView` that imports altair and builds the chart with the first one set (start-up); `later`: one
    whose widget draws through `draw_later`, so altair's import starts once the page's cells have run,
    not while they still build their widgets (two cores, one GIL: it slowed them)."""
    if lazy or later:
        return ChartView(chart, warm=not later)
    return _jupyter_chart(chart)


_charts_lock = threading.Lock()
_warming: threading.Thread | None = None
_charts_loaded = threading.Event()


def load_charts() -> Any:
    """`aiworkbook.charts` (and altair), imported by one thread at a time: the warm-up thread that
    `ChartView` starts and the kernel's loop never import altair's modules at once (two threads in one
    package's circular imports see it half-initialised, as numpy was; see PRELOAD)."""
    with _charts_lock:
        import numpy  # noqa: F401  (whole, before narwhals reads it: see PRELOAD)

        import aiworkbook.charts as charts

        for name in charts.__all__:  # the package loads its builders on first use: all of them here
            getattr(charts, name)
        _charts_loaded.set()
    return charts


def warm_charts() -> None:
    """Import altair on a background thread once per kernel, once the page's cells have run (the kernel
    idle, widgets/idle.py), so the first chart on the loop finds it loaded (a cell between two does not
    wait for a second of imports) and the cells that build the page are not slowed by it."""
    global _warming
    with _offline_lock:
        if _warming is None:
            idle = kernel_idle()

            def warm() -> None:
                idle.wait(IDLE_WAIT_MAX_S)
                load_charts()

            _warming = threading.Thread(target=warm, name="aiwb-charts", daemon=True)
            _warming.start()


class ChartView(W.VBox):
    """A chart's place on the page, empty until its first chart: `chart = alt.Chart` builds the
    `alt.JupyterChart` then (on the kernel's loop, where the chart is made), so a page is ready
    before altair (about a second of imports) has loaded; `chart` and `spec` read the one shown."""

    def __init__(self, chart: Any = None, warm: bool = True) -> None:
        super().__init__()
        self.add_class("aiwb-chart")  # styled while stale (LAYOUT_CSS)
        self.lang = "en"  # set by localize_choices: vega-embed's menu in the page's language
        self._view: Any = None
        self._make: Callable[[Any], Any] | None = None  # the newest chart waiting for altair
        self._drawn = threading.Event()
        self._drawn.set()
        self._delivery: Delivery | None = None
        if warm:
            warm_charts()
        if chart is not None:
            self.chart = chart

    def draw_later(self, make: Callable[[Any], Any]) -> None:
        """Draw `make(aiworkbook.charts)` now when altair is loaded, else once a background thread has
        loaded it (drawn on the kernel's loop): the headline and figures beside the chart show without
        waiting for altair's imports, and the thread starts them once the page's cells have run (the
        kernel idle, widgets/idle.py; `wait()` starts them at once). Without a kernel loop (scripts,
        tests) it draws now."""
        if _charts_loaded.is_set() or kernel_loop() is None:
            self._make = None
            self.draw(make(load_charts()))
            return
        self._make = make
        self._drawn.clear()
        if self._delivery is None:
            self._delivery = Delivery()
        delivery = self._delivery

        idle = kernel_idle()

        def load_then_draw() -> None:
            idle.wait(IDLE_WAIT_MAX_S)  # after the page's cells (widgets/idle.py)
            load_charts()
            delivery.post(self._draw_pending)

        threading.Thread(target=load_then_draw, name="aiwb-charts", daemon=True).start()

    def _draw_pending(self) -> None:
        make, self._make = self._make, None
        try:
            if make is not None:
                self.draw(make(load_charts()))
        finally:
            if self._make is None:
                self._drawn.set()

    def wait(self, timeout: float = 30.0) -> bool:
        """Block until a chart waiting for altair is drawn (True at once when none waits)."""
        if self._delivery is None:
            return True
        if not self._drawn.is_set():
            hurry()  # a cell waits for this chart: altair's imports start now, not when the kernel is idle
        return self._delivery.wait_for(self._drawn, timeout)

    def draw(self, chart: Any) -> None:
        """Show `chart`: the first one builds the `alt.JupyterChart` (altair imported then), later ones
        go through its `draw` (public traits only; `spec` is what is on screen)."""
        if self._view is not None:
            self._view.draw(chart)
            return
        load_charts()
        self._view = _jupyter_chart(chart)
        if self.lang != "en":
            self._view.embed_options = {**(self._view.embed_options or {}), "i18n": embed_i18n(self.lang)}
        self.children = [self._view]

    @property
    def chart(self) -> Any:
        """The chart given to Altair's `chart` trait (None for a plain chart drawn through `spec`)."""
        return None if self._view is None else self._view.chart

    @chart.setter
    def chart(self, value: Any) -> None:
        self.draw(value)

    @property
    def spec(self) -> Any:
        return None if self._view is None else self._view.spec

    @spec.setter
    def spec(self, value: Any) -> None:
        """Swap the spec of the chart on screen (the monitor's later ticks: new rows, same chart); there
        is none to swap before the first chart is drawn."""
        if self._view is None:
            raise ValueError("no chart drawn yet: draw() the first one")
        self._view.spec = value


def chart_row(chart: Any, beside: Any) -> W.HBox:
    """A chart with its words beside it; on a narrow page the words go below, never over the chart,
    which keeps its width and its legend (LAYOUT_CSS `.aiwb-chart-row`)."""
    row = W.HBox([chart, beside])
    row.add_class("aiwb-chart-row")
    return row


def _jupyter_chart(chart: Any = None) -> Any:
    global _offline_done, _chart_class
    load_charts()  # altair through the one lock, numpy first (see PRELOAD)
    import altair as alt

    from aiworkbook.charts.render import enable_offline

    with _offline_lock:
        if not _offline_done:
            enable_offline()
            _chart_class = shared_chart_class() or dashboard_chart_class()
            _offline_done = True
    # SVG, not canvas: a chart's words are text a screen reader, a search and the language test read
    view = _chart_class(None, embed_options=EMBED)
    view.draw(chart if chart is not None else alt.Chart(alt.Data(values=[])).mark_point())
    view.add_class("aiwb-chart")  # styled while stale (LAYOUT_CSS)
    return view


#: the module a shared chart's widget loads: Altair's offline bundle, imported by its URL on this page
#: (the browser's module map evaluates one URL once per page; anywidget imports a blob of `_esm`)
SHARED_ESM = """const url = new URL(%s, window.location.href).href;
const mod = await import(url);
export default mod.default;
"""


def shared_chart_class() -> Any:
    """A JupyterChart whose JavaScript is SHARED_ESM pointing at the cached bundle as the dashboard
    server serves it (aiworkbook.paths.CHART_JS_ENV, set by aiworkbook.widgets.dashboard_server), or
    None outside that server or when the bundle is not cached (then each chart carries the bundle)."""
    import json
    import os

    from aiworkbook.charts.render import bundle_file
    from aiworkbook.paths import CHART_JS_ENV

    prefix, path = os.environ.get(CHART_JS_ENV), bundle_file()
    if not prefix or path is None or not path.is_file():
        return None
    esm = SHARED_ESM % json.dumps(prefix + path.name)
    return type("SharedChart", (dashboard_chart_class(),), {"_esm": esm})


_dashboard_chart: Any = None

#: the Vega-Lite keys under which a spec holds other views (layers, concatenations, a facet's spec)
_VIEWS = ("layer", "concat", "hconcat", "vconcat", "spec")


def interactive(spec: dict[str, Any]) -> bool:
    """Whether a Vega-Lite spec declares parameters or selections (`params` on any view) or a transform
    that defines one: Altair's JupyterChart sets up its `params` and `selections` for those."""
    if spec.get("params") or any(isinstance(t, dict) and "param" in t for t in spec.get("transform") or ()):
        return True
    for key in _VIEWS:
        views = spec.get(key)
        for v in views if isinstance(views, list) else [views]:
            if isinstance(v, dict) and interactive(v):
                return True
    return False


def dashboard_chart_class() -> Any:
    """`alt.JupyterChart` with `draw(chart)`: a chart without parameters or selections (all of
    aiworkbook.charts') is shown through JupyterChart's public `spec` trait, unvalidated. Setting its
    `chart` trait instead checks the spec against the Vega-Lite JSON schema on every draw (0.05-0.1 s a
    chart on this 2-core machine, several times that under load), for the same builders
    tests/test_charts.py validates. Any other chart, or any chart under VegaFusion, takes Altair's
    path through `chart`. Only public names of Altair are used (no private method or trait)."""
    global _dashboard_chart
    if _dashboard_chart is None:
        import altair as alt

        class DashboardChart(alt.JupyterChart):
            def draw(self, chart: Any) -> None:
                """Show `chart` (None: nothing); `spec` is what is on screen afterwards."""
                spec = None if chart is None else chart.to_dict(validate=False)
                if spec is None or interactive(spec) or alt.data_transformers.active == "vegafusion":
                    self.chart = chart
                    return
                with self.hold_sync():  # one message to the page: the old chart's state gone, the new spec
                    if self.chart is not None:
                        self.chart = None  # Altair clears the previous chart's selections and params
                    self.spec = spec

        _dashboard_chart = DashboardChart
    return _dashboard_chart


#: vega-embed's options for every chart (https://github.com/vega/vega-embed#options)
EMBED: dict[str, Any] = {"renderer": "svg"}
#: vega-embed's action menu (its `i18n` option): the catalogues' `vega.<KEY>` entries
VEGA_MENU = (
    "CLICK_TO_VIEW_ACTIONS",
    "COMPILED_ACTION",
    "EDITOR_ACTION",
    "PNG_ACTION",
    "SOURCE_ACTION",
    "SVG_ACTION",
)


def embed_i18n(lang: str) -> dict[str, str]:
    """vega-embed's action menu in `lang`."""
    return {key: label(f"vega.{key}", lang) for key in VEGA_MENU}


def kernel_loop() -> asyncio.AbstractEventLoop | None:
    """The running event loop of the kernel when called on its thread (widget callbacks, cells), else None."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class OptionalBox(W.HBox):
    """A check box that switches a number box on; off, `value` is None (the library's default for the
    field). A subclass makes `self.toggle` (`toggle_box()`) and `self.number`, then calls `_wire()`;
    `_shown(v)` is what the number box shows of a value set from Python."""

    value = traitlets.Any(None)

    @staticmethod
    def toggle_box(description: str) -> W.Checkbox:
        return W.Checkbox(value=False, description=description, indent=False, layout=W.Layout(width="auto"))

    def _wire(self) -> None:
        self._setting = False
        super().__init__([self.toggle, self.number], layout=W.Layout(align_items="center"))
        self.toggle.observe(self._from_children, names="value")
        self.number.observe(self._from_children, names="value")

    def _shown(self, v: Any) -> Any:
        return v

    def _from_children(self, change: dict[str, Any]) -> None:
        if self._setting:
            return
        self.number.disabled = not self.toggle.value
        self.value = self.number.value if self.toggle.value else None

    @traitlets.observe("value")
    def _to_children(self, change: dict[str, Any]) -> None:
        v = change["new"]
        self._setting = True
        try:
            if v is not None:
                self.number.value = self._shown(v)
            self.toggle.value = v is not None
            self.number.disabled = v is None
        finally:
            self._setting = False


class OptionalNumber(OptionalBox):
    """A number that may be unset: the check box switches the number on; off, `value` is None (the
    library's default for the field). The number box keeps the field's low/high bounds."""

    def __init__(self, description: str, low: float, high: float, start: float, integer: bool) -> None:
        self.toggle = self.toggle_box(description)
        if integer:
            self.number: Any = W.BoundedIntText(
                value=int(start), min=int(low), max=int(high), disabled=True, layout=W.Layout(width="9em")
            )
        else:
            self.number = W.BoundedFloatText(
                value=start, min=low, max=high, step=0.05, disabled=True, layout=W.Layout(width="9em")
            )
        self._wire()


class Delivery:
    """Work handed from worker threads to the kernel's event loop, run there in order (widget updates
    reach the frontend from the loop, never from a thread). Without a loop (headless tests, scripts)
    it runs at once on the posting thread. `wait_for` lets a cell on the loop's thread wait for a
    result without deadlocking: it runs the pending work itself while it waits."""

    def __init__(self) -> None:
        self._loop = kernel_loop()
        self._pending: collections.deque[Callable[[], None]] = collections.deque()
        self._lock = threading.Lock()

    def post(self, fn: Callable[[], None]) -> None:
        with self._lock:
            self._pending.append(fn)
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.drain)
        else:
            self.drain()

    def drain(self) -> None:
        while True:
            with self._lock:
                if not self._pending:
                    return
                fn = self._pending.popleft()
            fn()

    def wait_for(self, event: threading.Event, timeout: float) -> bool:
        """Wait until `event` is set, running posted work meanwhile when called on the loop's thread."""
        deadline = time.monotonic() + timeout
        here = self._loop is not None and kernel_loop() is self._loop
        while not event.is_set():
            if time.monotonic() > deadline:
                return False
            if here:
                self.drain()
            event.wait(0.02)
        return True


#: Modules a widget's worker thread imports lazily. They are imported on the constructing thread
#: first. numpy is not here (0.1 s before a page is ready), though Altair (through narwhals) reads numpy
#: and pandas from sys.modules without the import lock, so a worker importing numpy while a chart was
#: built handed Altair a partially initialised numpy ("partially initialized module 'numpy' has no
#: attribute 'ndarray'"), an error cell under load: `load_charts`, through which every altair import
#: goes, imports numpy first, which waits for a worker's import of it to finish. pandas is not here: no widget worker imports it (the monitor builds its frames on the
#: kernel's loop), and narwhals skips a pandas nobody imported; loading it cost every sizing page 0.4 s.
PRELOAD = (
    "aiworkbook.sizing",
    "aiworkbook.sizing.capacity",
    "aiworkbook.sizing.estimate",
    "aiworkbook.sizing.plan",
    "aiworkbook.sizing.sweep",
    "aiworkbook.profile.snippets",
)  # not altair nor aiworkbook.charts: no worker imports them (charts are made on the kernel's loop)


def preload() -> None:
    """Import PRELOAD on this thread (idempotent, cheap once loaded)."""
    from importlib import import_module

    for name in PRELOAD:
        import_module(name)


class Background:
    """One worker thread per widget; the newest request wins (results of superseded ones are dropped)."""

    def __init__(self) -> None:
        preload()  # before any worker exists: see PRELOAD
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="aiwb")
        self._generation = 0
        self._lock = threading.Lock()
        self._delivered = threading.Event()
        self._delivered.set()
        self.delivery = Delivery()

    def submit(
        self, compute: Callable[[], Any], apply: Callable[[Any], None], fail: Callable[[BaseException], None]
    ) -> Future:
        with self._lock:
            self._generation += 1
            gen = self._generation
            self._delivered.clear()

        def deliver(fut: Future) -> None:
            try:
                if gen != self._generation:
                    return
                exc = fut.exception()
                if exc is not None:
                    fail(exc)
                else:
                    apply(fut.result())
            finally:
                if gen == self._generation:
                    self._delivered.set()

        fut = self._pool.submit(compute)
        fut.add_done_callback(lambda f: self.delivery.post(lambda: deliver(f)))
        return fut

    def wait(self, timeout: float = 30.0) -> bool:
        """Block until the newest request's result is shown (tests, scripts, a notebook cell)."""
        return self.delivery.wait_for(self._delivered, timeout)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class _Syncing:
    """`with widget.syncing():` the block sets the widget's own controls or value; its observers,
    which check `_syncing`, leave those changes alone."""

    def __init__(self, owner: Composite) -> None:
        self.owner = owner

    def __enter__(self) -> None:
        self.owner._syncing = True

    def __exit__(self, *exc: object) -> None:
        self.owner._syncing = False


class Composite(W.VBox):
    """A composite widget: `aiwb-<name>` on the box, `aiwb-error` on its error area, `aiwb-ready` last.

    Subclasses build their children, then call `self.ready()`. `error` is the text shown in the error
    area (empty: hidden); `result` is the observable outcome (a dict, replaced as a whole).
    """

    css: str = "composite"
    #: True: while an error shows, the last result stays on screen marked stale (`aiwb-stale` on the
    #: box and a line in the status area), so a refused input is never read as the figures' input.
    marks_stale: bool = False
    error = traitlets.Unicode("")
    result = traitlets.Dict()
    _syncing = False  # see `syncing()`

    def __init__(self, lang: str = "en", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lang = check_lang(lang)
        self.add_class("aiwb-widget")
        self.add_class(f"aiwb-{self.css}")
        self.error_area = W.HTML("", layout=W.Layout(display="none"))
        self.error_area.add_class("aiwb-error")
        self.status = W.HTML("")
        self.status.add_class("aiwb-status")

    def syncing(self) -> _Syncing:
        """`with self.syncing():` set controls or `value` without the observers re-running the widget."""
        return _Syncing(self)

    def t(self, key: str, **fmt: Any) -> str:
        """The label `key` in this widget's language."""
        return label(key, self.lang, **fmt)

    @traitlets.observe("error")
    def _show_error(self, change: dict[str, Any]) -> None:
        import html

        msg = change["new"]
        self.error_area.value = f"<b>{html.escape(self.t('error'))}</b> {html.escape(msg)}" if msg else ""
        self.error_area.layout.display = "" if msg else "none"
        stale = bool(self.marks_stale and msg and self.result)
        if self.marks_stale:
            (self.add_class if stale else self.remove_class)("aiwb-stale")
            self._mark_headline(stale)
            line = f"<i>{html.escape(self.t('stale'))}</i>"
            if stale:
                self.status.value = line
            elif self.status.value == line:
                self.status.value = ""
        if msg and not stale and hasattr(self, "status"):
            self.status.value = ""  # the work ended (in an error): no "Working…" left spinning

    def _mark_headline(self, stale: bool) -> None:
        """The headline above stale figures says so too: a "not updated" mark before it while stale."""
        import html

        head = getattr(self, "headline", None)
        if head is None:
            return
        mark = f'<span class="aiwb-stale-mark">{html.escape(self.t("stale_mark"))}</span>'
        if stale and not head.value.startswith(mark):
            head.value = mark + head.value
        elif not stale and head.value.startswith(mark):
            head.value = head.value[len(mark) :]

    def show_error(self, exc: BaseException) -> None:
        """One line for people: a SpecError's message (field, value, allowed) or the error's own text."""
        from aiworkbook.errors import SpecError

        shown = self.field_label(exc.field) if isinstance(exc, SpecError) else None
        if isinstance(exc, SpecError) and (self.lang != "en" or shown):  # the frame in the viewer's words
            from aiworkbook.errors import printable, quote
            from aiworkbook.message import words

            allowed = words(exc.allowed, self.lang)  # a Msg in the viewer's words, other text as it is
            where = f"{printable(exc.source, 400)}: " if exc.source else ""
            self.error = where + self.t(
                "error_line", field=shown or printable(exc.field), value=quote(exc.value), allowed=allowed
            )
            return
        self.error = str(exc) if isinstance(exc, SpecError) else f"{type(exc).__name__}: {exc}"

    def field_label(self, field: str) -> str | None:
        """The label the screen shows for a library field ("Sequence" for seq_len): the description of
        the control made for it (widgets/form.py `named`), or None where no control stands for it."""
        stack, seen = [self], set()
        while stack:
            w = stack.pop()
            if id(w) in seen:
                continue
            seen.add(id(w))
            if getattr(w, "aiwb_field", None) == field and getattr(w, "aiwb_label", ""):
                return str(w.aiwb_label)
            stack.extend(getattr(w, "children", ()) or ())
        return None

    def guarded(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn` as a callback that never raises: errors go to the error area."""

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except Exception as exc:  # a viewer can send anything: show it, keep working
                self.show_error(exc)
                return None

        return call

    def ready(self) -> None:
        """Mark the composite built (browser tests wait for `.aiwb-ready`); call last. Every choice
        widget inside shows its options in the widget's language from now on (localize_choices)."""
        localize_choices(self, self.lang)  # English too: "inference", not the library's "infer"
        kids: tuple[Any, ...] = tuple(getattr(self, "children", ()))
        self.children = [*kids, style_html()]
        self.add_class("aiwb-ready")


#: widgets that show and are never typed into: left out of `control_values`
_SHOWN_ONLY = (W.HTML, W.HTMLMath, W.Label, W.FloatProgress, W.IntProgress, W.Image)


def control_values(root: Any) -> list[tuple[Any, Any]]:
    """(widget, value) of every input control under `root`, to put back after a refused `value`
    (a dict can fail on its third field after its first two were set)."""
    out, stack, seen = [], [root], set()
    while stack:
        w = stack.pop()
        if id(w) in seen:
            continue
        seen.add(id(w))
        if w is not root and isinstance(w, W.ValueWidget) and not isinstance(w, (*_SHOWN_ONLY, Composite)):
            out.append((w, w.value))
        stack.extend(getattr(w, "children", ()) or ())
    return out


class ValueComposite(Composite):
    """A composite whose `value` (a dict of its fields) a notebook may set: `_apply_value(v)` sets the
    controls from it (a SpecError, shown, for what is not `value_takes`), except while the widget
    sets `value` itself (`syncing()`)."""

    value = traitlets.Dict()
    value_takes = "a dict"  # the error's "allowed" when `value` is set to other than a dict

    @traitlets.observe("value")
    def _value_set(self, change: dict[str, Any]) -> None:
        if self._syncing:
            return
        before = self._snapshot()
        try:
            self._take_value(change["new"])
        except Exception as exc:  # refused: nothing of it stays, neither in the controls nor in `value`
            with self.syncing():
                self._put_back(before)
                self.value = change["old"]
            self.show_error(exc)

    def _snapshot(self) -> Any:
        """What a refused `value` must leave as it was: every control's value (a widget that keeps
        fields outside its controls adds them)."""
        return control_values(self)

    def _put_back(self, snapshot: Any) -> None:
        for w, x in snapshot:
            try:
                if w.value != x:
                    w.value = x
            except Exception:  # a control that cannot go back keeps what it shows
                continue

    def _take_value(self, v: Any) -> None:
        from aiworkbook.errors import SpecError

        if not isinstance(v, dict):
            raise SpecError("value", type(v).__name__, self.value_takes)
        self._apply_value(v)

    def _apply_value(self, v: dict[str, Any]) -> None:
        raise NotImplementedError


class BackgroundComposite(ValueComposite):
    """A ValueComposite that computes its figures on a `Background` thread (`_bg`, set in `__init__`;
    None computes them at once on the caller's thread)."""

    _bg: Background | None = None

    def wait(self, timeout: float = 60.0) -> bool:
        """Block until the newest result is shown, its chart drawn too (`ChartView.draw_later`)."""
        shown = True if self._bg is None else self._bg.wait(timeout)
        chart = getattr(self, "chart", None)
        return shown and (not isinstance(chart, ChartView) or chart.wait(timeout))

    def close(self) -> None:
        if self._bg is not None:
            self._bg.shutdown()
        super().close()


#: Labels wrap instead of being cut ("Concurre…", "Upload config.js…") at 1400 and 1024 px: ipywidgets
#: gives labels `overflow: hidden; text-overflow: ellipsis; white-space: nowrap` and buttons a fixed width.
LAYOUT_CSS = """
.aiwb-widget .widget-label, .aiwb-widget .widget-label-basic, .aiwb-widget .widget-label-basic span {
  overflow: visible; text-overflow: clip; white-space: normal; line-height: 1.25; height: auto;
  align-self: center; }
.aiwb-widget .widget-checkbox, .aiwb-widget .widget-checkbox .widget-label-basic { width: auto;
  min-height: var(--jp-widgets-inline-height); }
.aiwb-widget .widget-inline-hbox { height: auto; min-height: var(--jp-widgets-inline-height); }
.aiwb-widget .widget-inline-hbox > .widget-label { width: auto; min-width: var(--jp-widgets-inline-label-width);
  max-width: 60%; }
.aiwb-widget .jupyter-button, .aiwb-widget .widget-upload { width: auto; min-width: 90px;
  padding: 0 10px; }
.aiwb-widget .widget-toggle-buttons .jupyter-button { width: auto; }
.aiwb-widget .aiwb-explain { line-height: 1.35; margin-top: 4px; }
.aiwb-widget .aiwb-style, .aiwb-widget .widget-html:has(> .widget-html-content:empty) { display: none; }
.aiwb-widget .aiwb-lora .widget-label { align-self: flex-start; padding-top: 4px; }
.aiwb-pattern-picker .widget-inline-hbox { width: min(720px, 100%); }
.aiwb-pattern-picker .widget-inline-hbox > .widget-label { width: 46% !important; max-width: 46%; text-align: right; }
.aiwb-chart-row { flex-wrap: wrap; gap: 8px; }
.aiwb-chart-row > .aiwb-chart { flex: 0 0 auto; }
.aiwb-chart-row > :not(.aiwb-chart) { flex: 1 1 320px; min-width: 320px; }
.aiwb-stale .aiwb-chart, .aiwb-stale .aiwb-figures,
.aiwb-stale .aiwb-value:not(.aiwb-headline) { opacity: 0.45; filter: grayscale(1);
  outline: 2px dashed #666; outline-offset: 3px; }
.aiwb-stale .aiwb-headline { outline: 2px dashed #666; outline-offset: 3px; }
.aiwb-stale-mark { font-weight: bold; border: 1px solid currentColor; border-radius: 3px; padding: 0 4px;
  margin-right: 6px; }
"""


def style_html() -> W.HTML:
    """The page's layout fixes (LAYOUT_CSS) as an invisible <style> element."""
    box = W.HTML(f"<style>{LAYOUT_CSS}</style>", layout=W.Layout(height="0px", margin="0px"))
    box.add_class("aiwb-style")
    return box


def where_html(measured: bool = False, lang: str = "en") -> W.HTML:
    """The one sentence a dashboard opens with: what is measured where (aiworkbook.provenance)."""
    import html

    from aiworkbook.provenance import here

    box = W.HTML(f"<i>{html.escape(here(measured).sentence(lang))}</i>")
    box.add_class("aiwb-where")
    return box


def localize_choices(root: Any, lang: str) -> None:
    """Each drop-down and toggle under `root` shows `choice.<label>` words in `lang`, also after its
    options are replaced: options and values stay the library's, so the code that builds and reads them
    is unchanged."""

    def relabel(w: Any) -> None:
        shown = tuple(choice(x, lang) for x in w._options_labels)
        if shown != tuple(w._options_labels):
            w.set_trait("_options_labels", shown)  # the words the browser shows; index and value unchanged

    seen: set[int] = set()
    stack = [root]
    while stack:
        w = stack.pop()
        if id(w) in seen:
            continue
        seen.add(id(w))
        if isinstance(w, W.widgets.widget_selection._Selection):
            relabel(w)
            w.observe(lambda change: relabel(change["owner"]), names="_options_labels")
        elif isinstance(w, ChartView):  # its chart, when it comes, has the page's menu words
            w.lang = lang
        elif lang != "en" and hasattr(w, "embed_options") and hasattr(w, "spec"):  # alt.JupyterChart
            w.embed_options = {**(w.embed_options or {}), "i18n": embed_i18n(lang)}
        stack.extend(getattr(w, "children", ()) or ())


def value_html(text: str) -> W.HTML:
    """A headline number area (`aiwb-value`)."""
    w = W.HTML(text)
    w.add_class("aiwb-value")
    return w


def none_first(values: Any) -> list[tuple[str, Any]]:
    """An optional choice's options: "none" (value "", shown as `choice.none` in the page's language)
    first, where a blank option read as a broken drop-down."""
    return [("none", ""), *((v, v) for v in values)]


def dropdown(options: Any, value: Any = None, description: str = "", **kw: Any) -> W.Dropdown:
    opts = list(options)
    return W.Dropdown(
        options=opts,
        value=value if value is not None else (opts[0] if opts else None),
        description=description,
        style={"description_width": "initial"},
        **kw,
    )


def html_table(header: list[str], rows: list[list[str]], css: str = "") -> str:
    """A small HTML table; every cell is escaped."""
    import html

    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="aiwb-table {css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
