"""A sizing formula kept as data: the engine's formulas are messages (aiworkbook.message: ids with their
figures, joined by operators), put into words in the viewer's language when shown. A locked profile
stores them as messages (`to_data`) beside the English texts `size --json` prints, so the report says
them in any language; a profile locked by an older aiworkbook holds the English text only, which is
shown as recorded and said to be so. Nothing parses a formula's English back."""

from __future__ import annotations

from typing import Any

#: where a locked profile keeps its formulas as messages: by component in the estimate, and in its
#: rules_of_thumb
STORED = "formula_messages"
STORED_RULE = "formula_message"


def formula_said(formula: Any, lang: str = "en", stored: Any = None) -> str:
    """A sizing formula in `lang`: a message rendered; else the message a locked profile stored beside
    the text (`stored`, to_data's form), rebuilt and rendered; else the text as recorded (an older
    profile's English), said so in any other language."""
    from aiworkbook.errors import SpecError
    from aiworkbook.message import Msg, from_data

    if isinstance(formula, Msg):
        return formula.render(lang)
    text = str(formula or "")
    if stored is not None:
        try:
            said = from_data(stored)
            if isinstance(said, Msg):
                return said.render(lang)
        except (SpecError, ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError):
            pass  # a hand-edited profile's, or an id a later version wrote: the text as recorded
    if lang == "en" or not text:
        return text
    return Msg("formula.as_recorded", text=text).render(lang)


def stored_formulas(d: Any) -> dict[str, Any]:
    """The formulas a locked profile stored as messages, by component ({} for an older profile)."""
    found = d.get(STORED) if hasattr(d, "get") else None
    return found if isinstance(found, dict) else {}


def rule_said(rule: Any, lang: str = "en") -> str:
    """The rule of thumb's formula in `lang`, from its section (RulesOfThumb or its dict)."""
    return formula_said(rule.get("formula", ""), lang, rule.get(STORED_RULE))


def with_stored_formulas(d: dict[str, Any]) -> dict[str, Any]:
    """An Estimate's to_dict() with its formulas kept as messages too (what lock stores); the English
    texts stay as they are."""
    from aiworkbook.message import Msg, to_data

    out = {**d, STORED: {k: to_data(v) for k, v in (d.get("formulas") or {}).items() if isinstance(v, Msg)}}
    rule = d.get("rules_of_thumb")
    if isinstance(rule, dict) and isinstance(rule.get("formula"), Msg):
        out["rules_of_thumb"] = {**rule, STORED_RULE: to_data(rule["formula"])}
    return out
