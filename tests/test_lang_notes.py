"""The library's own notes and reasons in Dutch and German (issue 31): the serving proof's notes on the
command line (`prove serving --lang`) and after its result is stored and read back, `check --passive
--lang` (the fake NVML), vLLM's pre-flight reasons and risks, and an offline report of a profile locked
on this node (detected, no GPU) from a result file. Each check first sees English where the words are
English (the same run in English, or the text as stored before a message was kept), so a pass is
not an empty page or a checker that sees nothing."""

from __future__ import annotations

import html
import json
import re

import pytest
from english_left import english_left
from fake_nvml import DATACENTER, FakeNVML
from profile_fakes import write_locked

from aiworkbook.cli import main
from aiworkbook.message import Msg, words
from aiworkbook.proofs.result import ProofResult, said_label, said_notes
from aiworkbook.telemetry.environment import reset as reset_reader

SERVING = ["prove", "serving", "--backend", "synthetic", "--sweep", "1", "--requests", "10"]
SERVING += ["--no-compare", "--no-context", "--warmup-duration", "0.01", "--min-requests", "5"]


def _notes(out: str) -> list[str]:
    """The headline (the line in [brackets]) and the notes of a `prove` command's output."""
    return [line.removeprefix("  - ") for line in out.splitlines() if line.startswith(("  - ", "["))]


@pytest.fixture(scope="module")
def serving_nl(tmp_path_factory):
    """One small synthetic serving run on the command line in Dutch: (its printed notes, the JSON)."""
    import contextlib
    import io

    path = tmp_path_factory.mktemp("serving") / "serving.json"
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main([*SERVING, "--lang", "nl", "--json", str(path)])
    assert code == 0, out.getvalue()
    return out.getvalue(), path


@pytest.mark.timeout(120)
def test_prove_serving_says_its_notes_in_dutch(serving_nl):
    out, path = serving_nl
    assert not english_left(out, "nl"), out  # the sweep table, the headline, the notes, "wrote"
    said = _notes(out)
    r = ProofResult.load(path)
    head, notes = said[0], said[1:]
    assert len(notes) == len(r.notes) >= 6
    english = "\n".join([r.headline(), *r.notes])  # the JSON keeps English: the checker sees it there
    assert english_left(english, "nl") and "embedded server on" in english
    assert not english_left("\n".join(said), "nl"), said
    assert head == r.headline("nl") and "gemeten" in head
    assert [words(n, "nl") for n in r.notes] == notes  # read back from the file, said the same way


@pytest.mark.timeout(120)
@pytest.mark.parametrize("lang", ["nl", "de"])
def test_a_stored_serving_result_keeps_its_messages(serving_nl, lang):
    """The result file keeps each note's English and its message's record: read back, the notes and the
    predicted label are messages again; a file without the records (older, hand-edited) reads English."""
    _, path = serving_nl
    doc = json.loads(path.read_text())
    notes, label = said_notes(doc), said_label(doc)
    assert [str(n) for n in notes] == doc["notes"] and str(label) == doc["predicted_label"]
    assert all(isinstance(n, Msg) for n in notes) and isinstance(label, Msg)
    said = [words(n, lang) for n in notes] + [words(label, lang)]
    assert not english_left("\n".join(said), lang), said
    bare = {k: v for k, v in doc.items() if k != "messages"}
    assert said_notes(bare) == doc["notes"] and english_left("\n".join(said_notes(bare)), lang)
    broken = {**doc, "messages": {"notes": [{"id": "no.such.id", "args": {}}] * len(doc["notes"])}}
    assert said_notes(broken) == doc["notes"]  # an unknown id falls back to the stored text
    # a hand-edited record whose figure only another language formats (English prints `blocks` as it
    # is, Dutch as an integer) falls back too, instead of failing when the report is made
    rec = next(r for r in doc["messages"]["notes"] if r["id"] == "serving.embedded")
    edited = {**doc, "messages": {"notes": [{**rec, "args": {**rec["args"], "blocks": "many"}}]}}
    edited["notes"] = ["as stored"]
    assert said_notes(edited) == ["as stored"] and not isinstance(said_notes(edited)[0], Msg)


HEALTHY = {**DATACENTER, "name": "NVIDIA L40S", "throttle": 0, "ecc": (0, 0, 0, 0), "remapped": (0, 0, 0, 0)}
NO_WAIT = {"sleep": lambda s: None}


def _passive(path, gpus, lang, capsys, xids=(), **fake) -> str:
    """`check --passive --lang` on `gpus`, the first raising `xids` while the check watches."""
    with FakeNVML(gpus, **NO_WAIT, **fake) as f:
        for x in xids:
            f.inject_xid(0, x)
        reset_reader()
        try:
            main(["check", str(path), "--passive", "--lang", lang])
        finally:
            reset_reader()
    return capsys.readouterr().out


@pytest.mark.timeout(60)
@pytest.mark.parametrize("lang", ["nl", "de"])
def test_check_passive_says_its_lines_in_the_language(tmp_path, capsys, lang):
    """A node whose VBIOS and driver changed, with uncorrected ECC errors and a pending row remap: every
    line (notes, failures, the summary) in the language; the same run in English is seen as English."""
    from aiworkbook.profile.gpu_facts import read_facts

    old = write_locked(tmp_path)
    with FakeNVML([HEALTHY], **NO_WAIT):
        facts = read_facts()
    doc = json.loads(old.read_text())
    doc["node"]["nvml"] = facts.model_dump(mode="json")
    doc["node"]["fingerprint"]["gpu"] = facts.gpus[0].name
    p = tmp_path / "gpu.json"
    p.write_text(json.dumps(doc))
    sick = {**HEALTHY, "vbios": "96.00.a1.00.02", "ecc": (0, 2, 0, 2), "remapped": (0, 0, 1, 0)}
    english = _passive(p, [sick], "en", capsys, driver_version="560.35.03")
    said = _passive(p, [sick], lang, capsys, driver_version="560.35.03")
    assert "uncorrected ECC" in english and english_left(english, lang)
    assert len(said.splitlines()) == len(english.splitlines()) >= 5
    assert not english_left(said, lang), said
    assert "96.00.a1.00.02" in said and said.splitlines()[-1].startswith("aiworkbook check: ")


def test_check_passive_refuses_a_language_without_a_catalogue(tmp_path, capsys):
    assert main(["check", str(write_locked(tmp_path)), "--passive", "--lang", "xx"]) == 2
    assert "lang" in capsys.readouterr().err


GiB = 2**30


@pytest.mark.parametrize("lang", ["nl", "de"])
def test_vllm_preflight_reasons_and_risks_in_the_language(lang):
    """Co-tenants (one whose memory NVML cannot read) on a GPU that fails vLLM's free-memory check, and an
    idle GPU whose weights leave no KV cache: each reason and risk is a message said in the language."""
    from aiworkbook.preflight import preflight, read_devices
    from aiworkbook.sizing.vllm import VllmSettings
    from aiworkbook.specs import load_model

    shared = {**DATACENTER, "mem_used": 30 * GiB, "processes": [(4242, 20 * GiB), (4250, None)]}
    idle = {**DATACENTER, "mem_used": 300 * 2**20, "processes": []}
    said: list[str] = []
    for gpu, model in ((shared, "llama-3-8b"), (idle, "llama-3-70b")):
        with FakeNVML([gpu]):
            devs = read_devices(["0"])
        r = preflight(load_model(model), devs, VllmSettings(max_model_len=8192))
        assert r.reasons and all(isinstance(x, Msg) for x in [*r.reasons, *r.risks])
        said += [*r.reasons, *r.risks]
    assert len(said) >= 4 and english_left("\n".join(said), lang)  # English as stored
    assert not english_left("\n".join(words(x, lang) for x in said), lang)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("lang", ["nl", "de"])
def test_offline_report_of_a_detected_node_and_a_stored_result(tmp_path, serving_nl, lang):
    """A profile locked on this node (detected, no GPU: "no NVIDIA GPU found", "this node (host)") on the
    declared 8 x H100 node (a two-socket CPU), with the serving proof's result file, saved and read back:
    the report in the language keeps no English word in its node, environment and proof notes."""
    from aiworkbook.profile import load_profile, lock
    from aiworkbook.profile.report import render_html

    _, result = serving_nl
    with FakeNVML([], **NO_WAIT):
        reset_reader()
        try:
            prof = lock("llm-inference", node="gpu-training-8xh100", detected=True, results=[str(result)])
        finally:
            reset_reader()
    assert prof.node.detected is not None and not prof.node.detected.gpu
    path = tmp_path / "profile.json"
    prof.save(path)
    stored = path.read_text()
    assert "this node (" in stored and "no NVIDIA GPU found" in stored  # the file keeps the English
    page = render_html(load_profile(path), lang)
    body = page.split("<body", 1)[1].split(">", 1)[1]
    text = html.unescape(re.sub(r"<style>.*?</style>|<pre.*?</pre>|<[^>]+>", "\n", body, flags=re.S))
    left = english_left(text, lang)
    assert not left, "English left in the report:\n" + "\n".join(left)
    assert "8480+" in text and "cores each" not in text
    assert words(Msg("node.this", host="x"), lang).split("(")[0].strip() in text


@pytest.mark.timeout(60)
@pytest.mark.parametrize("lang", ["nl", "de"])
def test_xid_descriptions_in_the_language(tmp_path, capsys, lang):
    """A critical XID (79), an application's (13) and one NVIDIA's list here lacks (999): what each means
    is said in the language, in `check --passive` and on the event timeline the monitor reads."""
    from aiworkbook.profile.gpu_facts import read_facts
    from aiworkbook.telemetry.events import XID_NAMES, describe

    with FakeNVML([HEALTHY], **NO_WAIT):
        facts = read_facts()
    doc = json.loads(write_locked(tmp_path).read_text())
    doc["node"]["nvml"] = facts.model_dump(mode="json")
    doc["node"]["fingerprint"]["gpu"] = facts.gpus[0].name
    p = tmp_path / "gpu.json"
    p.write_text(json.dumps(doc))
    english = _passive(p, [HEALTHY], "en", capsys, xids=[79, 13, 999])
    assert "GPU 0: XID 79 (GPU has fallen off the bus)" in english and "XID 999 (see NVIDIA" in english
    assert english_left(english, lang)
    said = _passive(p, [HEALTHY], lang, capsys, xids=[79, 13, 999])
    assert len(said.splitlines()) == len(english.splitlines()) and "XID 999" in said
    assert not english_left(said, lang), said
    everything = [describe(x) for x in [*XID_NAMES, 999]]
    assert english_left("\n".join(everything), lang)  # the English the timeline's JSON keeps
    assert not english_left("\n".join(words(d, lang) for d in everything), lang)


@pytest.mark.parametrize("lang", ["nl", "de"])
def test_attention_checks_detail_in_the_language(lang):
    """benchmarks/gpu_checks.py's attention line: the probe, the kernel's version and cuDNN's state."""
    from aiworkbook.proofs.attention import attention_check

    detail = attention_check("cpu")["detail"]
    assert isinstance(detail, Msg) and "cuDNN attention off while pinned" in detail
    assert english_left(detail, lang) and not english_left(words(detail, lang), lang)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("lang", ["nl", "de"])
def test_a_model_that_does_not_fit_quicks_budget_is_refused_in_the_language(capsys, lang):
    """`prove vram --quick` refused before it allocates (not even a 1-layer proxy fits the 2 GiB budget):
    the sentence, the proxy and what --quick did instead, one line, in the language."""
    argv = ["prove", "vram", "llama-3-8b", "--quick", "--batch", "64", "--seq", "4096", "--device", "cpu"]
    assert main(argv) == 2
    english = capsys.readouterr().err.splitlines()[-1].split("\r")[-1]
    assert "--quick caps the cpu budget at 2.00 GiB" in english and english_left(english, lang)
    assert main(["--lang", lang, *argv]) == 2
    said = capsys.readouterr().err.splitlines()[-1].split("\r")[-1]
    assert "--quick" in said and "2,00 GiB" in said and "1.024" in said
    assert not english_left(said, lang), said


@pytest.mark.timeout(120)
def test_a_proofs_progress_labels_are_messages_the_viewer_says():
    """The labels a proof reports (roofline --quick on the CPU: its stages, then done) reach the viewer as
    messages: English as they were, said in the language by the CLI's bar (and the widget, by words())."""
    from aiworkbook.proofs import registry
    from aiworkbook.proofs.progress import TqdmProgress

    seen: list[str] = []
    registry.run("roofline", quick=True, device="cpu", progress=lambda d, t, m: seen.append(m))
    labels = list(dict.fromkeys(seen))
    assert len(labels) >= 3 and all(isinstance(m, Msg) for m in labels), labels
    assert "memory bandwidth" in labels
    for lang in ("nl", "de"):
        assert english_left("\n".join(labels), lang)
        assert not english_left("\n".join(words(m, lang) for m in labels), lang)
        shown = TqdmProgress("roofline", lang)
        try:
            shown(0, len(labels), labels[0])
            assert shown.bar.postfix == words(labels[0], lang) != labels[0]
        finally:
            shown.close()
    from aiworkbook.widgets import ProofRunner

    runner = ProofRunner(proof="roofline", lang="de", allow_run=False)
    try:
        runner._progress(1, 3, labels[0])  # what the proof's thread posts to the kernel's loop
        assert runner.progress_text.value == f"1/3 {words(labels[0], 'de')}"
    finally:
        runner.close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("lang", ["nl", "de"])
def test_an_imported_serving_result_is_said_in_the_language(tmp_path, capsys, lang):
    """`aiworkbook --lang X prove serving --import` (a vLLM and a GuideLLM file): the table, the headline
    (a server elsewhere), what was imported and how that tool defines its latencies; a file of neither
    kind is refused in the language. The same in English is seen as English."""
    from pathlib import Path

    data = Path(__file__).parent / "data"
    other = tmp_path / "other.json"
    other.write_text('{"neither": 1}', encoding="utf-8")
    for name, code in (("vllm_bench_serve_result.json", 0), ("guidellm_report.json", 0), (other, 2)):
        argv = ["prove", "serving", "--import", str(data / name)]
        assert main(argv) == code
        english = capsys.readouterr()
        assert main(["--lang", lang, *argv]) == code
        said = capsys.readouterr()
        assert english_left(english.out + english.err, lang), name
        assert not english_left(said.out + said.err, lang), said.out + said.err


@pytest.mark.timeout(120)
def test_prove_roofline_says_its_lines_in_the_language(tmp_path, capsys):
    """`aiworkbook --lang de prove roofline --quick --node-out`: the bandwidth line and how each rate is
    counted, the matmul rates, the headline, the notes and the calibrated node written, all in German
    (the same lines in English are what the detector finds English in)."""
    import contextlib
    import io

    node = tmp_path / "node.json"
    argv = ["--lang", "de", "prove", "roofline", "--quick", "--device", "cpu", "--node-out", str(node)]
    with contextlib.redirect_stderr(io.StringIO()):  # the progress bar
        assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("  Kopieren ") and "GFLOP/s" in out and f"{node} geschrieben" in out
    assert not english_left(out, "de"), out
    english = Msg("cli.roofline.bandwidth", copy=1e10, read=1e10, copy_how="", read_how="")
    english += "\n" + Msg("cli.roofline.copy_how") + "\n" + Msg("cli.roofline.node_written", path="n.json")
    assert len(english_left(english, "de")) == 3


@pytest.mark.timeout(120)
def test_storage_proofs_tables_in_the_language(tmp_path, capsys):
    """`prove dataload --quick` (its sweep table and notes, the GPU utilisation not available) and the
    table of `prove checkpoint --quick` (baseline and a format's write, stall, restore) in Dutch; the
    headline names its honesty flags (fsynced) as they are, so only checkpoint's table is held here."""
    import contextlib
    import io

    data = ["prove", "dataload", "--dir", str(tmp_path / "d"), "--quick"]
    ckpt = ["prove", "checkpoint", "--dir", str(tmp_path / "c"), "--model", "tiny-llama", "--quick"]
    ckpt += ["--formats", "safetensors"]
    said = {}
    for argv in (data, ckpt):
        with contextlib.redirect_stderr(io.StringIO()):  # the progress bar
            assert main(["--lang", "nl", *argv]) == 0
        said[argv[1]] = capsys.readouterr().out
    assert "voorbeelden/s" in said["dataload"] and "niet beschikbaar: geen GPU" in said["dataload"]
    assert not english_left(said["dataload"], "nl"), said["dataload"]
    table = [x for x in said["checkpoint"].splitlines() if x.startswith("  ") and not x.startswith("  - ")]
    assert len(table) == 2 and "gewoon sequentieel" in table[0] and "herstellen" in table[1]
    assert not english_left("\n".join(table), "nl"), table
    english = Msg(
        "cli.ckpt.format",
        format="",
        size="",
        write=1e9,
        write_x=1,
        stall=1,
        read=1e9,
        read_x=1,
        integrity="ok",
    )
    assert english_left(english + "\n" + Msg("dataload.util_na", why=Msg("dataload.util_no_gpu")), "nl")
