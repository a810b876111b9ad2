"""ProfileLocker: lock the decision (pattern, node, workloads, proof results) as a LockedProfile,
check results against a profile (locked here or uploaded), and download the profile or the report.

Nothing a viewer types reaches the file system: uploads are read in memory and downloads are data
links; the library (aiworkbook.profile) does the locking and the checking.
"""

from __future__ import annotations

import base64
import html
import json
from typing import Any

import ipywidgets as W
import traitlets

from aiworkbook.errors import SpecError
from aiworkbook.message import words as said
from aiworkbook.persist import dumps_json

from .base import Composite, dropdown, html_table, none_first, value_html

MAX_PROFILE_BYTES = 8 << 20


def download_link(text: str, filename: str, mime: str, label: str) -> str:
    """An <a download> link carrying `text` as a data URL (works in Voilà without a server route)."""
    data = base64.b64encode(text.encode()).decode()
    return (
        f'<a class="aiwb-download" download="{html.escape(filename)}" '
        f'href="data:{mime};base64,{data}">{html.escape(label)}</a>'
    )


class ProfileLocker(Composite):
    """`value`: {"pattern", "node"}; `profile`: the LockedProfile (or None); `result`: the last action's
    outcome ({"action": "lock", "profile": ...} or {"action": "check", "report": ...}).

    Results and workloads come from the notebook (`add_result`, the sizer's workloads) or, for a check, with an
    uploaded profile."""

    css = "profile-locker"
    value = traitlets.Dict()
    #: the sizing "Add the current sizing" adds: a ModelSizer's value ({"model", "gpu", workload fields}),
    #: set by `follow(sizer)` or by hand
    sizing = traitlets.Dict()

    def __init__(
        self,
        pattern: str = "llm-inference",
        node: str | None = None,
        results: list[Any] | None = None,
        workloads: list[Any] | None = None,
        lang: str = "en",
        detect: bool = True,
    ) -> None:
        super().__init__(lang=lang)
        from aiworkbook.specs import PATTERNS, list_nodes

        self.profile: Any = None
        self.results: list[Any] = list(results or [])
        self.workloads: list[Any] = list(workloads or [])
        self._detect = detect
        nodes = [n.name for n in list_nodes()]
        self.pattern = dropdown(PATTERNS, pattern, self.t("pattern"))
        # no catalogue node: the profile records the hardware as detected; "none" shown, not a blank box
        self.node = dropdown(none_first(nodes), node or "", self.t("node"))
        self.lock_button = W.Button(description=self.t("lock"), icon="lock", button_style="primary")
        self.check_button = W.Button(description=self.t("check"), icon="check")
        self.report_button = W.Button(description=self.t("report"), icon="file")
        self.report_button.on_click(self.guarded(lambda _b: self.report()))
        self.add_button = W.Button(
            description=self.t("add_sizing"), icon="plus", layout=W.Layout(width="auto")
        )
        self.add_button.on_click(self.guarded(lambda _b: self.add_current_sizing()))
        self._empty_warned = False
        self.upload = W.FileUpload(accept=".json", multiple=False, description=self.t("profile"))
        self.lock_button.on_click(self.guarded(lambda _b: self.lock()))
        self.check_button.on_click(self.guarded(lambda _b: self.check()))
        self.upload.observe(self.guarded(self._uploaded), names="value")
        for c in (self.pattern, self.node):
            c.observe(self.guarded(self._inputs_changed), names="value")
        self.headline = value_html("")
        self.details = W.HTML("")
        self.download = W.HTML("")
        self.children = [
            W.HBox([self.pattern, self.node]),
            W.HBox([self.add_button, self.lock_button, self.check_button, self.report_button, self.upload]),
            self.error_area,
            self.headline,
            self.details,
            self.download,
        ]
        self._inputs_changed()
        self._summary()
        self.ready()

    def _inputs_changed(self, change: dict[str, Any] | None = None) -> None:
        self.value = {"pattern": self.pattern.value, "node": self.node.value or None}

    def add_result(self, result: Any) -> None:
        """A ProofResult (or its dict) to lock as a golden proof / check against the profile."""
        from aiworkbook.profile.lock import as_result

        self.results.append(as_result(result))
        self._summary()

    def collect(self, runner: Any) -> None:
        """Each result `runner` (a ProofRunner) finishes joins the profile to lock; a bad one shows in
        this widget's error area, never as a traceback."""
        add = self.guarded(self.add_result)
        runner.observe(lambda change: change["new"] and add(change["new"]), names="result")

    def follow(self, sizer: Any) -> traitlets.dlink:
        """Keep `sizing` at a ModelSizer's value, for "Add the current sizing"; `.unlink()` cuts it."""
        return traitlets.dlink((sizer, "value"), (self, "sizing"))

    def add_current_sizing(self) -> Any:
        """The sizing held (a ModelSizer's value) as a workload of the profile, checked now."""
        from aiworkbook.profile.lock import as_entry
        from aiworkbook.sizing import Workload

        v = dict(self.sizing)
        if not v.get("model"):
            raise SpecError("sizing", "none", self.t("no_sizing"))
        fields = {k: x for k, x in v.items() if k not in ("model", "gpu", "config")}
        w = Workload(**fields)
        name = f"{v['model']}-{w.mode}-{len(self.workloads) + 1}"
        entry = as_entry({"name": name, "model": v["model"], "gpu": v.get("gpu"), "workload": w}, name)
        entry.spec()  # a model the profile cannot load is refused here, not at lock time
        self.workloads.append(entry)
        self._summary()
        self.headline.value = html.escape(
            self.t("sizing_added", name=name, model=entry.model, gpu=entry.gpu or "—")
        )
        self.error = ""
        return entry

    def _summary(self) -> None:
        from aiworkbook.charts.labels import verdict_label
        from aiworkbook.provenance import verdict_words

        rows = [
            [
                r.proof,
                verdict_label(verdict_words(r.to_dict()), self.lang),
                r.device,
                ", ".join(r.flags) or "—",
            ]
            for r in self.results
        ]
        table = (
            html_table([self.t("proof"), self.t("verdict"), self.t("device"), self.t("flags")], rows)
            if rows
            else ""
        )
        self.details.value = table

    # -- actions -------------------------------------------------------------------------------
    def lock(self) -> Any:
        """Lock a profile from the pattern, node, workloads and results held; offer it for download."""
        from aiworkbook.profile import lock

        if not self.results and not self.workloads and not self._empty_warned:
            self._empty_warned = True  # the next press locks it anyway
            warn = html.escape(self.t("empty_lock"))
            self.headline.value = f'<span class="aiwb-warning" style="color:#D55E00">{warn}</span>'
            self.result = {"action": "warn-empty"}
            return None
        self._empty_warned = False
        prof = lock(
            self.pattern.value,
            node=self.node.value or None,
            workloads=self.workloads,
            results=self.results,
            detected=True if self._detect else None,
            lang=self.lang,
        )
        self.profile = prof
        doc = prof.to_dict()
        self.headline.value = (
            f"<b>{html.escape(self.t('lock'))}</b>: {html.escape(prof.pattern)}, "
            f"{html.escape(self.t('proof'))} × {len(prof.proofs)}, "
            f"{html.escape(self.t('workloads'))} × {len(prof.workloads)}"
        )
        self.download.value = download_link(
            dumps_json(doc, indent=2),
            "profile.json",
            "application/json",
            self.t("download_profile"),
        )
        self.error = ""
        self.result = {"action": "lock", "profile": json.loads(dumps_json(doc))}
        return prof

    def _uploaded(self, change: dict[str, Any]) -> None:
        from aiworkbook.profile import profile_from_dict

        files = change["new"]
        if not files:
            return
        f = files[0]
        content = bytes(f["content"])
        if len(content) > MAX_PROFILE_BYTES:
            raise SpecError(
                "profile", f"{len(content):,} bytes", f"a profile under {MAX_PROFILE_BYTES:,} bytes"
            )
        try:
            doc = json.loads(content.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):  # ValueError: bad JSON, 4300+ digit ints
            raise SpecError("profile", f.get("name", "file"), "a locked profile JSON (UTF-8)") from None
        if not isinstance(doc, dict):
            raise SpecError("profile", type(doc).__name__, "a locked profile JSON object")
        self.profile = profile_from_dict(doc, source=str(f.get("name", "upload")))
        self.headline.value = f"{html.escape(self.t('profile'))}: {html.escape(self.profile.pattern)}"
        self.error = ""

    def report(self) -> str:
        """The stakeholder report of the profile (aiworkbook.profile.report: offline HTML, inline SVG
        charts), offered as a download."""
        from aiworkbook.profile.report import render_html

        if self.profile is None:
            raise SpecError("profile", "none", "lock a profile or upload one first")
        page = render_html(self.profile, self.lang)
        self.download.value = download_link(page, "report.html", "text/html", self.t("download_report"))
        self.error = ""
        self.result = {"action": "report", "bytes": len(page.encode())}
        return page

    def check(self) -> Any:
        """Check the results held against the profile (no proof re-runs from a dashboard)."""
        from aiworkbook.profile import check

        if self.profile is None:
            raise SpecError("profile", "none", "lock a profile or upload one first")
        report = check(self.profile, results=self.results, rerun=False)
        lines = [c.line() for c in report.checks] + report.warnings()
        from aiworkbook.charts.colours import VERDICT_COLOURS

        colour = VERDICT_COLOURS["pass" if report.exit_code == 0 else "fail"]
        words = html.escape(self.t(f"check_{report.exit_code}"))  # what the exit code means, in words
        self.headline.value = f'<b style="color:{colour}">{words}</b>'
        items = "".join(
            f"<li>{html.escape(said(x, self.lang))}</li>" for x in lines
        )  # in the page's language
        self.details.value = f"<ul>{items}</ul>"
        doc = report.to_dict()
        self.download.value = download_link(
            dumps_json(doc, indent=2), "check.json", "application/json", self.t("download_check")
        )
        self.error = ""
        self.result = {"action": "check", "report": json.loads(dumps_json(doc))}
        return report
