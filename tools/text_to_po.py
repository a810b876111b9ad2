"""One-off conversion: the `msg.<id>` entries of aiworkbook/patterns/text_{en,nl,de}.py into gettext
catalogues, aiworkbook/locale/<lang>/LC_MESSAGES/messages.po (msgid the message id, msgstr its
template; Dutch and German entries carry the English as a translator's comment). Kept to show how
the catalogues began and to move further tables the same way:

    .venv/bin/python tools/text_to_po.py [PREFIX]   # default: msg.
"""

from __future__ import annotations

import sys
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po, write_po

from aiworkbook.patterns.i18n import TABLES

LOCALE = Path(__file__).resolve().parents[1] / "aiworkbook" / "locale"


def convert(prefix: str = "msg.") -> None:
    en = {k[len(prefix) :]: v for k, v in TABLES["en"].items() if k.startswith(prefix) and isinstance(v, str)}
    for lang, table in TABLES.items():
        path = LOCALE / lang / "LC_MESSAGES" / "messages.po"
        if path.exists():  # add to what translators already have, never overwrite it
            with path.open("rb") as f:
                cat = read_po(f, locale=lang)
        else:
            cat = Catalog(locale=lang, domain="messages", project="aiworkbook", fuzzy=False)
        for id, english in en.items():
            text = table[prefix + id]
            comments = [] if lang == "en" else [f"en: {english}"]
            if id not in cat:
                cat.add(id, str(text), auto_comments=comments)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as f:
            write_po(f, cat, width=0, sort_output=True, omit_header=False)


if __name__ == "__main__":
    convert(*sys.argv[1:])
