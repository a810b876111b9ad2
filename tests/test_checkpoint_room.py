"""The checkpoint proof's free-space check counts each format's peak (the most bytes on disk at once:
the steps kept while a new one is written, the training-loop save beside them, torch's zip records,
DCP's metadata, the manifest, LATEST's temporary, every file's last block) before it writes, and
refuses in a full disk's words ("needed ~X, free Y", exit 1) with nothing left behind.

Where this runs as root, each format runs on a real tmpfs exactly the size of its counted peak (no
margin): an undercount fails there. Elsewhere the refusal is checked with a monkeypatched free space."""

from __future__ import annotations

import functools
import shutil

import pytest
from small_tmpfs import mounted

from aiworkbook import diskfull
from aiworkbook.proofs import checkpoint as C
from aiworkbook.proofs import checkpoint_room as R
from aiworkbook.proofs import fsio

pytestmark = pytest.mark.timeout(120)
MIB = 2**20


@pytest.mark.parametrize("fmt", C.FORMATS)
def test_each_format_runs_in_a_tmpfs_exactly_its_counted_peak(tmp_path, monkeypatch, fmt):
    state = C.synthetic_state(MIB)
    work = tmp_path / "probe"
    work.mkdir()
    need = C.disk_peak(work, state, C.make_manifest(state), (fmt,), 2)
    assert need > R.copies_at_once(2) * C.state_bytes(state)  # more than the data
    monkeypatch.setattr(fsio, "check_free", functools.partial(fsio.check_free, margin=1.0))
    with mounted(tmp_path / "small", need) as mnt:
        m = C.measure(size_mb=1, dir=str(mnt), formats=fmt, trials=2)
        try:
            assert [r["integrity"] for r in m["formats"]] == ["ok"]
        finally:
            m["scratch"].remove()
        assert list(mnt.iterdir()) == []


def test_a_run_whose_data_fits_but_whose_peak_does_not_is_refused_before_writing(tmp_path, monkeypatch):
    nbytes = MIB
    free = int(R.copies_at_once(3) * nbytes * 1.05) + 1  # the data of three steps fits, with margin
    monkeypatch.setattr(shutil, "disk_usage", lambda p: shutil._ntuple_diskusage(10**12, 10**12 - free, free))

    def wrote(*a, **kw):
        raise AssertionError("the baseline was written before the check")

    monkeypatch.setattr(C, "baseline", wrote)
    with pytest.raises(diskfull.NoSpace) as err:
        C.measure(size_mb=1, dir=str(tmp_path / "d"), trials=3)
    assert err.value.needed is not None and err.value.needed > free
    text = str(err.value)
    assert text.startswith("no space left on ") and f"at {tmp_path / 'd'}: needed ~3." in text, text
    assert text.endswith("free 3.15 MiB"), text
    assert list(tmp_path.iterdir()) == []  # not even the --dir it would have made


@pytest.mark.parametrize(("trials", "copies"), [(1, 2), (2, 3), (3, 3), (9, 3)])
def test_copies_at_once_follows_keep_and_the_loop_save(trials, copies):
    assert R.copies_at_once(trials) == copies
