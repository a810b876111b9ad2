"""One price rule (aiworkbook/sizing/cost.py): for random workloads the sizing dashboard's computation,
`size --json`, `fit --json` and the report give the same $/hour and $ per million tokens, and each is
what the rule computes from the GPU's $/GPU-hour, the GPU count and the roofline throughput; no price
arithmetic lives outside the rule."""

from __future__ import annotations

import json
import random
import re
from dataclasses import replace
from pathlib import Path

import pytest
from profile_fakes import priced_profile

from aiworkbook.cli import main
from aiworkbook.sizing import Assumptions, Workload, estimate
from aiworkbook.sizing.cost import gpu_usd, instance_hour_price, usd_for_tokens, usd_per_million_tokens
from aiworkbook.sizing.placement import mig_placement, mig_share, mig_slice
from aiworkbook.specs import list_gpus, load_gpu, load_model

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("llama-3-8b", "qwen2.5-7b", "mistral-7b", "gemma-2-9b")


def _workloads(n: int, seed: int = 37) -> list[tuple[str, str, Workload]]:
    """`n` random (model, GPU, workload): serving or fine-tuning, at sizes a catalogue GPU holds."""
    rng = random.Random(seed)
    gpus = [g.name for g in list_gpus() if g.price_per_hour_usd]
    out = []
    for i in range(n):
        model = rng.choice([m for m in MODELS if _known(m)])
        if i % 2 == 0:  # serving and fine-tuning in turn
            w = Workload(
                mode="infer",
                seq_len=rng.choice((1024, 2048, 4096)),
                new_tokens=rng.choice((128, 256, 512)),
                concurrency=rng.choice((1, 4, 8, 16)),
            )
        else:
            w = Workload(mode="train", batch=rng.choice((1, 2, 4)), seq_len=rng.choice((512, 1024, 2048)))
        out.append((model, rng.choice(gpus), w))
    return out


def _known(model: str) -> bool:
    try:
        load_model(model)
    except Exception:
        return False
    return True


def _cli(capsys, *args: str) -> dict:
    capsys.readouterr()
    assert main(list(args)) == 0
    return json.loads(capsys.readouterr().out)


def _args(w: Workload) -> list[str]:
    if w.training:
        return ["--mode", "train", "--batch", str(w.batch), "--seq", str(w.seq_len)]
    return ["--mode", "infer", "--seq", str(w.seq_len), "--new-tokens", str(w.new_tokens),
            "--concurrency", str(w.concurrency)]  # fmt: skip


def _by_the_rule(model: str, w: Workload, gpu: str, gpus: int, mig: str = "") -> tuple[float, float]:
    """$/hour and $ per million tokens (trained, or generated) of `w` on `gpus` x `gpu` at its list
    price, from the rule and the estimate's roofline throughput, computed here. `mig`: on one MIG
    instance as it is deployed (vLLM's workload for serving), at the instance's share of the price."""
    g = load_gpu(gpu)
    if mig:
        pl = mig_placement(load_model(model), w, g)
        assert pl is not None and pl.mig == mig
        w, g = pl.workload, mig_slice(g, mig)
        assert g.price_per_hour_usd == instance_hour_price(
            load_gpu(gpu).price_per_hour_usd, mig_share(load_gpu(gpu), mig)[0]
        )
    est = estimate(load_model(model), replace(w, tp=gpus), gpu=g).to_dict()
    roof, a = est["roofline"], Assumptions()
    if w.training:
        per_mtok = usd_per_million_tokens(g.price_per_hour_usd, gpus, roof["tokens_per_s"])
    else:
        eff = a.utilization * (1 - a.headroom)
        per_mtok = usd_per_million_tokens(g.price_per_hour_usd, gpus, roof["decode_tokens_per_s"], eff)
    return gpu_usd(g.price_per_hour_usd, gpus), per_mtok


#: the random draw and two set-ups one MIG instance holds (priced on the instance: tests/test_mig_answer.py)
CASES = [
    *_workloads(8),
    ("llama-3-8b", "H100-SXM", Workload(mode="infer", seq_len=4096, new_tokens=512, concurrency=32)),
    ("tiny-llama", "A100-40GB", Workload(mode="train", batch=1, seq_len=2048)),
]


@pytest.mark.timeout(240)
@pytest.mark.parametrize("model,gpu,w", CASES, ids=[f"{m}-{g}-{w.mode}" for m, g, w in CASES])
def test_the_faces_give_the_rules_figures(capsys, model, gpu, w):
    import sys

    sys.path.insert(0, str(ROOT / "widgets"))
    from aiworkbook.widgets.model_sizer import size as dashboard

    spec = load_model(model)
    shown = dashboard(spec, w.to_dict(), gpu)["answer"]  # what the sizing dashboard renders
    sized = _cli(capsys, "size", model, "--gpu", gpu, *_args(w), "--json")["answer"]
    per_mtok = "usd_per_mtok_trained" if w.training else "usd_per_mtok"
    assert shown.option is not None  # these sizes are held by some catalogue GPU
    o = shown.option
    hourly, mtok = _by_the_rule(model, w, o.gpu, o.gpus, o.mig)
    assert (o.usd_per_hour, getattr(o, per_mtok)) == (hourly, mtok)
    assert sized["runs_on"] == {"gpu": o.gpu, "gpus": o.gpus, "mig": o.mig or None}
    assert (sized["usd_per_hour"], sized["usd_per_mtok"]) == (hourly, mtok)
    assert sized["usd_per_gpu_hour"] == instance_hour_price(load_gpu(o.gpu).price_per_hour_usd, o.share)
    # fit: the lowest-cost catalogue set-up, priced by the same rule
    best = _cli(capsys, "fit", model, *_args(w), "--json")["cheapest_gpu"]
    assert (best["usd_per_hour"], best["usd_per_mtok"]) == _by_the_rule(model, w, best["gpu"], best["gpus"])


@pytest.mark.timeout(240)
def test_the_report_prices_each_workload_as_size_does_and_its_month_by_the_rule(capsys):
    """The report (a locked profile on its node) shows the answer `size` gives for the same workload and
    GPU, and its month is the rule's $ for the month's tokens."""
    from aiworkbook.profile.report import answer_of, render_markdown
    from aiworkbook.profile.report_blocks import usd
    from aiworkbook.profile.report_cfo import DAYS_PER_MONTH, DEFAULT_TOKENS_PER_DAY

    infer = [(m, g, w) for m, g, w in CASES if not w.training][:1] or [
        ("llama-3-8b", "H100-SXM", Workload(mode="infer", seq_len=2048, new_tokens=256, concurrency=4))
    ]
    model, gpu, w = infer[0]
    prof = priced_profile({"name": "job", "model": model, "gpu": gpu, "workload": w})
    ans = answer_of(prof, prof.workloads[0])
    doc = _cli(capsys, "size", model, "--gpu", gpu, *_args(w), "--json")
    sized = doc["answer"]
    assert ans.option is not None and (ans.option.gpu, ans.option.gpus) == (
        sized["runs_on"]["gpu"],
        sized["runs_on"]["gpus"],
    )
    assert (ans.option.usd_per_hour, ans.usd_per_mtok) == (sized["usd_per_hour"], sized["usd_per_mtok"])
    rows = [x for x in render_markdown(prof).splitlines() if x.startswith("| job |")]
    decode = doc["cost"].get("decode_usd_per_mtok")  # the cost table: the estimate on the given GPU
    if decode is not None:
        assert any(f"| {usd(decode, 'en')} |" in r for r in rows), rows
    month = usd_for_tokens(ans.usd_per_mtok, DEFAULT_TOKENS_PER_DAY * DAYS_PER_MONTH)
    assert any(f"| {month:,.0f} |" in r for r in rows), rows  # the CFO's month


def test_no_price_arithmetic_outside_the_rule():
    """A $/GPU-hour, $/hour or $/Mtok multiplied or divided anywhere but sizing/cost.py is a second
    rule: it fails here, naming the line."""
    price = r"(price|usd|per_hour|(?<!joules_)per_mtok|kwh)"
    pattern = re.compile(rf"{price}[A-Za-z_\"'\])]*\s*[*/]\s*[A-Za-z0-9_(]|[*/]\s*[A-Za-z_.\[\"']*{price}")
    found = []
    for folder in ("aiworkbook", "widgets"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.relative_to(ROOT).as_posix() == "aiworkbook/sizing/cost.py":
                continue
            for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                code = line.split("#", 1)[0]
                if pattern.search(code) and '"""' not in code and not code.strip().startswith(("'", '"')):
                    found.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert found == []
