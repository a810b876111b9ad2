"""Units for people (GiB vs GB said explicitly) and persisted files (schema, atomic, clear errors)."""

from __future__ import annotations

import json
import os

import pytest

from aiworkbook.errors import SpecError
from aiworkbook.persist import read_json, read_jsonl, write_json, write_jsonl
from aiworkbook.units import GB, GiB, dtype_bits, fmt_bytes, fmt_count, fmt_rate, fmt_seconds


def test_bytes_are_labelled_binary_or_decimal():
    assert fmt_bytes(80 * GiB) == "80.00 GiB"
    assert fmt_bytes(80 * GiB, "GB") == "85.90 GB"
    assert fmt_bytes(80 * GB, "GiB") == "74.51 GiB"
    assert fmt_bytes(1023) == "1023 B" and fmt_bytes(-2 * GiB) == "-2.00 GiB"


def test_other_formats():
    assert fmt_seconds(0.0042) == "4.20 ms" and fmt_seconds(3 * 86400) == "3.0 days"
    assert fmt_rate(3.35e12, "TB/s") == "3.350 TB/s"
    assert fmt_count(8_030_261_248) == "8.03 B"


def test_dtype_bits_names_field():
    assert dtype_bits("nf4") == 4
    with pytest.raises(SpecError, match="weights_dtype"):
        dtype_bits("fp64", "weights_dtype")


def test_json_roundtrip_with_schema(tmp_path):
    p = write_json(tmp_path / "sub" / "r.json", {"x": 1}, kind="test-doc", schema_version=2)
    doc = read_json(p, kind="test-doc", max_version=2)
    assert doc == {"kind": "test-doc", "schema_version": 2, "x": 1}
    assert [f.name for f in p.parent.iterdir()] == ["r.json"]  # no temp file left behind


def test_write_is_atomic_on_failure(tmp_path):
    p = tmp_path / "r.json"
    write_json(p, {"x": 1}, kind="k", schema_version=1)
    with pytest.raises(TypeError):
        write_json(p, {"x": object()}, kind="k", schema_version=1)
    assert json.loads(p.read_text())["x"] == 1 and os.listdir(tmp_path) == ["r.json"]


@pytest.mark.parametrize(
    "text,field",
    [
        ("{not json", "json"),
        ("[1, 2]", "json"),
        ('{"kind": "other", "schema_version": 1}', "kind"),
        ('{"kind": "k", "schema_version": 9}', "schema_version"),
        ('{"kind": "k", "schema_version": true}', "schema_version"),
    ],
)
def test_corrupt_files_name_the_problem(tmp_path, text, field):
    p = tmp_path / "bad.json"
    p.write_text(text)
    with pytest.raises(SpecError) as e:
        read_json(p, kind="k", max_version=1)
    assert e.value.field == field and str(p) in str(e.value)


def test_jsonl_roundtrip_and_corrupt_line(tmp_path):
    p = write_jsonl(tmp_path / "t.jsonl", {"kind": "trace", "schema_version": 1}, [{"a": 1}, {"a": 2}])
    header, rows = read_jsonl(p, kind="trace", max_version=1)
    assert header["kind"] == "trace" and rows == [{"a": 1}, {"a": 2}]
    p.write_text(p.read_text() + "{broken\n")
    with pytest.raises(SpecError, match="line 4"):
        read_jsonl(p)


def test_unreadable_files_name_the_file(tmp_path):
    """Non-UTF-8 bytes and a folder give a SpecError naming the file, from every reader."""
    bad = tmp_path / "bin.json"
    bad.write_bytes(b'{"kind": "k\xff"}\n')
    for reader in (read_json, read_jsonl):
        with pytest.raises(SpecError) as e:
            reader(bad)
        assert e.value.field == "path" and str(bad) in str(e.value) and "UTF-8" in str(e.value)
        with pytest.raises(SpecError, match="not a folder"):
            reader(tmp_path)


def test_explicit_units_missing_values_and_auto_rates():
    from aiworkbook.units import MiB, fmt_flops

    assert fmt_bytes(512 * MiB, "MiB") == "512.0 MiB"  # used to fall back to auto ("512.00 MiB")
    assert fmt_bytes(3 * 2**40, "TiB") == "3.00 TiB"
    for fmt in (fmt_rate, fmt_flops, fmt_bytes):
        assert fmt(None) == "n/a" and fmt(float("nan")) == "n/a"
    assert fmt_rate(2.5e6, "auto") == "2.5 MB/s" and fmt_rate(1.2e9, "auto") == "1.20 GB/s"
    assert fmt_rate(12.0, "auto") == "12 B/s" and fmt_rate(2 * MiB, "MiB/s") == "2.0 MiB/s"
    for bad in (lambda: fmt_bytes(1, "GIGA"), lambda: fmt_rate(1, "Gbit/s")):
        with pytest.raises(SpecError):
            bad()
