"""The offline report says what was measured where, prices each workload on its own GPU (and a set-up
that does not fit on the GPUs it needs), never reads a CPU fallback as a GPU pass, labels a datasheet
roofline and draws no empty chart."""

from __future__ import annotations

import pytest
from profile_fakes import result

from aiworkbook.charts import memory_chart
from aiworkbook.profile import lock
from aiworkbook.profile.report import build, render_html, render_markdown
from aiworkbook.provenance import Where, from_results, verdict_words
from aiworkbook.sizing import Workload, estimate
from aiworkbook.sizing.needs import needs
from aiworkbook.specs import get_gpu, load_model

CPU_ENV = {
    "gpus": [],
    "gpu_status": "no NVIDIA GPU found",
    "host": {"cpu_model": "Intel Xeon", "cores": 2},
    "torch": {"version": "2.5.1"},
}
INFER = Workload(mode="infer", seq_len=4096, new_tokens=512, concurrency=8)


@pytest.fixture(scope="module")
def prof():
    return lock(
        "llm-inference",
        node="inference-4xl40s",  # 4 × L40S at $4.00/h: $1.00 per L40S-hour
        detected=None,
        workloads=[
            {"name": "chat", "model": "llama-3-8b", "gpu": "H100-SXM", "workload": INFER},
            {"name": "big", "model": "llama-3-70b", "gpu": "RTX-4090", "workload": INFER},
            {"name": "tune", "model": "tiny-llama", "workload": Workload(mode="lora", batch=1, seq_len=128)},
        ],
        results=[
            result("kv", 9.5e8, device="cpu", flags=["cpu-fallback"], environment=CPU_ENV),
        ],
    )


def test_a_workload_on_another_gpu_is_priced_at_that_gpus_price_not_the_nodes(prof):
    chat = prof.estimates["chat"]["cost"]
    assert chat["price_per_gpu_hour"] == pytest.approx(get_gpu("H100-SXM").price_per_hour_usd)
    ref = estimate(load_model("llama-3-8b"), INFER, gpu="H100-SXM").to_dict()["cost"]
    assert chat["decode_usd_per_mtok"] == pytest.approx(ref["decode_usd_per_mtok"])
    # the node's own GPU keeps the node's price
    assert prof.estimates["tune"]["cost"]["price_per_gpu_hour"] == pytest.approx(1.0)


def test_the_report_opens_with_where_it_was_measured(prof):
    blocks = build(prof, charts=False)
    assert blocks[1].kind == "p" and blocks[1].css == "aiwb-where"
    assert blocks[1].text == "Measured on a 2-core CPU without a GPU: the GPU figures are estimates."


def test_where_sentences():
    assert "without a GPU" in Where(cpu_cores=2).sentence()
    assert Where(gpus=("H100", "H100"), cpu_cores=32).sentence().startswith("Measured on 2 × H100")
    assert Where(cpu_cores=2, measured=False).sentence().startswith("Nothing is measured")
    assert not from_results([]).measured
    gpu_run = {"device": "cuda", "environment": {"gpus": [{"name": "NVIDIA L40S"}], "host": {"cores": 32}}}
    assert from_results([gpu_run]).gpus == ("NVIDIA L40S",)


def test_a_cpu_fallback_never_reads_as_a_gpu_pass(prof):
    md = render_markdown(prof)
    row = next(line for line in md.splitlines() if line.startswith("| kv |"))
    assert "info (CPU only)" in row and "| pass |" not in row
    assert verdict_words({"verdict": "fail", "flags": ["cpu-fallback"]}) == "fail (CPU only)"
    assert verdict_words({"verdict": "pass", "device": "cpu", "flags": []}) == "pass"  # a host proof


def test_a_setup_that_does_not_fit_is_priced_on_what_it_needs(prof):
    md = render_markdown(prof)
    n = needs(load_model("llama-3-70b"), INFER, "RTX-4090")
    head = next(line for line in md.splitlines() if line.startswith("**big"))
    assert f"needs {n.here.gpus} × RTX-4090" in head
    assert f"or {n.cheapest.gpus} × {n.cheapest.gpu} at the lowest cost" in head
    # 1 × RTX-4090 is not a real set-up: the locked estimate carries no price for it
    assert "decode_usd_per_mtok" not in prof.estimates["big"]["cost"]
    row = next(line for line in md.splitlines() if line.startswith("| big |"))
    assert f"{n.cheapest.gpus} {n.cheapest.gpu}" in row


def test_training_is_priced_per_token_trained_not_as_output_tokens(prof):
    md = render_markdown(prof)
    row = [c.strip() for c in next(x for x in md.splitlines() if x.startswith("| tune |")).split("|")]
    assert row[2] == "—"  # no output tokens
    assert row[4] not in ("—", "0.000", "0.00")  # per million tokens trained, readable digits


def test_datasheet_roofline_is_labelled_and_cores_not_doubled(prof):
    page = render_html(prof)
    assert "Decode roofline of H100-SXM (datasheet)" in page
    assert "no roofline proof measured them" in page
    assert "(32 cores) (32 cores)" not in page and "(32 cores)" in page


def test_a_small_workloads_memory_chart_is_not_flattened_by_the_budget():
    est = estimate(load_model("tiny-llama"), Workload(mode="lora", batch=1, seq_len=128), gpu="L40S")
    spec = memory_chart(est).to_dict()
    assert "off the scale" in str(spec["title"])
    assert not [lay for lay in spec["layer"] if lay.get("mark", {}).get("type") == "rule"]
    big = memory_chart(estimate(load_model("llama-3-8b"), INFER, gpu="H100-SXM")).to_dict()
    assert [lay for lay in big["layer"] if lay.get("mark", {}).get("type") == "rule"]


def test_no_estimate_vs_measured_chart_when_no_proof_has_an_estimate():
    prof = lock(
        "llm-inference",
        node="inference-4xl40s",
        detected=None,
        results=[result("gpu-bandwidth", 1e9, unit="B/s", predicted=None, device="cpu", environment=CPU_ENV)],
    )
    page = render_html(prof)
    assert 'data-chart="proofs"' not in page
    assert "| gpu-bandwidth |" in render_markdown(prof)  # the row stays in the table


def test_the_where_sentence_is_in_the_reports_language(prof):
    assert "Gemeten op een CPU met 2 kernen zonder GPU" in render_markdown(prof, "nl")
    assert "Gemessen auf einer 2-Kern-CPU ohne GPU" in render_markdown(prof, "de")
    assert Where(cpu_cores=2, measured=False).sentence("nl").startswith("Op deze pagina wordt niets gemeten")


def test_a_roofline_proof_without_ceiling_rows_is_not_said_to_have_never_run(tmp_path):
    """A roofline result without its chart rows (an older or hand-made file) leaves the chart on the
    datasheet's ceilings; the caption said "no roofline proof ran" beside that proof's own row."""
    from profile_fakes import write_locked

    from aiworkbook.profile.model import load_profile

    prof = load_profile(write_locked(tmp_path))
    assert any(g.proof == "roofline" for g in prof.proofs)
    page = render_html(prof)
    assert "no roofline proof measured them" in page and "no roofline proof ran" not in page
