"""Reports: offline HTML (inline SVG, no script, no network reference, A4 print CSS) and Markdown with
the decision, node, memory, estimate vs measured, latency, roofline, cost, deployment, environment."""

from __future__ import annotations

import re

import pytest
from profile_fakes import CHAT, result

from aiworkbook.cli import main
from aiworkbook.patterns import TABLES, text
from aiworkbook.profile import lock
from aiworkbook.profile.report import answer_of, build, render_html, render_markdown, roofline_rows
from aiworkbook.profile.snippets import snippets
from aiworkbook.sizing import Workload
from aiworkbook.sizing.needs import priced_cost

SWEEP = [
    {
        "load": n,
        "p50_ttft_s": 0.05 * n,
        "p95_ttft_s": 0.08 * n,
        "p99_ttft_s": 0.1 * n,
        "p50_tpot_s": 0.02,
        "p95_tpot_s": 0.025,
        "p99_tpot_s": 0.03,
        "throughput_tok_s": 400.0 * min(n, 8),
    }
    for n in (1, 2, 4, 8, 16)
]

TRAIN = {
    "name": "finetune",
    "model": "llama-3.2-1b",
    "workload": Workload(mode="lora", batch=4, seq_len=2048),
    "assumptions": {"train_tokens": 2e9},
}


def profile():
    serving = result(
        "serving",
        0.4,
        "s",
        predicted=0.35,
        predicted_label="p95 TTFT at the knee",
        details={"sweep": SWEEP, "knee": 8},
        notes=["most load meeting the SLO: 6 concurrent requests", "static vs continuous batching: 1.69x"],
    )
    return lock(
        "hybrid",
        node="hybrid-pools",
        detected=None,
        workloads=[CHAT, TRAIN],
        results=[result("kv", 9.5e8, flags=["proxy-model"]), serving],
        answers={"model_kind": "llm", "phase": "both", "separate_pools": True},
        notes=["golden proofs re-run after every driver upgrade"],
    )


@pytest.fixture(scope="module")
def prof():
    return profile()


@pytest.fixture(scope="module")
def page(prof):
    return render_html(prof)


def test_html_is_standalone_and_offline(page):
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page.lower()
    urls = set(re.findall(r"(?:https?:)?//[\w.-]+[^\s\"'<>)]*", page))
    assert urls <= {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}, urls
    assert not re.search(r"<(link|img|iframe)\b", page)
    assert "@page { size: A4" in page and "@media print" in page


def test_html_shows_every_chart_as_inline_svg(page):
    figures = re.findall(r'<figure class="aiwb-chart" data-chart="(\w+)"><svg', page)
    assert figures == ["memory", "memory", "proofs", "latency", "roofline"]


def test_html_sections_and_figures(prof, page):
    for key in (
        "decision",
        "node",
        "workloads",
        "proofs",
        "latency",
        "roofline",
        "cost",
        "deployment",
        "environment",
    ):
        assert f">{text('report.' + key)}" in page, key
    assert "Hybrid: train here, serve there" in page
    assert text("reason.both_separate") in page  # the questionnaire's reason
    assert "proxy-model: a smaller proxy" in page  # honesty flag with its meaning
    assert "hybrid-pools" in page and "serve-pool (4x 2xH100 PCIe)" in page
    s = snippets(prof.workloads[0], prof.estimates["chat"])
    assert f"--max-num-seqs={s['vllm'].max_num_seqs}" in page
    assert "nvidia.com/" in page


def test_estimates_use_the_matching_pool(prof):
    assert prof.estimates["chat"]["gpu"] == "H100-PCIe"  # inference pool
    assert prof.estimates["finetune"]["gpu"] == "H200-SXM"  # training pool


def test_cost_per_mtok_and_per_training_run(prof):
    md = render_markdown(prof)
    chat, train = prof.estimates["chat"]["cost"], prof.estimates["finetune"]["cost"]
    # chat fits one MIG 3g.40gb instance of the H100-PCIe: priced as the deployment runs it, on the instance
    chat = priced_cost(chat, answer_of(prof, prof.workloads[0]).option)
    assert chat["on"] == "H100-PCIe MIG 3g.40gb"
    assert f"| chat | {chat['decode_usd_per_mtok']:,.2f} |" in md
    assert f"{train['run']['usd']:,.0f}" in md and train["run"]["train_tokens"] == 2e9
    # the training run is priced per run and per token trained, never as output tokens
    row = next(line for line in md.splitlines() if line.startswith("| finetune |"))
    assert row.split("|")[2].strip() == "—"
    assert f"{train['run']['usd']:,.0f}" in row


def test_markdown_has_the_same_sections(prof):
    md = render_markdown(prof)
    assert md.startswith("# " + text("report.title"))
    for key in ("decision", "node", "workloads", "proofs", "latency", "roofline", "cost", "deployment"):
        assert f"## {text('report.' + key)}" in md, key
    assert "```bash\nvllm serve meta-llama/Meta-Llama-3-8B" in md and "```yaml\nresources:" in md
    assert "| serving |" in md and "| 16 |" in md  # the proof row and the sweep's last load
    assert "<svg" not in md and text("report.charts_in_html") in md


def test_each_proofs_notes_under_its_name(prof, page):
    """The serving proof's conclusions (its SLO load, static vs continuous) are notes of its result; the
    report lists them, each after its proof's name; the kv proof has none."""
    md = render_markdown(prof)
    notes = md.split("### " + text("report.proof_notes"), 1)[1].split("\n## ", 1)[0]
    assert [ln for ln in notes.splitlines() if ln.startswith("- ")] == [
        "- serving: most load meeting the SLO: 6 concurrent requests",
        "- serving: static vs continuous batching: 1.69x",
    ]
    assert f">{text('report.proof_notes')}<" in page
    assert "<li>serving: most load meeting the SLO: 6 concurrent requests</li>" in page


@pytest.mark.parametrize("lang", ["nl", "de"])
def test_report_speaks_the_language(prof, lang):
    md = render_markdown(prof, lang=lang)
    assert md.startswith("# " + str(TABLES[lang]["report.title"]))
    assert str(TABLES[lang]["pattern.hybrid.title"]) in md
    assert text("pattern.hybrid.title") not in md


def test_roofline_from_the_proof_when_locked():
    chart_rows = [
        {"kind": "ceiling", "dtype": "fp32", "intensity": 1.0, "attainable_flops": 1e11, "spec": "CPU"}
    ]
    p = lock(
        "classical-ml-cpu",
        detected=None,
        results=[result("roofline", 2e10, "B/s", details={"chart": chart_rows})],
    )
    assert roofline_rows(p) == chart_rows
    assert roofline_rows(lock("classical-ml-cpu", detected=None)) is None
    assert text("report.no_roofline") in render_html(lock("classical-ml-cpu", detected=None))


def test_empty_profile_still_reports():
    p = lock("classical-ml-cpu", detected=None)
    kinds = [b.kind for b in build(p, charts=False)]
    assert "table" not in kinds[:3] and text("report.no_proofs") in render_markdown(p)


def test_cli_report_writes_both(prof, tmp_path, capsys):
    path = tmp_path / "p.json"
    prof.save(path)
    assert main(["report", str(path), "--md", str(tmp_path / "r.md"), "--lang", "de"]) == 0
    assert (tmp_path / "r.md").read_text().startswith("# Festgeschriebenes")
    assert (tmp_path / "r.md").stat().st_mode & 0o044, "readable by others (the umask's mode, not 0600)"
    assert main(["report", str(path)]) == 2
    assert "--html FILE" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "missing.json"), "--md", str(tmp_path / "x.md")]) == 2
    assert not (tmp_path / "x.md").exists()


def test_reasons_only_for_the_recommended_pattern():
    answers = {"model_kind": "tabular", "phase": "training"}
    md = render_markdown(lock("dl-training", detected=None, answers=answers))
    assert text("reason.tabular") not in md
    assert text("report.recommended_other").format(pattern=text("pattern.classical-ml-cpu.title")) in md
    md = render_markdown(lock("classical-ml-cpu", detected=None, answers=answers), lang="de")
    assert text("reason.tabular", "de") in md


def test_the_report_picks_charts_by_the_proofs_declared_kind_not_by_their_details():
    """A proof that is not drawn as a latency sweep is not tabled as one even if its details carry a
    `sweep` list (nor as a roofline with a `chart` list); the serving proof is."""
    chart_rows = [
        {"kind": "ceiling", "dtype": "fp32", "intensity": 1.0, "attainable_flops": 1e11, "spec": "CPU"}
    ]
    odd = result("vram", 1e9, details={"sweep": SWEEP, "knee": 8, "chart": chart_rows})
    p = lock("classical-ml-cpu", detected=None, results=[odd])
    md = render_markdown(p)
    assert text("report.no_serving") in md and "p95 TTFT" not in md
    assert roofline_rows(p) != chart_rows  # the datasheet's or none, never the vram proof's rows
    served = lock(
        "classical-ml-cpu", detected=None, results=[result("serving", 0.4, "s", details={"sweep": SWEEP})]
    )
    assert "p95 TTFT" in render_markdown(served)
