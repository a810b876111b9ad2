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

from .base import Composite, dropdown, html_table, value_html

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

    Results and workloads come from the notebook (`add_result`, `add_workload`) or, for a check, with an
    uploaded profile."""

    css = "profile-locker"
    value = traitlets.Dict()

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
        self.node = dropdown(["", *nodes], node or "", self.t("node"))
        self.lock_button = W.Button(description=self.t("lock"), icon="lock", button_style="primary")
        self.check_button = W.Button(description=self.t("check"), icon="check")
        self.report_button = W.Button(description=self.t("report"), icon="file")
        self.report_button.on_click(self.guarded(lambda _b: self.report()))
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
            W.HBox([self.lock_button, self.check_button, self.report_button, self.upload]),
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

    def add_workload(self, model: str, workload: Any, gpu: str | None = None) -> None:
        self.workloads.append((model, workload, gpu))
        self._summary()

    def _summary(self) -> None:
        from aiworkbook.charts.theme import verdict_label

        rows = [
            [r.proof, verdict_label(r.verdict, self.lang), r.device, ", ".join(r.flags) or "—"]
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
            f"{html.escape(self.t('proof'))} × {len(prof.proofs)}, {self.t('workloads')} × {len(prof.workloads)}"
        )
        self.download.value = download_link(
            json.dumps(doc, indent=2, default=str), "profile.json", "application/json", self.t("download")
        )
        self.error = ""
        self.result = {"action": "lock", "profile": json.loads(json.dumps(doc, default=str))}
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
        self.download.value = download_link(page, "report.html", "text/html", self.t("download"))
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
        colour = "#0072B2" if report.exit_code == 0 else "#D55E00"
        self.headline.value = (
            f'<b style="color:{colour}">{html.escape(self.t("check"))}: exit {report.exit_code}</b>'
        )
        self.details.value = "<ul>" + "".join(f"<li>{html.escape(x)}</li>" for x in lines) + "</ul>"
        doc = report.to_dict()
        self.download.value = download_link(
            json.dumps(doc, indent=2, default=str), "check.json", "application/json", self.t("download")
        )
        self.error = ""
        self.result = {"action": "check", "report": json.loads(json.dumps(doc, default=str))}
        return report
