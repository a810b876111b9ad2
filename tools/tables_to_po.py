"""Moves the Python word tables of issue 31 into the gettext catalogues
aiworkbook/locale/<lang>/LC_MESSAGES/messages.po: widgets/i18n.py (labels, the plan settings' names,
yes/no), aiworkbook/patterns/text_{en,nl,de}.py (pattern, questionnaire, report and chart words; a
list entry keeps its items one a line, flagged `aiwb-list`), widgets/base.py's vega-embed menu,
widgets/preflight_panel.py's words and aiworkbook/units.py's words.

The tables are read from a git revision with `ast.literal_eval` (no module is imported or run), so the
conversion can be rerun after they are deleted:

    .venv/bin/python tools/tables_to_po.py [REV]   # REV: a commit that has the tables (LAST_WITH_TABLES)

An id already in a catalogue is kept as it is (translators' edits win); the catalogues stay sorted by
id; Dutch and German entries carry the English as a translator's comment (`#. en: ...`)."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parents[1]
LOCALE = ROOT / "aiworkbook" / "locale"
LIST_FLAG = "aiwb-list"
#: entries of the tables that no code used (tests/test_catalogues.py found them): not carried over
RETIRED = frozenset({"download", "short_by", "report.none", "report.value"})
#: the last commit that has the tables (issue 31 deleted them in the next)
LAST_WITH_TABLES = "ac7c1ed186321ac73beaf3fed88463e4ce0303f1"

#: vega-embed's own English for the action menu (https://github.com/vega/vega-embed, its i18n option)
VEGA_EN = {
    "CLICK_TO_VIEW_ACTIONS": "Click to view actions",
    "COMPILED_ACTION": "View Compiled Vega",
    "EDITOR_ACTION": "Open in Vega Editor",
    "PNG_ACTION": "Save as PNG",
    "SOURCE_ACTION": "View Source",
    "SVG_ACTION": "Save as SVG",
}


def assigned(rev: str, path: str, name: str) -> Any:
    """The literal value bound to `name` at the top of `path` at git revision `rev`."""
    src = subprocess.run(
        ["git", "show", f"{rev}:{path}"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    for node in ast.parse(src).body:
        target = (
            node.target
            if isinstance(node, ast.AnnAssign)
            else (node.targets[0] if isinstance(node, ast.Assign) else None)
        )
        if isinstance(target, ast.Name) and target.id == name and node.value is not None:
            return ast.literal_eval(node.value)
    raise KeyError(f"{path} at {rev} binds no {name}")


def entries(rev: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(id, {lang: words}) for every word of the tables at `rev`."""
    w = {lang: assigned(rev, "widgets/i18n.py", lang.upper()) for lang in ("en", "nl", "de")}
    for key in w["en"]:
        yield key, {lang: w[lang][key] for lang in w}
    sizes = assigned(rev, "widgets/i18n.py", "SIZE_NAMES")
    for key in sizes["nl"]:
        yield f"size.{key}", {"en": key.replace("_", " "), "nl": sizes["nl"][key], "de": sizes["de"][key]}
    yes_no = {"en": ("yes", "no"), "nl": ("ja", "nee"), "de": ("ja", "nein")}
    for i, key in enumerate(("value.yes", "value.no")):
        yield key, {lang: pair[i] for lang, pair in yes_no.items()}
    t = {lang: assigned(rev, f"aiworkbook/patterns/text_{lang}.py", "TEXT") for lang in ("en", "nl", "de")}
    for key in t["en"]:
        yield key, {lang: t[lang][key] for lang in t}
    vega = assigned(rev, "widgets/base.py", "EMBED_I18N")
    for key, english in VEGA_EN.items():
        yield f"vega.{key}", {"en": english, "nl": vega["nl"][key], "de": vega["de"][key]}
    panel = assigned(rev, "widgets/preflight_panel.py", "WORDS")
    for key in panel["en"]:
        yield f"preflight.{key}", {lang: panel[lang][key] for lang in panel}
    # NVML's reasons, under the id of their NVML return code (aiworkbook/nvml.py's _REASONS)
    why = assigned(rev, "widgets/preflight_panel.py", "NVML_WHY")
    nl, de = why["geen NVIDIA-GPU gevonden"], why["keine NVIDIA-GPU gefunden"]
    for code, english in assigned(rev, "aiworkbook/nvml.py", "_REASONS").items():
        if english in nl:
            yield nvml_id(code), {"en": english, "nl": nl[english], "de": de[english]}
    days = assigned(rev, "aiworkbook/units.py", "_DAYS")
    per = assigned(rev, "aiworkbook/units.py", "_PER_MTOK")
    yield "unit.days", {"en": "days", **days}
    yield "unit.per_mtok", {"en": "per M tokens", **per}


def nvml_id(code: str) -> str:
    """NVML_ERROR_NO_PERMISSION -> nvml.no_permission"""
    return "nvml." + code.removeprefix("NVML_ERROR_").lower()


def convert(rev: str) -> None:
    found = list(entries(rev))
    english = {id: words["en"] for id, words in found}
    for lang in ("en", "nl", "de"):
        po = LOCALE / lang / "LC_MESSAGES" / "messages.po"
        with po.open("rb") as f:
            cat = read_po(f, locale=lang)
        added = 0
        for id, words in found:
            if id in cat or id in RETIRED:
                continue
            value, en = words[lang], english[id]
            is_list = isinstance(value, (tuple, list))
            text = "\n".join(value) if is_list else value
            en_text = "\n".join(en) if isinstance(en, (tuple, list)) else en
            comments = [] if lang == "en" else [f"en: {line}" for line in en_text.split("\n")]
            cat.add(id, text, auto_comments=comments, flags=(LIST_FLAG,) if is_list else ())
            added += 1
        with po.open("wb") as f:
            write_po(f, cat, width=0, sort_output=True, omit_header=False)
        print(f"{po.relative_to(ROOT)}: {added} added, {len(cat)} in all")


if __name__ == "__main__":
    convert(sys.argv[1] if len(sys.argv) > 1 else LAST_WITH_TABLES)
