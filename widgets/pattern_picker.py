"""PatternPicker: the questionnaire of aiworkbook.patterns and its recommendation (pattern, reasons,
reference nodes, proofs, figures to lock), in English, Dutch or German."""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W

from .base import ValueComposite, dropdown, value_html
from .i18n import LANGS


class PatternPicker(ValueComposite):
    """`value`: the answers (question key -> answer); `result`: `recommend(answers, lang).to_dict()`.
    Changing `language` relabels the questions and the recommendation."""

    css = "pattern-picker"
    value_takes = "a dict of answers"

    def __init__(self, lang: str = "en", **answers: Any) -> None:
        super().__init__(lang=lang)
        from aiworkbook.patterns import QUESTIONS

        self.questions = QUESTIONS
        self.language = dropdown(LANGS, lang, self.t("language"))
        self.language.observe(self.guarded(self._language), names="value")
        self.controls: dict[str, W.ValueWidget] = {}
        for q in QUESTIONS:
            if q.kind == "choice":
                c: W.ValueWidget = W.Dropdown(options=[], style={"description_width": "initial"})
            elif q.kind == "bool":
                c = W.Checkbox(value=bool(q.default))
            else:
                c = W.Text(value="", placeholder="—", style={"description_width": "initial"})
            c.observe(self.guarded(self._changed), names="value")
            self.controls[q.key] = c
        self.title = value_html("")
        self.body = W.HTML("")
        self.children = [self.language, *self.controls.values(), self.error_area, self.title, self.body]
        self._relabel()
        self.guarded(self._apply_value)(answers) if answers else self.guarded(self._changed)()
        self.ready()

    def _relabel(self) -> None:
        with self.syncing():
            self.language.description = self.t("language")
            for q in self.questions:
                c = self.controls[q.key]
                c.description = q.label(self.lang)
                if q.kind == "choice":
                    old = c.value
                    c.options = [(lbl, key) for key, lbl in q.choice_labels(self.lang).items()]
                    c.value = old if old in q.choices else (q.default or q.choices[0])

    def _language(self, change: dict[str, Any]) -> None:
        from .i18n import check_lang

        self.lang = check_lang(change["new"])
        self._relabel()
        self._changed()

    def answers(self) -> dict[str, Any]:
        """The raw answers; the library's Answers.parse validates them."""
        out: dict[str, Any] = {}
        for q in self.questions:
            v = self.controls[q.key].value
            out[q.key] = None if (q.kind == "float" and not str(v).strip()) else v
        return out

    def _changed(self, change: dict[str, Any] | None = None) -> None:
        if self._syncing:
            return
        from aiworkbook.patterns import recommend

        answers = self.answers()
        rec = recommend(answers, lang=self.lang)
        with self.syncing():
            self.value = rec.answers.to_dict()
        self.title.value = f"<b>{html.escape(self.t('pattern'))}: {html.escape(rec.pattern.title)}</b>"

        def items(xs: Any) -> str:
            return "<ul>" + "".join(f"<li>{html.escape(str(x))}</li>" for x in xs) + "</ul>"

        self.body.value = (
            f"<p>{html.escape(rec.pattern.summary)}</p>"
            f"<b>{self.t('reasons')}</b>{items(rec.reasons)}"
            f"<b>{self.t('nodes')}</b>{items(rec.nodes)}"
            f"<b>{self.t('proofs')}</b>{items(rec.proofs)}"
            f"<b>{self.t('targets')}</b>{items(rec.targets.values())}"
        )
        self.error = ""
        self.result = rec.to_dict()

    def _apply_value(self, v: dict[str, Any]) -> None:
        from aiworkbook.patterns import Answers

        merged = {**self.answers(), **v}
        parsed = Answers.parse(merged).to_dict()  # every answer validated by the library first
        with self.syncing():
            for q in self.questions:
                x = parsed[q.key]
                self.controls[q.key].value = ("" if x is None else f"{x:g}") if q.kind == "float" else x
        self.guarded(self._changed)()
