"""One answer everywhere: the sizer's headline, `aiworkbook size --json` and the offline report render
the same aiworkbook.sizing.answer for a workload: the same GPU count, GPU, price and verdict (a
property over random workloads), and a set-up that does not fit is priced only on the GPUs it needs."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from aiworkbook.cli import main
from aiworkbook.i18n_format import money
from aiworkbook.profile import lock
from aiworkbook.profile.report import _usd, render_markdown
from aiworkbook.sizing import Workload
from aiworkbook.sizing.answer import answer
from aiworkbook.specs import load_model

MODELS = ("tiny-llama", "llama-3.2-1b", "llama-3-8b")
GPUS = ("H100-SXM", "L4", "RTX-4090", "A100-SXM-80GB")


@st.composite
def workloads(draw) -> tuple[str, str, dict]:
    model, gpu = draw(st.sampled_from(MODELS)), draw(st.sampled_from(GPUS))
    tp = draw(st.sampled_from((1, 2, 4)))
    if draw(st.booleans()):
        kw = {
            "mode": "infer",
            "concurrency": draw(st.integers(1, 32)),
            "seq_len": draw(st.sampled_from((512, 2048, 4096))),
            "new_tokens": draw(st.sampled_from((128, 512))),
            "tp": tp,
        }
    else:
        kw = {
            "mode": "train",
            "batch": draw(st.integers(1, 4)),
            "seq_len": draw(st.sampled_from((512, 2048))),
            "tp": tp,
            "dp": draw(st.sampled_from((1, 2, 4))),
        }
    return model, gpu, kw


def _cli_answer(model: str, gpu: str, kw: dict, capsys) -> dict:
    capsys.readouterr()
    assert main(["size", model, "--gpu", gpu, "--json", *_argv(kw)]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def sizer():
    import aiworkbook.widgets as aw

    w = aw.ModelSizer(background=False)
    yield w
    w.close()


@settings(
    max_examples=4,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],  # each example sizes the whole catalogue three times
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(case=workloads())
def test_the_dashboard_the_cli_and_the_report_give_one_answer(case, sizer, capsys):
    model, gpu, kw = case
    spec, w = load_model(model), Workload(**kw)
    try:
        w.check_against(spec)
    except Exception:  # noqa: BLE001 - a tp that does not split this model's heads: not a workload
        return
    ref = answer(spec, w, gpu)
    verdict = "fits" if ref.fits else "does NOT fit"

    # the dashboard
    sizer.value = {"model": model, "gpu": gpu, **kw}
    assert sizer.error == ""
    head, res = sizer.headline.value, sizer.result["answer"]
    assert f"{verdict}</span> on {ref.given} × {gpu}" in head
    assert res["fits"] is ref.fits and res["gpus_given"] == ref.given
    o = ref.option
    assert res["runs_on"] == (
        {"gpu": ref.on, "gpus": ref.gpus, "mig": o.mig or None} if o is not None else None
    )
    if ref.usd_per_mtok is not None and ref.mode == "infer":
        assert money(ref.usd_per_mtok, "en") in head
    if not ref.fits:  # the GPU it does not fit on is never priced
        assert "decode_usd_per_mtok" not in sizer.result["cost"]
        assert "usd_per_mtok_trained" not in sizer.result["cost"]

    # the command line
    doc = _cli_answer(model, gpu, kw, capsys)
    a = doc["answer"]
    assert a["fits"] is ref.fits and a["gpu"] == gpu and a["gpus_given"] == ref.given
    assert a["runs_on"] == res["runs_on"]
    assert a["usd_per_mtok"] == pytest.approx(ref.usd_per_mtok)
    assert a["price_source"].startswith("list price, ") and "2026-12-01" in a["price_source"]
    if not ref.fits:
        assert doc["cost"]["price_per_gpu_hour"] is None

    # the report
    prof = lock(
        "llm-inference", detected=None, workloads=[{"name": "w", "model": model, "gpu": gpu, "workload": w}]
    )
    line = next(x for x in render_markdown(prof).splitlines() if x.startswith("**w"))
    assert f"{'fits' if ref.fits else 'does not fit'}: {ref.given} × {gpu.lower()}" in line.lower()
    if ref.usd_per_mtok is not None and ref.mode == "infer":
        assert _usd(ref.usd_per_mtok) in line
        if not ref.fits:
            assert f"({ref.gpus} × {ref.on})" in line


def test_seventy_b_on_one_l4_is_priced_only_on_what_it_needs(capsys):
    """`size llama-3-70b --mode infer --concurrency 8 --seq 4096 --new-tokens 512 --gpu L4`: no 1-GPU price."""
    kw = {"mode": "infer", "concurrency": 8, "seq_len": 4096, "new_tokens": 512}
    doc = _cli_answer("llama-3-70b", "L4", kw, capsys)
    assert doc["answer"]["fits"] is False
    assert doc["cost"]["price_per_gpu_hour"] is None and "decode_usd_per_mtok" not in doc["cost"]
    runs = doc["answer"]["runs_on"]
    assert runs["gpus"] > 1  # 70B does not fit one 24 GB-class GPU at any catalogue price
    ref = answer(load_model("llama-3-70b"), Workload(**kw), "L4")
    assert doc["answer"]["usd_per_mtok"] == pytest.approx(ref.option.usd_per_mtok)
    assert doc["answer"]["deployment"]["gpu"] == runs["gpu"]
    assert doc["answer"]["deployment"]["count"] == runs["gpus"]
    capsys.readouterr()
    assert main(["size", "llama-3-70b", "--gpu", "L4", *_argv(kw)]) == 0
    text = capsys.readouterr().out
    assert f"runs on {runs['gpus']} x {runs['gpu']}" in text
    assert "decode_usd_per_mtok" not in text.split("\nassumptions")[0].split("\ncost")[-1]


def _argv(kw: dict) -> list[str]:
    flag = {"seq_len": "--seq", "new_tokens": "--new-tokens"}
    return [x for k, v in kw.items() for x in (flag.get(k, f"--{k}"), str(v))]


def test_a_price_file_overrides_the_catalogue_and_says_so(tmp_path, capsys):
    """`--prices FILE`: the user's price, source and date; a bad file is refused naming the field."""
    from aiworkbook.specs import get_gpu
    from aiworkbook.specs.gpu import set_prices

    kw = ["--mode", "infer", "--gpu", "L4", "--json"]
    capsys.readouterr()
    assert main(["size", "llama-3-8b", *kw]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["answer"]["price_source"] == (
        f"list price, {get_gpu('L4').price_source}, {get_gpu('L4').price_date}"
    )
    f = tmp_path / "prices.json"
    f.write_text(json.dumps({"source": "our contract", "date": "2026-11-15", "prices": {"L4": 0.35}}))
    try:
        assert main(["size", "llama-3-8b", *kw, "--prices", str(f)]) == 0
        mine = json.loads(capsys.readouterr().out)
    finally:
        set_prices(None)
    assert mine["cost"]["price_per_gpu_hour"] == pytest.approx(0.35)
    assert mine["answer"]["price_source"] == "price, our contract, 2026-11-15"
    ratio = listed["answer"]["usd_per_mtok"] / mine["answer"]["usd_per_mtok"]
    assert ratio == pytest.approx(get_gpu("L4").price_per_hour_usd / 0.35)
    f.write_text(json.dumps({"source": "x", "date": "last week", "prices": {"L4": 0.35}}))
    assert main(["size", "llama-3-8b", *kw, "--prices", str(f)]) == 2
    assert "prices.date" in capsys.readouterr().err
    set_prices(None)


def test_every_catalogue_price_carries_its_source_and_date():
    import datetime as dt

    from aiworkbook.specs import list_gpus

    priced = [g for g in list_gpus() if g.price_per_hour_usd > 0]
    assert priced
    for g in priced:
        assert g.price_source and dt.date.fromisoformat(g.price_date), g.name


def test_fit_names_both_engines_arithmetic_for_max_concurrency(capsys):
    """`fit llama-3-8b --engine vllm --max-model-len 8192` printed 54 and 52.60 without saying why."""
    capsys.readouterr()
    assert main(["fit", "llama-3-8b", "--engine", "vllm", "--max-model-len", "8192"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("max_concurrency "))
    assert "the workbook's arithmetic" in line and "vLLM's start-up arithmetic" in line
    vllm = next(x for x in out.splitlines() if x.strip().startswith("max_concurrency") and x.startswith("  "))
    assert f"{float(vllm.split()[-1]):.2f}" in line  # the very figure vLLM's section prints


def test_fit_renders_the_same_answer_as_size(capsys):
    kw = {"mode": "infer", "concurrency": 8, "seq_len": 4096, "new_tokens": 512}
    sized = _cli_answer("llama-3-70b", "L4", kw, capsys)["answer"]
    assert main(["fit", "llama-3-70b", "--gpu", "L4", "--json", *_argv(kw)]) == 0
    fitted = json.loads(capsys.readouterr().out)["answer"]
    assert fitted == sized
