"""A set-up that does not fit is priced on the GPUs it needs, each at its own GPU's price; chart
legends use plain words (aiworkbook.sizing.needs, aiworkbook.charts.theme.label)."""

from __future__ import annotations

import pytest
from test_charts import rows_of

from aiworkbook.charts import memory_chart
from aiworkbook.charts.theme import label
from aiworkbook.sizing import Workload, capacity, estimate
from aiworkbook.sizing.needs import needs
from aiworkbook.specs import get_gpu, load_model

INFER = Workload(mode="infer", concurrency=8, seq_len=4096, new_tokens=512)


def test_a_setup_that_does_not_fit_is_priced_on_the_gpus_it_needs():
    spec = load_model("llama-3-70b")
    n = needs(spec, INFER, "RTX-4090")
    assert not n.fits
    assert n.here is not None and n.here.gpu == "RTX-4090"
    assert n.here.gpus == capacity.gpus_needed(spec, INFER, "RTX-4090") > 1
    best = capacity.cheapest_gpu(spec, INFER)
    assert n.cheapest is not None and (n.cheapest.gpu, n.cheapest.gpus) == (best["gpu"], best["gpus"])
    # the quoted price is the cheapest set-up's, computed on that GPU at that tensor-parallel size
    assert n.priced == n.cheapest
    ref = estimate(spec, Workload(**{**INFER.to_dict(), "tp": best["gpus"]}), gpu=best["gpu"]).to_dict()
    assert n.priced.usd_per_mtok == pytest.approx(ref["cost"]["decode_usd_per_mtok"])
    assert n.priced.usd_per_hour == pytest.approx(best["usd_per_hour"])
    # the estimate on the GPU it does not fit on carries no price at all (one price rule)
    one = estimate(spec, INFER, gpu="RTX-4090").to_dict()["cost"]
    assert one["price_per_gpu_hour"] is None and "decode_usd_per_mtok" not in one
    assert one["note"].startswith("does not fit")


def test_a_setup_that_fits_is_priced_as_given():
    spec = load_model("llama-3-8b")
    whole = Workload(mode="infer", concurrency=48, seq_len=4096, new_tokens=512)  # no MIG instance holds it
    n = needs(spec, whole, "H100-SXM")
    assert n.fits and n.priced == n.here and n.here.gpus == 1 and n.here.mig == ""
    ref = estimate(spec, whole, gpu="H100-SXM").to_dict()["cost"]
    assert n.priced.usd_per_mtok == pytest.approx(ref["decode_usd_per_mtok"])
    assert n.priced.usd_per_hour == pytest.approx(get_gpu("H100-SXM").price_per_hour_usd)
    # 8 sequences fit one 3g.40gb instance: priced there, at 3/7 of the GPU's price (tests/test_mig_answer.py)
    n = needs(spec, INFER, "H100-SXM")
    assert n.fits and n.priced == n.here and n.here.mig == "3g.40gb"
    assert n.priced.usd_per_hour == pytest.approx(get_gpu("H100-SXM").price_per_hour_usd * 3 / 7)


def test_training_is_priced_per_token_trained_not_per_output_token():
    n = needs(load_model("llama-3.2-1b"), Workload(mode="train", batch=1, seq_len=1024), "H100-SXM")
    assert n.priced is not None
    assert n.priced.usd_per_mtok is None and n.priced.usd_per_mtok_trained > 0


def test_legends_read_plain_words():
    assert label("kv_cache") == "KV cache"
    assert label("cuda_context") == "CUDA context"
    assert label("infer_6B_per_param") == "rule of thumb: 6 B/parameter (inference)"
    assert label("qlora_1B_per_param") == "rule of thumb: 1 B/parameter (QLoRA)"  # not "QLORA"
    assert "_" not in label("train_18B_per_param")
    spec = load_model("llama-3-8b")
    chart = memory_chart(estimate(spec, INFER, gpu="H100-SXM")).to_dict()
    shown = {r["label"] for r in rows_of(chart) if "label" in r and "component" in r}
    assert {"KV cache", "CUDA context", "rule of thumb: 6 B/parameter (inference)"} <= shown
    assert not [s for s in shown if "_" in s]
    assert chart["layer"][0]["encoding"]["color"]["field"] == "label"


def test_legend_words_are_said_in_the_language():
    """The plain words come from the catalogues (label.*), so Dutch and German say them too; a key no
    catalogue holds reads as its name in every language."""
    from english_left import english_left

    assert label("workspace", "de") == "cuBLAS-Arbeitsbereich"
    assert label("reserve", "de") == "Allokator-Reserve" and label("reserve", "nl") == "allocatorreserve"
    assert label("kv_cache", "nl") == "KV-cache"
    assert label("lora_0.5B_per_param", "nl") == "vuistregel: 0,5 B/parameter (LoRA)"
    assert label("infer_6B_per_param", "de") == "Faustregel: 6 B/Parameter (Inferenz)"
    assert label("something_new", "de") == "something new"
    from aiworkbook.charts.theme import LABEL_KEYS

    for lang in ("nl", "de"):
        said = [label(k, lang) for k in LABEL_KEYS]
        assert not english_left("\n".join(said), lang), said
        assert all(label(k, lang) != label(k) for k in LABEL_KEYS if k not in ("logits",)), lang


@pytest.mark.parametrize(
    ("model", "w", "gpu"),
    [
        ("deepseek-v3", INFER, "RTX-4090"),
        ("llama-3-8b", INFER, "H100-SXM"),
        ("llama-3-70b", Workload(mode="train", batch=1, seq_len=2048), "A100-SXM-80GB"),
    ],
)
def test_the_sizers_rows_give_the_same_answer_as_sizing_them_again(model, w, gpu):
    """The sizer passes the catalogue rows it already has (one sizing per GPU, not two)."""
    spec = load_model(model)
    rows = capacity.per_gpu(spec, w)
    assert needs(spec, w, gpu, rows=rows) == needs(spec, w, gpu)


def test_a_gpu_without_the_workloads_arithmetic_is_neither_counted_nor_priced():
    """fp8 weights compute on fp8 tensor cores: a GPU whose datasheet lists no fp8 peak (Ampere) runs
    them at no tensor-parallel size, so the answer's cheapest option is one that has them."""
    from aiworkbook.sizing.answer import answer
    from aiworkbook.specs import list_gpus

    w = Workload(mode="infer", weights_dtype="fp8", seq_len=512)
    spec = load_model("gpt2")
    without = [g for g in list_gpus() if "fp8" not in g.peak_flops_dense]
    assert without, "the catalogue has a GPU without fp8 to test against"
    for g in without:
        assert capacity.gpus_needed(spec, w, g) is None, g.name
    a = answer(spec, w, get_gpu("H100-SXM"))
    cheapest = a.needs.cheapest
    assert cheapest is not None and "fp8" in get_gpu(cheapest.gpu).peak_flops_dense
    # the same GPUs run bf16 weights
    assert capacity.gpus_needed(spec, Workload(mode="infer", seq_len=512), without[0]) == 1
