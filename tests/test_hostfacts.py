"""The machine's facts a proof sizes itself by: read once, injectable, and refused when malformed."""

from __future__ import annotations

import pytest

from aiworkbook import hostfacts
from aiworkbook.errors import SpecError
from aiworkbook.proofs.hostnode import thread_counts
from aiworkbook.proofs.timing import default_threads, machine_threads


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("8MiB", 8 * 2**20),
        ("512 M", 512 * 2**20),
        ("32768K", 32 * 2**20),
        ("1G", 2**30),
        ("1.5 MiB", 3 * 2**19),
    ],
)
def test_sizes_as_sysfs_and_lscpu_write_them(text, size):
    assert hostfacts.parse_size(text) == size


def test_injected_facts_replace_the_readings_and_say_so(monkeypatch):
    monkeypatch.setenv("AIWORKBOOK_HOST", "llc=8MiB, cores=16 ,threads=16")
    assert hostfacts.llc_bytes() == (8 * 2**20, "AIWORKBOOK_HOST")
    assert (hostfacts.physical_cores(), hostfacts.logical_cpus()) == (16, 16)
    assert (default_threads(), machine_threads()) == (16, 16)
    assert thread_counts() == [1, 2, 4, 8, 16]


def test_only_the_facts_given_are_replaced(monkeypatch):
    monkeypatch.setenv("AIWORKBOOK_HOST", "cores=1")
    size, source = hostfacts.llc_bytes()
    assert source != "AIWORKBOOK_HOST" and size >= 2**20
    assert hostfacts.physical_cores() == 1


@pytest.mark.parametrize(
    "bad", ["llc=0", "cores=-1", "threads=100000", "llc=lots", "ram=1G", "cores", "llc=8MiB,"]
)
def test_a_malformed_fact_names_the_variable_and_the_form(monkeypatch, bad):
    monkeypatch.setenv("AIWORKBOOK_HOST", bad)
    with pytest.raises(SpecError) as e:
        hostfacts.physical_cores()
    assert e.value.field == "AIWORKBOOK_HOST" and "llc=" in e.value.allowed
