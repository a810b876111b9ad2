"""Messages (aiworkbook.message.Msg): ids with named arguments, put into words when shown. The English
text stays what the library wrote before messages (CLI, JSON and goldens see the same bytes); Dutch
and German carry no English whatever the figures (a cache size, a core count, a free-memory reading
decide them on the machine that runs a proof)."""

from __future__ import annotations

import json
import pickle

import pytest
from english_left import english_left

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg, words
from aiworkbook.units import GiB, KiB, MiB, fmt_bytes

SIZES = (8 * MiB, 256 * MiB, 1 * GiB, 2 * GiB)
THREADS = ([1], [1, 2], [1, 2, 4, 8, 16])


@pytest.mark.parametrize("size", SIZES)
def test_roofline_note_in_english_is_the_sentence_it_always_was(size):
    free = 20.54 * GiB
    m = Msg("roofline.buffers", size=size, free=free, device="cpu")
    assert m == f"two {fmt_bytes(size)} buffers against {fmt_bytes(free)} free on cpu"
    assert json.dumps([m]) == json.dumps([str(m)])  # JSON sees the English text


@pytest.mark.parametrize("lang", ["nl", "de"])
@pytest.mark.parametrize("size", SIZES)
def test_roofline_note_leaves_no_english_at_any_buffer_size(size, lang):
    text = Msg("roofline.buffers", size=size, free=20.54 * GiB, device="cpu").render(lang)
    assert not english_left(text, lang), text
    assert fmt_bytes(size, lang=lang) in text  # the figure in the language's format (256,00 MiB)


@pytest.mark.parametrize("threads", THREADS)
def test_host_note_in_english_is_the_sentence_it_always_was(threads):
    m = Msg("host.plan", rows=1_000_000, cols=50, size=408_000_000, trees=50, threads=threads)
    assert m == f"1,000,000 rows x 50 columns (389.10 MiB), 50 trees on threads {threads}"


@pytest.mark.parametrize("lang", ["nl", "de"])
@pytest.mark.parametrize("threads", THREADS)
def test_host_note_leaves_no_english_with_any_thread_list(threads, lang):
    text = Msg("host.plan", rows=1_000_000, cols=50, size=408_000_000, trees=50, threads=threads).render(lang)
    assert not english_left(text, lang), text
    assert "1.000.000" in text and "389,10 MiB" in text and str(threads) in text


def test_host_plan_from_the_proof_itself_with_sixteen_threads():
    from aiworkbook.proofs.hostnode import plan
    from aiworkbook.proofs.inputs import HostInputs

    p = plan(HostInputs(threads=16, quick=True))
    (note,) = p.notes
    assert isinstance(note, Msg) and note.endswith("trees on threads [1, 2, 4, 8, 16]")
    for lang in ("nl", "de"):
        assert not english_left(words(note, lang), lang)


def test_plural_follows_the_language_rule():
    one = Msg("checkpoint.plan", size=MiB, formats=2, trials=1, need=GiB)
    many = Msg("checkpoint.plan", size=MiB, formats=2, trials=3, need=GiB)
    assert "elk 1 poging;" in one.render("nl") and "elk 3 pogingen;" in many.render("nl")
    assert "je 1 Versuch;" in one.render("de") and "je 3 Versuche;" in many.render("de")
    assert "1 trial(s) each" in one  # the English the CLI always printed


def test_nested_message_and_floats_in_lists():
    m = Msg("allreduce.plan", ranks=4, busbw=Msg("allreduce.busbw_factor", factor=1.5))
    assert m == "torchrun --standalone --nproc-per-node 4; busbw = algbw x 1.500"
    assert m.render("de").endswith("= algbw x 1,500")
    assert (
        Msg("allreduce.plan", ranks=1, busbw=Msg("allreduce.busbw_na"))
        .render("nl")
        .endswith("niet van toepassing")
    )
    r = Msg("serving.sweep.rate", loads=[0.5, 2.0], requests=8)
    assert r == "rate sweep [0.5, 2.0], 8 requests per point"
    assert "[0,5; 2,0]" in r.render("nl")  # "0,5, 2,0" would read as four numbers


def test_a_message_survives_pickling_and_copying():
    import copy

    m = Msg("dataload.plan", shards=4, samples=8, size=KiB, total=32 * KiB, configs=3)
    for back in (pickle.loads(pickle.dumps(m)), copy.deepcopy(m)):
        assert isinstance(back, Msg) and back == m and back.render("de") == m.render("de")


def test_spec_error_keeps_the_message_for_a_viewer():
    exc = SpecError("seq_len", 10**12, Msg("allowed.int_range", low=1, high=16_777_216))
    assert str(exc).endswith("allowed: an integer from 1 to 16,777,216")
    assert words(exc.allowed, "nl") == "een geheel getal van 1 tot en met 16.777.216"
    assert words("not a message", "de") == "not a message"


def test_unknown_id_or_kind_is_a_spec_error():
    with pytest.raises(SpecError, match="no.such.id"):
        Msg("no.such.id")
    from aiworkbook.message import _Words

    with pytest.raises(SpecError, match="message field kind"):
        _Words("en").format("{x:weird}", x=1)
