"""vLLM's start-up arithmetic against start-up logs users published (tests/data/vllm_startup_cases.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aiworkbook.errors import SpecError
from aiworkbook.sizing.vllm import (
    ENGINES,
    VllmSettings,
    kv_from_available,
    one_request_bytes,
    startup,
    weight_bytes,
)
from aiworkbook.specs import get_gpu, load_model, spec_from_config

GiB = 1 << 30
DATA = Path(__file__).parent / "data"
#: torch 2.10's default cuBLAS workspace (vLLM 0.19's pin): :4096:8 on Hopper, :4096:2:16:8 elsewhere
CUBLAS_HOPPER, CUBLAS_OTHER = 4096 * 1024 * 8, 4096 * 1024 * 2 + 16 * 1024 * 8
CASES = json.loads((DATA / "vllm_startup_cases.json").read_text())["cases"]
ITEMS = {  # logged key -> (startup attribute, scale)
    "weights_gib": ("weights_bytes", GiB),
    "activation_gib": ("activation_peak_bytes", GiB),
    "available_kv_gib": ("available_kv_bytes", GiB),
    "num_blocks": ("num_blocks", 1),
    "kv_cache_tokens": ("kv_cache_tokens", 1),
    "max_concurrency": ("max_concurrency", 1),
}


def _model(case: dict):
    """A preset, or a published config.json kept with the test data (a model no preset ships)."""
    if "config" in case:
        return spec_from_config(json.loads((DATA / case["config"]).read_text()), name=case["config"])
    return load_model(case["model"])


def predict(case: dict) -> dict[str, float]:
    """Every logged figure the model predicts, for one case (the case's measured non-torch memory used
    where it was logged: it is what the CUDA libraries took on that machine, not a model output)."""
    spec = _model(case)
    gpu = get_gpu(case.get("gpu", "H100-SXM"))  # a KV-only case may not name its GPU: it is not used
    if case.get("total_gib"):
        gpu = gpu.model_copy(update={"cuda_memory_bytes": int(case["total_gib"] * GiB)})
    logged = case["logged"]
    nt = int(logged["non_torch_gib"] * GiB) if "non_torch_gib" in logged else None
    s = VllmSettings(engine=case["engine"], non_torch_bytes=nt, **case["settings"])
    if case.get("kv_only"):  # the KV arithmetic from the logged available memory
        max_len = s.max_model_len or spec.max_position_embeddings
        kv = kv_from_available(
            spec, s, int(logged["available_kv_gib"] * GiB), max_len, s.max_num_batched_tokens or 8192
        )
        got = {k: kv[k] for k in ("num_blocks", "kv_cache_tokens", "max_concurrency") if k in logged}
        if "weights_gib" in logged:  # the weights do not depend on the GPU the case leaves unnamed
            got["weights_gib"] = weight_bytes(spec, s) / GiB
        return got
    r = startup(spec, gpu, s)
    return {k: getattr(r, attr) / scale for k, (attr, scale) in ITEMS.items() if k in logged}


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_published_startup_within_3_percent(case):
    got = predict(case)
    checked = case.get("checked", list(got))
    outside = case.get("outside", [])
    assert checked or (outside and case.get("not_modelled")), "a case checks a figure or says why not"
    for key in checked:
        value = got[key]
        want = case["logged"][key]
        assert value == pytest.approx(want, rel=0.03), (key, value, want)
    for key in outside:  # a 'not modelled' label stays true: promote the case once it is within 3 %
        assert got[key] != pytest.approx(case["logged"][key], rel=0.03), (key, got[key])


def test_cases_cite_source_and_version():
    for c in CASES:
        assert c["source"].startswith("https://") and c["vllm_version"] and c["engine"] in ENGINES


def test_tp_replicates_kv_heads_and_mla_is_not_split():
    gpu = get_gpu("H100-SXM")
    llama = load_model("llama-3-8b")  # 8 KV heads
    p = {
        tp: kv_from_available(llama, VllmSettings(tensor_parallel_size=tp), 8 * GiB, 8192, 8192)
        for tp in (1, 8, 16)
    }
    assert p[8]["page_bytes"] * 8 == p[1]["page_bytes"]  # one head per rank
    assert p[16]["page_bytes"] == p[8]["page_bytes"]  # fewer heads than ranks: replicated, not halved
    ds = load_model("deepseek-v2-lite")  # MLA: one latent of 512 + 64 per token and layer
    one = kv_from_available(ds, VllmSettings(), GiB, 4096, 8192)
    four = kv_from_available(ds, VllmSettings(tensor_parallel_size=4), GiB, 4096, 8192)
    assert one["page_bytes"] == four["page_bytes"] == 16 * 576 * 2
    assert startup(ds, gpu).kv_cache_tokens > 0


def test_whole_blocks_and_pipeline_splits_layers():
    spec = load_model("llama-3-8b")
    page_all_layers = 16 * 8 * 128 * 2 * 2 * 32
    kv = kv_from_available(spec, VllmSettings(), 10 * page_all_layers + page_all_layers // 2, 8192, 8192)
    assert kv["num_blocks"] == 10 and kv["kv_cache_tokens"] == 160
    pp2 = kv_from_available(spec, VllmSettings(pipeline_parallel_size=2), 10 * page_all_layers, 8192, 8192)
    assert pp2["num_blocks"] == 20  # each stage holds 16 of the 32 layers


def test_hybrid_allocator_groups_gemma3():
    spec = load_model("gemma-3-27b-it")  # 52 sliding (window 1024) + 10 full layers
    s = VllmSettings(max_model_len=32768, max_num_batched_tokens=8192)
    kv = kv_from_available(spec, s, 40 * GiB, 32768, 8192)
    assert kv["group_size"] == 10 and kv["kv_groups"] == 6 + 1
    page = 16 * 16 * 128 * 2 * 2
    assert kv["num_blocks"] == 40 * GiB // page // 10
    assert kv["kv_cache_tokens"] == kv["num_blocks"] // 7 * 16
    sliding_blocks = -(-min(1024 - 1 + 8192, 32768) // 16) + 1
    assert kv["max_concurrency"] == pytest.approx(kv["num_blocks"] / (6 * sliding_blocks + 32768 // 16))


def test_multimodal_weights_include_the_vision_tower():
    from dataclasses import replace

    spec = load_model("gemma-3-27b-it")  # SigLIP tower + projector: 423,060,336 params
    text = replace(spec, vision_params=0)
    for tp in (1, 2):
        s = VllmSettings(tensor_parallel_size=tp)
        extra = weight_bytes(spec, s) - weight_bytes(text, s)
        assert abs(extra - spec.vision_params * 2 // tp) <= 1  # bf16, split like the language model
    pp2 = VllmSettings(pipeline_parallel_size=2)  # the first stage holds the embedding and the tower
    assert weight_bytes(spec, pp2) - weight_bytes(text, pp2) == spec.vision_params * 2


def test_gemma3_keeps_a_local_and_a_linear_scaled_global_rotary_table():
    from dataclasses import replace

    spec = load_model("gemma-3-27b-it")  # rope_scaling linear x 8, 131,072 positions, head_dim 128
    assert spec.rope_table_positions == (131072, 8 * 131072)
    one_table = replace(spec, rope_table_positions=())
    s = VllmSettings()
    assert weight_bytes(spec, s) - weight_bytes(one_table, s) == 8 * 131072 * 128 * 2
    assert load_model("gemma-3-1b-it").rope_table_positions == (32768, 32768)  # no scaling: 2 alike
    assert getattr(load_model("llama-3-8b"), "rope_table_positions", ()) == ()  # one table
    cfg = json.loads((Path(__file__).parents[1] / "data/models/gemma-3-1b-it/config.json").read_text())
    with pytest.raises(SpecError, match="rope_scaling"):
        spec_from_config({**cfg, "rope_scaling": {"rope_type": "linear", "factor": "eight"}})


def test_wrapper_head_tied_as_its_text_config_says():
    from dataclasses import replace

    # transformers' Mistral3 wrapper ties; vLLM builds the language model from text_config (mistral:
    # untied by default) and loads a separate head of vocab x hidden
    mistral = load_model("mistral-small-3.1-24b")
    assert mistral.tie_word_embeddings and mistral.text_tie_word_embeddings is False
    s = VllmSettings()
    wrapper_tied = replace(mistral, text_tie_word_embeddings=None)
    assert weight_bytes(mistral, s) - weight_bytes(wrapper_tied, s) == 131072 * 5120 * 2
    gemma = load_model("gemma-3-27b-it")  # gemma3_text ties as its wrapper does: nothing changes
    assert gemma.text_tie_word_embeddings is True
    assert weight_bytes(gemma, s) == weight_bytes(replace(gemma, text_tie_word_embeddings=None), s)
    assert load_model("gemma-3-1b-it").text_tie_word_embeddings is None  # not a wrapper


def test_profile_peak_is_forward_or_sampler_whichever_larger():
    gpu = get_gpu("H100-SXM")
    spec = load_model("llama-3-8b")
    few = startup(spec, gpu, VllmSettings(engine="v1", max_num_seqs=8, max_num_batched_tokens=16384))
    many = startup(spec, gpu, VllmSettings(engine="v1", max_num_seqs=1024, max_num_batched_tokens=2048))
    assert few.activation_peak_bytes == 16384 * (3 * 14336 + 3 * 4096) * 2
    assert many.activation_peak_bytes == 1024 * 128256 * 28 + 2048 * 4096 * 2


@pytest.mark.parametrize(
    "field,value",
    [
        ("gpu_memory_utilization", 1.5),
        ("tensor_parallel_size", 0),
        ("block_size", 0),
        ("max_model_len", -1),
        ("kv_cache_dtype", "int3"),
        ("engine", "v9"),
    ],
)
def test_bad_flags_are_spec_errors(field, value):
    with pytest.raises(SpecError, match=field if field != "engine" else "engine_version"):
        startup(load_model("llama-3-8b"), get_gpu("H100-SXM"), VllmSettings(**{field: value}))


def test_encoder_refused():
    with pytest.raises(SpecError, match="decoder"):
        startup(load_model("bert-base-uncased"), get_gpu("H100-SXM"))


def test_cli_fit_and_size_take_vllm_flags(capsys):
    from aiworkbook.cli import main

    rc = main(
        [
            "fit",
            "llama-3.1-8b",
            "--mode",
            "infer",
            "--engine",
            "vllm",
            "--gpu",
            "RTX-3090",
            "--engine-version",
            "v0",
            "--max-model-len",
            "20000",
            "--json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["kv_cache_tokens"] == out["vllm"]["kv_cache_tokens"] > 0
    assert {"kv_cache_bytes", "max_concurrency", "max_context", "max_batch"} <= set(out)
    assert {"weights_bytes", "activation_peak_bytes", "non_torch_bytes"} <= set(out["vllm"])
    rc = main(
        [
            "size",
            "gpt-oss-20b",
            "--mode",
            "infer",
            "--engine",
            "vllm",
            "--gpu",
            "H100-SXM",
            "--tensor-parallel-size",
            "2",
            "--max-model-len",
            "32768",
            "--kv-cache-dtype",
            "fp8",
            "--json",
        ]
    )
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0 and doc["vllm"]["kv_groups"] == 2 and doc["memory"]  # existing keys stay
    rc = main(["fit", "llama-3-8b", "--mode", "infer", "--engine", "vllm", "--gpu-memory-utilization", "2"])
    assert rc == 2 and "'--gpu-memory-utilization'" in capsys.readouterr().err  # as typed


def test_engine_version_sets_default_utilization():
    spec, gpu = load_model("llama-3-8b"), get_gpu("H100-SXM")
    total = gpu.cuda_memory_bytes
    assert startup(spec, gpu, VllmSettings(engine="v1")).requested_bytes == int(total * 0.9)
    assert startup(spec, gpu, VllmSettings(engine="v1-092")).requested_bytes == int(total * 0.92)
    given = VllmSettings(engine="v1-092", gpu_memory_utilization=0.5)
    assert startup(spec, gpu, given).requested_bytes == int(total * 0.5)
    # the V1 generation's profile and defaults apply to both V1 versions
    a, b = startup(spec, gpu, VllmSettings(engine="v1")), startup(spec, gpu, VllmSettings(engine="v1-092"))
    assert (
        (a.activation_peak_bytes, a.max_num_seqs)
        == (b.activation_peak_bytes, b.max_num_seqs)
        == (
            a.activation_peak_bytes,
            1024,
        )
    )


def test_fit_json_keeps_both_concurrency_figures(capsys):
    from aiworkbook.cli import main

    args = ["fit", "llama-3-8b", "--mode", "infer", "--engine", "vllm", "--gpu", "H100-SXM", "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["max_concurrency"] == out["vllm_max_concurrency"] == out["vllm"]["max_concurrency"]
    assert isinstance(out["workbook_max_concurrency"], int) and out["workbook_max_concurrency"] > 0
    assert main(args[:-1] + ["--engine-version", "v1-092", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["vllm"]["requested_bytes"] > out["vllm"]["requested_bytes"]  # 0.92 of the total, not 0.9


def test_catalogue_cuda_visible_memory_and_fallback():
    from aiworkbook.sizing.vllm import cuda_total_bytes
    from aiworkbook.specs import list_gpus

    gpus = {g.name: g for g in list_gpus()}
    for name in (
        "RTX-3090",
        "RTX-4090",
        "RTX-5090",
        "L4",
        "A10G",
        "L40S",
        "RTX-6000-Ada",
        "H200-SXM",
        "B200",
        "GB200",
    ):
        assert name in gpus, name
    for g in gpus.values():
        if (
            g.cuda_memory_bytes is not None
        ):  # CUDA sees less than the driver's total (its context, reservations)
            assert g.cuda_memory_bytes < g.usable_memory_bytes and "CUDA-visible" in g.source, g.name
            assert cuda_total_bytes(g) == g.cuda_memory_bytes
        else:  # none recorded: say why, and vLLM's total falls back to the driver total (an overstatement)
            why = ("no public figure", "not recorded")
            assert any(w in g.source for w in why) and cuda_total_bytes(g) == g.usable_memory_bytes, g.name
    for name in ("A10G", "RTX-6000-Ada"):
        assert "no public figure" in gpus[name].source and "nvidia" in gpus[name].source.lower()
    # GB200: torch's total was found, but it exceeds the marketed stand-in the catalogue keeps as usable
    assert "not recorded" in gpus["GB200"].source and "184.31 GiB" in gpus["GB200"].source
    assert 184.31 * GiB > gpus["GB200"].usable_memory_bytes


def test_current_engine_reports_group_aware_tokens():
    spec = load_model("gemma-3-27b-it")  # hybrid: the two ways of reporting "GPU KV cache size" differ
    old = kv_from_available(spec, VllmSettings(), 40 * GiB, 32768, 8192)
    new = kv_from_available(spec, VllmSettings(engine="v1-092"), 40 * GiB, 32768, 8192)
    assert new["num_blocks"] == old["num_blocks"] and new["max_concurrency"] == old["max_concurrency"]
    assert old["kv_cache_tokens"] == old["num_blocks"] // 7 * 16
    assert new["kv_cache_tokens"] == int(new["max_concurrency"] * 32768) > old["kv_cache_tokens"]


def test_batch_defaults_by_usage_context_and_gpu():
    spec = load_model("llama-3-8b")
    h100, a100 = get_gpu("H100-SXM"), get_gpu("A100-40GB")
    got = {
        (g.name, u): (r.max_num_seqs, r.max_num_batched_tokens)
        for g in (h100, a100)
        for u in ("serve", "llm")
        for r in [startup(spec, g, VllmSettings(usage=u))]
    }
    assert got == {
        ("H100-SXM", "serve"): (1024, 8192),
        ("H100-SXM", "llm"): (1024, 16384),
        ("A100-40GB", "serve"): (256, 2048),
        ("A100-40GB", "llm"): (256, 8192),
    }
    with pytest.raises(SpecError, match="usage"):
        startup(spec, h100, VllmSettings(usage="batch"))


def test_case_error_table_meets_the_goal(capsys):
    """Every checked figure of every case beside its log (the table prints with -s), and issue 23's goal
    over them: each within 6 %, the median within 2 % (the per-case test holds each to 3 %)."""
    rows = []
    for case in CASES:
        got = predict(case)
        for key in case.get("checked", list(got)):
            want = case["logged"][key]
            rows.append((case["id"], case["engine"], key, want, got[key], 100 * (got[key] - want) / want))
    with capsys.disabled():
        print(f"\n{'case':58s} {'engine':7s} {'figure':17s} {'logged':>12s} {'model':>12s} {'error':>8s}")
        for cid, eng, key, want, value, err in rows:
            print(f"{cid:58s} {eng:7s} {key:17s} {want:12.2f} {value:12.2f} {err:+7.2f}%")
    errors = sorted(abs(r[-1]) for r in rows)
    assert errors and errors[-1] <= 6.0, rows
    assert errors[len(errors) // 2] <= 2.0, errors


def test_v019_sampler_is_sort_free():
    """vLLM 0.19 masks top-k/top-p in place (Triton kernel, no sort): 14 B per logit at the dummy
    sampler's peak where the sort-based V1 sampler keeps 28 B alive."""
    spec, gpu = load_model("llama-3-8b"), get_gpu("H100-SXM")
    old = startup(spec, gpu, VllmSettings(engine="v1", max_model_len=8192))
    new = startup(spec, gpu, VllmSettings(max_model_len=8192, engine="v1-019"))
    buffer = 132 * 128256 * 4  # the Triton kernel's cached [SMs x vocab] fp32 scratch (H100 SXM: 132 SMs)
    held = 2 * 1024 * 4096 * 2 + CUBLAS_HOPPER  # the sampled rows and their rand_like; cuBLAS workspace
    assert new.activation_peak_bytes == 1024 * 128256 * 14 + 8192 * 4096 * 2 + buffer + held
    assert old.activation_peak_bytes == 1024 * 128256 * 28 + 8192 * 4096 * 2
    assert "·14 +" in new.formulas["activation_peak"]
    # below the forward's MLP set the forward decides, whichever sampler the release runs
    few = VllmSettings(max_num_seqs=8, max_num_batched_tokens=16384, engine="v1-019")
    fwd = 16384 * (3 * 14336 + 3 * 4096) * 2
    assert startup(spec, gpu, few).activation_peak_bytes == fwd + CUBLAS_HOPPER


def test_v019_moe_workspace_outlives_the_forward():
    """0.19's fused MoE takes its scratch from the worker's WorkspaceManager, which never frees it: the
    dummy sampler runs on top of it. Qwen3-30B-A3B (8 of 128 experts, intermediate 768, hidden 2048)."""
    from aiworkbook.sizing.vllm import moe_workspace_bytes

    spec, gpu = load_model("qwen3-30b-a3b"), get_gpu("H100-SXM")
    s = VllmSettings(max_model_len=8192, engine="v1-019")
    ws = moe_workspace_bytes(spec, s, 8192)
    assert ws == 8192 * 8 * (max(768, 2048) + max(1536, 2048)) * 2  # 512 MiB
    r = startup(spec, gpu, s)
    rows = 2 * 1024 * 2048 * 2  # the sampled rows and their rand_like
    assert r.activation_peak_bytes == (
        1024 * 151936 * 14 + 8192 * 2048 * 2 + ws + 132 * 151936 * 4 + rows + CUBLAS_HOPPER
    )
    assert "fused-MoE workspace" in r.formulas["activation_peak"]
    assert moe_workspace_bytes(load_model("llama-3-8b"), s, 8192) == 0
    tp2 = VllmSettings(tensor_parallel_size=2, engine="v1-019")  # N = 2 x 768 / 2: K decides both
    assert moe_workspace_bytes(spec, tp2, 8192) == ws
    assert moe_workspace_bytes(spec, s, 65536) == ws * 2  # one chunk of 16,384 tokens at a time
    v1 = startup(
        spec, gpu, VllmSettings(engine="v1", max_model_len=8192)
    )  # up to 0.1x: scratch freed after the forward
    assert v1.activation_peak_bytes == 1024 * 151936 * 28 + 8192 * 2048 * 2


def test_v019_tensor_parallel_buffers():
    """0.19 on H100: 0.24 GiB outside torch alone, 2.1 GiB at tp 2 and 4; the other releases keep theirs.
    Mixtral 8x7B at tp 2: under v1 its peak is the forward (32,000-token vocabulary); under v1-019 the
    sampler over the persistent MoE scratch, a little larger."""
    gpu = get_gpu("H100-SXM")
    llama = load_model("llama-3-8b")
    nt = {
        (eng, tp): startup(llama, gpu, VllmSettings(engine=eng, tensor_parallel_size=tp)).non_torch_bytes
        for eng in ("v1", "v1-019")
        for tp in (1, 2, 4)
    }
    assert nt[("v1-019", 1)] == int(0.24 * GiB) and nt[("v1-019", 2)] == nt[("v1-019", 4)] == int(2.1 * GiB)
    assert nt[("v1", 1)] == int(0.25 * GiB) and nt[("v1", 2)] == int(0.55 * GiB)
    mixtral = load_model("mixtral-8x7b")
    a = startup(mixtral, gpu, VllmSettings(engine="v1", max_model_len=8192, tensor_parallel_size=2))
    b = startup(mixtral, gpu, VllmSettings(max_model_len=8192, tensor_parallel_size=2, engine="v1-019"))
    peak_v019 = 1024 * 32000 * 14 + 8192 * 4096 * 2 + 8192 * 2 * (7168 + 14336) * 2 + 132 * 32000 * 4
    peak_v019 += 2 * 1024 * 4096 * 2 + CUBLAS_HOPPER
    assert b.activation_peak_bytes == peak_v019 > a.activation_peak_bytes
    extra = int(2.1 * GiB) - int(0.55 * GiB) + peak_v019 - a.activation_peak_bytes
    assert a.available_kv_bytes - b.available_kv_bytes == extra
    assert b.kv_cache_tokens < a.kv_cache_tokens


def test_v019_reports_blocks_per_group_like_v1():
    """vLLM 0.19.0 still prints blocks // groups x block for hybrid models (vllm-project/vllm#40691)."""
    spec = load_model("gemma-3-27b-it")
    v1 = kv_from_available(spec, VllmSettings(), 40 * GiB, 32768, 8192)
    v019 = kv_from_available(spec, VllmSettings(engine="v1-019"), 40 * GiB, 32768, 8192)
    assert v019 == v1 and v019["kv_cache_tokens"] == v019["num_blocks"] // 7 * 16


def test_cli_engine_version_v019(capsys):
    from aiworkbook.cli import main

    args = ["fit", "llama-3-8b", "--engine", "vllm", "--gpu", "H100-SXM", "--max-model-len", "8192"]
    assert main([*args, "--tensor-parallel-size", "2", "--engine-version", "v1-019", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["vllm"]["non_torch_bytes"] == int(2.1 * GiB) and doc["vllm"]["requested_bytes"] > 0
    assert main([*args, "--engine-version", "v9"]) == 2
    assert "'--engine-version'" in capsys.readouterr().err  # the option as typed


def test_v019_topk_topp_buffer_follows_the_sm_count():
    """apply_top_k_top_p_triton caches an fp32 [min(next_pow2(min(SMs, rows)), SMs) x vocab] buffer on
    its first call, the profile's dummy sampler; rows below 8 take the PyTorch path (no buffer)."""
    from aiworkbook.sizing.vllm import topk_topp_buffer_rows

    assert topk_topp_buffer_rows(1024, 132) == 132  # H100 SXM
    assert topk_topp_buffer_rows(100, 132) == 128  # next power of two of 100, under the SM count
    assert topk_topp_buffer_rows(100, 108) == 108  # A100: capped at the SM count
    assert topk_topp_buffer_rows(7, 132) == 0 and topk_topp_buffer_rows(1024, 0) == 0
    spec = load_model("llama-3-8b")
    s = VllmSettings(max_model_len=8192, engine="v1-019", max_num_seqs=1024, max_num_batched_tokens=8192)
    h100, a100 = get_gpu("H100-SXM"), get_gpu("A100-SXM-80GB")
    assert h100.sm_count == 132 and a100.sm_count == 108
    diff = startup(spec, h100, s).activation_peak_bytes - startup(spec, a100, s).activation_peak_bytes
    assert diff == (132 - 108) * 128256 * 4 + CUBLAS_HOPPER - CUBLAS_OTHER  # and the cuBLAS workspace
    unknown = startup(spec, get_gpu("B200"), s)  # no SM count recorded: the formula says so
    assert "not counted" in unknown.formulas["activation_peak"]
    rows = 2 * 1024 * 4096 * 2
    assert unknown.activation_peak_bytes == 1024 * 128256 * 14 + 8192 * 4096 * 2 + rows + CUBLAS_OTHER


def test_v019_gemma3_dummy_images_outlive_the_encoder():
    """Gemma 3's profile keeps its dummy images (bf16 pixels) and their projected embeddings through the
    decoder's dummy forward and the sampler: 32 images of 3 x 896^2 and 256 x hidden at 8,192 batched
    tokens (encoder budget 8,192 // 256), fewer when max_num_seqs x images per prompt is smaller."""
    from dataclasses import replace

    from aiworkbook.sizing.vllm import mm_dummy_batch_bytes

    spec, gpu = load_model("gemma-3-27b-it"), get_gpu("H100-SXM")
    assert spec.mm_dummy_image == (3, 896, 256)
    s = VllmSettings(max_model_len=8192, engine="v1-019")
    held, txt = mm_dummy_batch_bytes(spec, s, 1024, 8192, 8192)
    assert held == 32 * (3 * 896 * 896 + 256 * 5376) * 2 and "32 dummy images" in txt
    assert mm_dummy_batch_bytes(spec, s, 2, 8192, 512)[0] == 4 * (3 * 896 * 896 + 256 * 5376) * 2
    text_only = replace(spec, mm_dummy_image=())
    with_images, without = startup(spec, gpu, s), startup(text_only, gpu, s)
    assert with_images.activation_peak_bytes - without.activation_peak_bytes == held
    assert mm_dummy_batch_bytes(load_model("gemma-3-1b-it"), s, 1024, 8192, 8192) == (0, "")
    v1 = VllmSettings(engine="v1", max_model_len=8192)  # other releases keep their profile
    assert startup(spec, gpu, v1).activation_peak_bytes == startup(text_only, gpu, v1).activation_peak_bytes


def test_issue23_gemma_configs_are_hybrid_as_vllm_groups_them():
    """The two published Gemma configs tools/vllm_issue23_runs.py sizes: Gemma 2 27B alternates 23
    sliding (4,096) and 23 full layers (two groups of 23); Gemma 3 12B has 40 sliding (1,024) and 8 full
    (groups of 8: 5 + 1), and the multimodal wrapper's dummy image."""
    g2 = _model({"config": "configs/gemma-2-27b-it.json"})
    g3 = _model({"config": "configs/gemma-3-12b-it.json"})
    s = VllmSettings(max_model_len=8192, engine="v1-019")
    kv2 = kv_from_available(g2, s, 16 * GiB, 8192, 8192)
    kv3 = kv_from_available(g3, s, 16 * GiB, 8192, 8192)
    assert (kv2["group_size"], kv2["kv_groups"], kv2["page_bytes"]) == (23, 2, 16 * 16 * 128 * 2 * 2)
    assert (kv3["group_size"], kv3["kv_groups"], kv3["page_bytes"]) == (8, 6, 16 * 8 * 256 * 2 * 2)
    assert g3.mm_dummy_image == (3, 896, 256) and getattr(g2, "mm_dummy_image", ()) == ()
    assert g2.vocab_size == 256000 and g3.vocab_size == 262208


def test_a_published_refusal_to_start_is_predicted_with_vllms_longest_length():
    """vllm#13061: DeepSeek-R1-Distill-Qwen-14B on two RTX 4090s at max_model_len 131,072 did not start
    ("larger than the maximum number of tokens that can be stored in KV cache (81536)"). The model says it
    does not start and gives the longest request that fits, within the case's 3 %; the same GPUs at
    max_model_len 32,768 start."""
    case = next(c for c in CASES if c["id"] == "v0-2x4090-r1-distill-qwen14b-tp2")
    spec, gpu = _model(case), get_gpu(case["gpu"])
    gpu = gpu.model_copy(update={"cuda_memory_bytes": int(case["total_gib"] * GiB)})
    nt = int(case["logged"]["non_torch_gib"] * GiB)
    r = startup(spec, gpu, VllmSettings(engine="v0", non_torch_bytes=nt, **case["settings"]))
    assert not r.starts and r.one_request_kv_bytes > r.available_kv_bytes > 0
    longest = int(r.refusal.split("estimated maximum model length is ")[1].split(":")[0].replace(",", ""))
    assert longest == pytest.approx(case["logged"]["kv_cache_tokens"], rel=0.03)
    assert longest == r.kv_cache_tokens  # full attention: the blocks the pool holds, one request
    shorter = dict(case["settings"], max_model_len=32768)
    ok = startup(spec, gpu, VllmSettings(engine="v0", non_torch_bytes=nt, **shorter))
    assert ok.starts and ok.refusal is None


def test_no_memory_left_is_vllms_first_refusal():
    spec = spec_from_config(json.loads((DATA / "configs" / "qwen2.5-72b-instruct.json").read_text()))
    s = VllmSettings(engine="v1-019", tensor_parallel_size=2, max_model_len=8192)
    r = startup(spec, get_gpu("H100-SXM"), s)
    assert r.available_kv_bytes <= 0 and not r.starts and r.refusal.startswith("no available memory")


def test_a_sliding_window_layer_needs_its_window_not_the_request():
    """Gemma 3's local layers hold window - 1 + batched tokens of a request (vLLM's max_memory_usage)."""
    spec = load_model("gemma-3-27b-it")
    s = VllmSettings(engine="v1-019", max_model_len=131072)
    full = VllmSettings(engine="v0", max_model_len=131072)  # v0: every layer holds the whole request
    assert one_request_bytes(spec, s, 131072, 8192) < one_request_bytes(spec, full, 131072, 8192) / 3


def test_pipeline_stages_split_layers_as_vllm_does():
    """get_pp_indices: an even share each, the remainder to the stages before the last (vLLM's own
    examples: 61 layers at pp 2 and 4)."""
    from aiworkbook.sizing.vllm import pp_partition

    assert pp_partition(61, 2) == [31, 30] and pp_partition(61, 4) == [15, 15, 16, 15]
    assert (
        pp_partition(80, 4) == [20] * 4 and pp_partition(4, 3) == [1, 2, 1] and pp_partition(3, 2) == [2, 1]
    )


def test_pipeline_stages_profile_and_size_their_own_blocks():
    """Each pipeline stage's worker profiles its own weights and peak: the first holds the embedding and no
    sampler, later stages keep [max_num_batched_tokens x hidden] x 2 receive buffers (hidden states and
    residual) under their peak, the last runs the dummy sampler; the engine keeps the fewest blocks."""
    from aiworkbook.sizing.vllm import profile_peak_bytes

    spec = spec_from_config(json.loads((DATA / "configs" / "qwen2.5-72b-instruct.json").read_text()))
    gpu = get_gpu("H100-SXM")
    s = VllmSettings(
        engine="v1-019", pipeline_parallel_size=2, max_model_len=8192, gpu_memory_utilization=0.95
    )
    one = VllmSettings(engine="v1-019", max_model_len=8192, gpu_memory_utilization=0.95)
    h = spec.hidden_size
    kw = {"sm_count": 132, "compute_capability": gpu.compute_capability}
    sampler = profile_peak_bytes(spec, one, 1024, 8192, **kw)[0]
    received = 2 * 8192 * h * 2
    first, first_txt = profile_peak_bytes(spec, s, 1024, 8192, stage=0, **kw)
    last, _ = profile_peak_bytes(spec, s, 1024, 8192, stage=1, **kw)
    fwd = 8192 * (3 * spec.intermediate_size + 3 * h) * 2
    assert first == fwd + CUBLAS_HOPPER and "no sampler" in first_txt
    assert last == sampler + received
    w0, w1 = weight_bytes(spec, s, 0), weight_bytes(spec, s, 1)
    assert w0 == w1 == weight_bytes(spec, s)  # untied: embedding and head are the same size
    rope = spec.max_position_embeddings * spec.head_dim * 2
    assert w0 + w1 == pytest.approx(
        weight_bytes(spec, one) + rope, abs=2
    )  # every rank holds the rotary table
    r = startup(spec, gpu, s)
    per_stage = []
    for stage, peak in ((0, first), (1, last)):
        avail = r.requested_bytes - weight_bytes(spec, s, stage) - peak - r.non_torch_bytes
        per_stage.append(kv_from_available(spec, s, avail, 8192, 8192, 40)["num_blocks"])
    assert r.num_blocks == min(per_stage) == per_stage[1] < per_stage[0]
    assert r.activation_peak_bytes == last and "stage 2 of 2" in r.formulas["activation_peak"]


def test_a_pipeline_stage_that_is_not_the_last_can_bound_the_blocks():
    """Gemma 3 27B at pp 2: the first stage holds the 262,208 x 5,376 embedding and the SigLIP tower, the
    last the tied head (its own copy) and the sampler; whichever leaves fewer blocks is reported."""
    spec, gpu = load_model("gemma-3-27b-it"), get_gpu("H100-SXM")
    s = VllmSettings(engine="v1-019", pipeline_parallel_size=2, max_model_len=8192, max_num_seqs=8)
    assert weight_bytes(spec, s, 0) - weight_bytes(spec, s, 1) == spec.vision_params * 2
    r = startup(spec, gpu, s)  # 8 sequences: the sampler is small, the tower decides
    assert r.weights_bytes == weight_bytes(spec, s, 0) and "stage 1 of 2" in r.formulas["activation_peak"]
