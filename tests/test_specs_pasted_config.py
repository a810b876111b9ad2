"""A config.json pasted into the sizer, uploaded, or named on the command line is read by the one library
reader (aiworkbook/specs/reader.py): the same size cap and the same JSON parse, refused with the same
error, in the viewer's or the --lang language."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from aiworkbook.cli import main
from aiworkbook.errors import SpecError
from aiworkbook.message import words
from aiworkbook.specs.reader import MAX_CONFIG_BYTES, spec_from_text

pytestmark = pytest.mark.timeout(120)

OVERSIZED = json.dumps({"model_type": "llama", "_pad": "x" * MAX_CONFIG_BYTES})
MALFORMED = '{"model_type": "llama",'


def _refusal(text: str, name: str = "pasted") -> SpecError:
    with pytest.raises(SpecError) as err:
        spec_from_text(text, name)
    return err.value


def test_the_library_names_the_field_and_the_limit_in_each_language():
    err = _refusal(OVERSIZED)
    assert err.field == "config" and err.source == "<pasted>"
    assert words(err.allowed, "en") == f"a config.json of at most {MAX_CONFIG_BYTES:,} bytes"
    assert "1.048.576" in words(err.allowed, "nl") and "hoogstens" in words(err.allowed, "nl")
    assert "1.048.576" in words(err.allowed, "de") and "höchstens" in words(err.allowed, "de")
    bad = _refusal(MALFORMED)
    assert bad.field == "json" and bad.source == "<pasted>" and "valid JSON" in str(bad)
    assert _refusal("  ").field == "config"
    assert "Hugging Face" in words(_refusal("").allowed, "nl")


@pytest.mark.parametrize("text", [OVERSIZED, MALFORMED])
def test_the_command_line_refuses_the_file_as_the_library_refuses_the_text(tmp_path, capsys, text):
    path = tmp_path / "config.json"
    path.write_text(text)
    assert main(["size", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    pasted = str(_refusal(text, "x")).replace("<x>", str(path))
    assert err == f"error: {pasted}", (err, pasted)


@pytest.mark.parametrize("text", [OVERSIZED, MALFORMED])
def test_the_sizer_shows_what_the_library_says(text):
    from aiworkbook.widgets import ModelSizer

    s = ModelSizer()
    try:
        assert s.wait(120)
        s.source.value = "pasted"
        s.config_text.value = text
        assert s.error == str(_refusal(text)), s.error
        upload = {"name": "mine.json", "type": "application/json", "content": memoryview(text.encode())}
        s.upload.value = ({**upload, "size": len(text), "last_modified": datetime.now(timezone.utc)},)
        assert s.error == str(_refusal(text, "mine")), s.error
    finally:
        s.close()


def test_the_sizer_says_the_limit_in_the_page_language():
    from aiworkbook.widgets import ModelSizer

    s = ModelSizer(lang="de")
    try:
        assert s.wait(120)
        s.source.value = "pasted"
        s.config_text.value = OVERSIZED
        assert "höchstens 1.048.576 Byte" in s.error and "Traceback" not in s.error, s.error
    finally:
        s.close()
