"""`aiworkbook --lang nl|de` for `size`, `fit` and `preflight vllm`: their plain-text tables (row labels,
column heads, the notes under them, the answer, the vLLM start-up section, the pre-flight's report) say
every word in the language and every figure in its format, with no English left (tests/english_left.py).
The same runs in English are where the detector finds English, so the check can fail. Each figure the
test looks for is formatted here from the library's own result for the language, never written in.

In-process through typer's CliRunner (no subprocess), the pre-flight through the fake NVML
(tests/fake_nvml.py): seconds."""

from __future__ import annotations

import json

import pytest
from english_left import english_left
from fake_nvml import DATACENTER, FakeNVML
from typer.testing import CliRunner

from aiworkbook.cli import app
from aiworkbook.units import fmt_bytes, fmt_value

GiB = 2**30
SHARED = {**DATACENTER, "mem_used": 30 * GiB, "processes": [(4242, 20 * GiB), (4250, None)]}
IDLE = {**DATACENTER, "mem_used": 300 * 2**20, "processes": []}

#: (name, argv, the fake GPUs for a pre-flight or None, the exit code)
RUNS = [
    ("train, does not fit", ["size", "llama-3-8b", "--gpu", "H100-SXM"], None, 0),
    ("infer, tp 2", ["size", "llama-3-8b", "--mode", "infer", "--tp", "2", "--gpu", "H100-SXM"], None, 0),
    ("run cost", ["size", "llama-3-8b", "--gpu", "H100-SXM", "--dp", "8", "--train-tokens", "1e11"], None, 0),
    ("no GPU given", ["size", "gpt2"], None, 0),
    ("offloaded to the host", ["size", "llama-3-8b", "--mode", "qlora", "--gpu", "L4", "--fsdp-cpu-offload",
                               "--activation-offload"], None, 0),
    ("followed the model", ["size", "gpt2", "--mode", "infer", "--new-tokens", "64"], None, 0),
    ("fit", ["fit", "llama-3-8b"], None, 0),
    ("fit vllm", ["fit", "llama-3-8b", "--engine", "vllm", "--gpu", "L40S"], None, 0),
    ("vllm refuses", ["size", "llama-3-8b", "--engine", "vllm", "--gpu", "L4", "--max-model-len", "131072"], None, 0),
    ("preflight, co-tenants", ["preflight", "vllm", "llama-3-8b", "--max-model-len", "8192"], [SHARED], 1),
    ("preflight, idle", ["preflight", "vllm", "llama-3-8b"], [IDLE], 0),
    ("preflight, no GPU", ["preflight", "vllm", "llama-3-8b"], "no driver", 1),
    ("preflight in Slurm", ["preflight", "vllm", "llama-3-8b"], [IDLE], 0),
]  # fmt: skip
#: a Slurm job's variables, for the run that names them (the report's first line says what was checked)
SLURM = {"SLURM_JOB_ID": "4711", "SLURM_JOB_GPUS": "0", "CUDA_VISIBLE_DEVICES": "0"}


def _run(argv: list[str], gpus, lang: str = "en", slurm: bool = False) -> tuple[int, str]:
    pre = [] if lang == "en" else ["--lang", lang]
    env = SLURM if slurm else {k: None for k in SLURM}  # None: unset while the command runs
    if gpus is None:
        r = CliRunner().invoke(app, [*pre, *argv], env=env)
    else:
        with FakeNVML([DATACENTER] if gpus == "no driver" else gpus, driver=gpus != "no driver"):
            r = CliRunner().invoke(app, [*pre, *argv], env=env)
    assert "Traceback" not in r.output and r.output.strip(), r.output
    return r.exit_code, r.output


@pytest.mark.timeout(120)
@pytest.mark.parametrize("lang", ["nl", "de"])
def test_no_english_left(lang):
    found = []
    for name, argv, gpus, code in RUNS:
        got, out = _run(argv, gpus, lang, slurm="Slurm" in name)
        assert got == code, (name, out)
        found += [f"{name}: {line}" for line in english_left(out, lang)]
    assert not found, "English left:\n" + "\n".join(found)


@pytest.mark.timeout(120)
def test_the_detector_finds_english_in_every_english_run():
    for name, argv, gpus, code in RUNS:
        got, out = _run(argv, gpus, slurm="Slurm" in name)
        assert got == code, (name, out)
        assert english_left(out, "nl") and english_left(out, "de"), name


def _estimate(*args: str):
    import json as j

    code, out = _run(["size", *args, "--json"], None)
    assert code == 0
    return j.loads(out)


@pytest.mark.parametrize("lang", ["en", "nl", "de"])
def test_size_says_the_figures_in_the_language(lang):
    """The GPU count, the memory in GiB with the language's decimal mark and grouping, the budget, the
    headroom or what is missing, and a dollar figure: each formatted from the --json result."""
    tp2 = _estimate("llama-3-8b", "--mode", "infer", "--tp", "2", "--gpu", "H100-SXM")
    _, out = _run(["size", "llama-3-8b", "--mode", "infer", "--tp", "2", "--gpu", "H100-SXM"], None, lang)
    gpus = {"en": "GPUs in all: 2 ", "nl": "GPU's in totaal: 2 ", "de": "GPUs insgesamt: 2 "}[lang]
    assert gpus in out
    total = fmt_bytes(tp2["memory"]["total"], "GiB", lang=lang)
    assert f" {total}   " in out and fmt_bytes(tp2["fits"]["budget_bytes"], lang=lang) in out
    assert fmt_value(tp2["cost"]["decode_usd_per_mtok"], "$/Mtok", lang) in out
    big = _estimate("llama-3-70b", "--gpu", "L4")
    _, out = _run(["size", "llama-3-70b", "--gpu", "L4"], None, lang)
    short = fmt_bytes(-big["fits"]["headroom_bytes"], "GiB", lang=lang)
    assert short in out and ("," in short if lang == "en" else "." in short)  # 1,289.11 / 1.289,11
    verdict = {"en": "does NOT fit on one L4", "nl": "past NIET op één L4", "de": "passt NICHT auf eine L4"}
    assert verdict[lang] in out


@pytest.mark.parametrize("lang", ["en", "nl", "de"])
def test_fit_and_vllm_say_the_figures_in_the_language(lang):
    argv = ["fit", "llama-3-8b", "--engine", "vllm", "--gpu", "L40S"]
    doc = json.loads(_run([*argv, "--json"], None)[1])
    _, out = _run(argv, None, lang)
    kv = fmt_bytes(doc["vllm"]["available_kv_bytes"], lang=lang)
    mark = "." if lang == "en" else ","
    assert kv in out and mark in kv
    assert fmt_value(doc["max_context"], "tokens", lang) in out  # 8,192 / 8.192 tokens
    yes = {"en": "yes", "nl": "ja", "de": "ja"}[lang]
    assert any(line.split()[-1] == yes for line in out.splitlines() if line.strip())


@pytest.mark.timeout(60)
@pytest.mark.parametrize("lang", ["en", "nl", "de"])
def test_preflight_says_the_figures_in_the_language(lang):
    argv = ["preflight", "vllm", "llama-3-8b", "--max-model-len", "8192"]
    _, raw = _run([*argv, "--json"], [SHARED])
    doc = json.loads(raw)
    code, out = _run(argv, [SHARED], lang)
    assert code == doc["exit_code"] == 1
    from aiworkbook.i18n_format import fixed, integer

    at_max = doc["at_max_utilization"]
    assert fixed(doc["max_utilization"], 2, lang, group=False) + " -> " in out
    assert integer(at_max["kv_cache_tokens"], lang) in out
    assert fmt_bytes(doc["devices"][0]["free_bytes"], lang=lang) in out
