"""Fine-tuning set-ups real recipes use: torch.compile, LoRA targets (all-linear), chunked loss, optimizer
step in backward, activation offloading, FSDP CPU offload, 8-bit (paged) AdamW, frozen base weights;
each option's mechanism, then published peak-memory rows of fine-tuning libraries within +/-10 %."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aiworkbook.cli import main
from aiworkbook.errors import SpecError
from aiworkbook.sizing import Workload, estimate, optimizer_step
from aiworkbook.sizing import activations as act
from aiworkbook.sizing.memory import memory_breakdown
from aiworkbook.sizing.states import lora_params, model_states
from aiworkbook.specs import load_model
from aiworkbook.units import GiB

L8 = load_model("llama-3.1-8b")
GPT2 = load_model("gpt2")
DATA = Path(__file__).parent / "data"
CASES = json.loads((DATA / "finetune_memory_cases.json").read_text())
TRAIN = Workload(mode="train", batch=2, seq_len=2048, precision="bf16", recipe="pure-bf16")


def test_compile_drops_the_fused_chains_intermediates_from_the_layers_saved_list():
    h, i = L8.hidden_size, L8.intermediate_size
    eager, fused = act.terms(L8, TRAIN), act.terms(L8, TRAIN.replace(compile=True))
    # RMSNorm's fp32 copy of its input (4h) goes, twice a layer; SwiGLU's act(gate) (2·I) goes
    assert eager.per_token_layer - fused.per_token_layer == 2 * 4 * h + 2 * i
    # what SDPA reads (q, k, v, output, lse) is untouched
    assert "(compiled)" in fused.parts
    # GPT-2's gelu_new keeps its c_fc output and the activation c_proj reads: 5·I·e -> 2·I·e
    g = TRAIN.replace(dropout=0.0)
    assert (
        act.terms(GPT2, g).per_token_layer - act.terms(GPT2, g.replace(compile=True)).per_token_layer
        == 3 * GPT2.intermediate_size * 2
    )


def test_all_linear_adapts_every_block_linear_not_the_head():
    lora = Workload(mode="lora", lora_rank=8)
    every = lora.replace(lora_targets="all-linear")
    assert every.lora_targets == ("all-linear",)
    assert every.lora_modules(L8) == (
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
        "gate_proj",
        "up_proj",
        "down_proj",
    )
    h, i = L8.hidden_size, L8.intermediate_size
    mlp = 8 * (3 * (h + i)) * L8.num_layers  # gate, up, down adapters
    assert lora_params(L8, every) - lora_params(L8, lora) == mlp
    assert "gate_proj" not in every.lora_modules(GPT2)  # no gate in a GELU MLP
    assert lora_params(L8, lora.replace(lora_targets=["q_proj", "v_proj"])) == 8 * L8.num_layers * (
        (h + h) + (h + 1024)
    )
    with pytest.raises(SpecError, match="lora_targets"):
        Workload(mode="lora", lora_targets=("all-linear", "q_proj"))
    with pytest.raises(SpecError, match="lora_targets"):
        Workload(mode="lora", lora_targets=("lm_head",))


def test_frozen_base_keeps_no_gradient_or_optimizer_state():
    for mode in ("lora", "qlora"):
        w = TRAIN.replace(mode=mode, lora_targets="all-linear")
        st = model_states(L8, w)
        n = lora_params(L8, w)
        assert st.trainable == n and st.gradients == 2 * n and st.optimizer == 4 * n
        assert "frozen base: no gradients" in st.formulas["gradients"]
        assert st.weights > L8.params // 4  # the base is there, as weights only


def test_loss_chunks_keep_one_chunks_fp32_transient():
    n, V = 2 * 2048, L8.vocab_size
    plain = TRAIN
    eager8 = TRAIN.replace(loss_chunks=8)
    assert act.loss_transient_bytes(L8, plain, 2, 2048) == 2 * 4 * n * V
    # eager: every chunk's fp32 log-probs are still saved; the 16-bit chunks beside them are the transient
    assert act.logits_bytes(L8, eager8, 2, 2048) == act.logits_bytes(L8, plain, 2, 2048)
    assert act.loss_transient_bytes(L8, eager8, 2, 2048) == max(2 * n * V, 2 * 4 * n * V // 8)
    # compiled: the up-cast is recomputed per chunk, the 16-bit logits are kept, one chunk's 16-bit grad
    # is live (the fused backward casts as it writes); unchunked, the compiled loss reads fp32 logits
    c8 = eager8.replace(compile=True)
    assert act.logits_bytes(L8, c8, 2, 2048) == 2 * n * V + 4 * n + 4
    assert act.loss_transient_bytes(L8, c8, 2, 2048) == 2 * (n // 8) * V
    assert act.loss_transient_bytes(L8, plain.replace(compile=True), 2, 2048) == 4 * n * V
    with pytest.raises(SpecError, match="loss_chunks"):
        Workload(chunked_loss=True, loss_chunks=8)
    with pytest.raises(SpecError, match="loss_chunks"):
        Workload(loss_chunks=0)


def test_compiled_chunk_loss_backward_allocates_only_the_16_bit_gradient():
    """The mechanism behind the compiled chunked loss's transient: inductor fuses the chunk's fp32 up-cast,
    softmax and one-hot into one kernel that writes the 16-bit gradient; a CPU profile of the backward
    allocates nothing larger (torch 2.13 inductor; torchtune's rows ran torch 2.5)."""
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F
    from torch.profiler import ProfilerActivity, profile

    def chunk_ce(logits, labels):  # torchtune's CEWithChunkedOutputLoss.compute_cross_entropy
        return F.cross_entropy(logits.float(), labels, reduction="sum", ignore_index=-100)

    ce = torch.compile(chunk_ce)
    n, v = 256, 4096
    x = torch.randn(n, v, dtype=torch.bfloat16, requires_grad=True)
    y = torch.randint(0, v, (n,))
    ce(x, y).backward()  # compile forward and backward outside the profile
    loss = ce(x, y)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        loss.backward()
    largest = max(e.cpu_memory_usage for e in prof.events())
    assert largest == 2 * n * v  # the bf16 gradient; an fp32 intermediate would be 4 * n * v
    w = TRAIN.replace(compile=True, loss_chunks=1)
    assert act.loss_transient_bytes(L8, w, 1, n) == 2 * n * L8.vocab_size


def test_compile_loss_off_compiles_the_layers_and_keeps_the_eager_loss():
    """torchtune's recipe at the 3B README's commit calls `training.compile_loss(self._loss_fn)` and drops
    what it returns; for an unchunked loss that is `torch.compile(loss)`, a wrapper that leaves the module
    as it was, so the loss runs eager: fp32 log-probs saved, two fp32 gradients in backward."""
    torch = pytest.importorskip("torch")
    ce = torch.nn.CrossEntropyLoss()
    wrapper = torch.compile(ce)  # what compile_loss returns; the recipe keeps `ce`
    assert wrapper is not ce and ce._compiled_call_impl is None  # nn.Module.compile() would have set it
    n, V = 2 * 2048, L8.vocab_size
    layers = TRAIN.replace(compile=True, compile_loss=False)
    assert not layers.loss_compiled and TRAIN.replace(compile=True).loss_compiled
    assert act.loss_transient_bytes(L8, layers, 2, 2048) == act.loss_transient_bytes(L8, TRAIN, 2, 2048)
    assert act.loss_transient_bytes(L8, layers, 2, 2048) == 2 * 4 * n * V
    assert act.logits_bytes(L8, layers, 2, 2048) == act.logits_bytes(L8, TRAIN, 2, 2048)
    # the layers are still compiled
    assert act.terms(L8, layers).per_token_layer == act.terms(L8, TRAIN.replace(compile=True)).per_token_layer
    c8 = layers.replace(loss_chunks=8)  # an eager chunked loss: every chunk's fp32 log-probs saved
    assert act.logits_bytes(L8, c8, 2, 2048) == 4 * n * V + 4
    with pytest.raises(SpecError, match="compile_loss"):
        Workload(compile_loss="no")


def _repeat_kv_sdpa(module, q, k, v, attention_mask, dropout=0.0, scaling=None, **kwargs):
    """torchtune's MultiHeadAttention: k and v expanded to every query head and flattened (a copy), then
    attention (SDPA here, flex attention in the packed runs: both save their q, k, v, output, lse)."""
    import torch.nn.functional as F

    b, kh, s, d = k.shape
    n = module.num_key_value_groups
    k = k[:, :, None].expand(b, kh, n, s, d).reshape(b, kh * n, s, d)
    v = v[:, :, None].expand(b, kh, n, s, d).reshape(b, kh * n, s, d)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scaling)
    return out.transpose(1, 2).contiguous(), None


@pytest.mark.parametrize("kv_heads", [2, 1])
def test_kv_repeat_saves_the_repeated_copies_as_autograd_does(kv_heads):
    """With k and v repeated before SDPA the copies are what attention saves (2·a·d·e, not 2·k·d·e, per
    token per layer); with one KV head the flatten is a stride-0 view and nothing more is saved. Exact
    against a transformers Llama whose attention repeats k and v first."""
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from hf_tiny import hf_forward, saved_bytes, tiny_llama

    from aiworkbook.specs import spec_from_config

    transformers.AttentionInterface.register("repeat_kv_sdpa", _repeat_kv_sdpa)
    b, s = 2, 128
    model = tiny_llama("sdpa", kv_heads)
    spec = spec_from_config(model.config.to_dict())
    w = Workload(precision="fp32", recipe="fp32-adamw", batch=b, seq_len=s, kv_repeat=True)
    model.set_attn_implementation("repeat_kv_sdpa")
    measured = saved_bytes(model, hf_forward(model, b, s))["total"]
    est = estimate(spec, w, device="cpu").memory
    assert est.activations + est.logits == measured
    plain = estimate(spec, w.replace(kv_repeat=False), device="cpu").memory.activations
    a, d = spec.num_heads, spec.head_dim
    extra = 2 * (a - kv_heads) * d * 4 * b * s * spec.num_layers if kv_heads > 1 else 0
    assert est.activations - plain == extra
    with pytest.raises(SpecError, match="kv_repeat"):
        Workload(mode="infer", kv_repeat=True)


def test_optimizer_in_backward_holds_one_gradient_not_all():
    w = TRAIN.replace(checkpointing="full")
    full = model_states(L8, w).gradients
    one = model_states(L8, w.replace(optimizer_in_backward=True)).gradients
    assert full == 2 * L8.params
    assert one == 2 * L8.vocab_size * L8.hidden_size  # the largest tensor: the vocabulary table
    with pytest.raises(SpecError, match="optimizer_in_backward"):
        Workload(dp=2, zero=1, optimizer_in_backward=True)


def test_activation_offload_keeps_the_layers_in_flight_and_reports_the_rest_on_the_host():
    w = TRAIN.replace(checkpointing="full")
    on, off = memory_breakdown(L8, w), memory_breakdown(L8, w.replace(activation_offload=True))
    kept = 2 * 2048 * L8.hidden_size * 2  # one checkpointed layer input
    moved = (L8.num_layers - act.IN_FLIGHT_LAYERS) * kept
    assert on.activations - off.activations == moved
    assert off.host["offloaded_activations"] == moved and off.activations > 0  # not zero: in flight
    assert on.host_bytes == 0


def test_fsdp_cpu_offload_moves_states_to_the_host_and_keeps_gathered_units():
    w = TRAIN.replace(checkpointing="full")
    plain, off = memory_breakdown(L8, w), memory_breakdown(L8, w.replace(fsdp_cpu_offload=True))
    states = plain.weights + plain.gradients + plain.optimizer + plain.master_weights
    assert off.weights == off.gradients == off.optimizer == off.master_weights == 0
    assert off.host["offloaded_states"] == states
    unit = L8.vocab_size * L8.hidden_size  # the largest FSDP unit: the vocabulary table
    # the plain run's foreach step temporaries (torch's CUDA default) stay on the GPU; offload steps on the host
    step = optimizer_step.temporaries(L8, w).bytes
    assert (
        step == 2 * L8.params and optimizer_step.temporaries(L8, w.replace(fsdp_cpu_offload=True)).bytes == 0
    )
    assert off.workspace - (plain.workspace - step) == (2 * 2 + 2) * unit  # two gathered units + one's grads
    with pytest.raises(SpecError, match="zero"):
        Workload(dp=8, zero=2, fsdp_cpu_offload=True)


def test_paged_8bit_adamw_state_is_blockwise_int8_and_outside_the_allocator():
    w = TRAIN.replace(recipe="blockwise-adamw-8bit")
    st = model_states(L8, w)
    n = L8.params
    assert 2 * n < st.optimizer < 2 * n * 1.02  # int8 m and v + an fp32 absmax per 256 values
    paged = model_states(L8, w.replace(recipe="paged-adamw-8bit"))
    assert paged.optimizer == 0 and paged.paged == st.optimizer
    mb = memory_breakdown(L8, w.replace(recipe="paged-adamw-8bit"))
    assert mb.host["paged_optimizer"] == st.optimizer and mb.total < memory_breakdown(L8, w).total


def test_json_keeps_its_keys_and_adds_host(capsys):
    args = ["size", "llama-3.1-8b", "--mode", "lora", "--lora-targets", "all-linear", "--compile"]
    args += ["--loss-chunks", "8", "--activation-offload", "--checkpointing", "full", "--json"]
    assert main(args) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["workload"]["lora_targets"] == ["all-linear"] and d["workload"]["compile"] is True
    assert "total" in d["memory"] and "host_bytes" not in d["memory"]
    assert d["host"]["offloaded_activations"] > 0
    assert d["host"]["host_bytes"] == sum(v for k, v in d["host"].items() if k != "host_bytes")
    assert main(["fit", "llama-3.1-8b", "--optimizer-in-backward", "--fsdp-cpu-offload"]) == 2
    assert "--optimizer-in-backward" in capsys.readouterr().err


def predicted_gib(case) -> float:
    """The allocator's view: the itemised total less the CUDA context and the caching reserve."""
    wl = dict(case["workload"])
    if isinstance(wl.get("lora_targets"), list):
        wl["lora_targets"] = tuple(wl["lora_targets"])
    spec = load_model(str(DATA / case["config"])) if "config" in case else load_model(case["model"])
    m = estimate(spec, Workload(**wl)).memory
    return (m.total - m.cuda_context - m.reserve) / GiB


def test_cases_cite_their_source_and_settings():
    assert CASES["kind"] == "finetune-memory-cases" and CASES["schema_version"] == 1
    for c in CASES["cases"]:
        assert c["source"].startswith("https://") and c["library"] and c["settings"], c["id"]
        assert c["published_gib"] > 0 and c["measures"], c["id"]


@pytest.mark.parametrize(
    "case", [c for c in CASES["cases"] if "not_modelled" not in c], ids=lambda c: c["id"]
)
def test_published_finetune_peaks_within_10_percent(case):
    pred = predicted_gib(case)
    err = pred / case["published_gib"] - 1
    print(f"{case['id']}: predicted {pred:.2f} GiB, published {case['published_gib']} GiB, {err:+.1%}")
    assert abs(err) <= 0.10, f"{case['id']}: {pred:.2f} GiB vs {case['published_gib']} ({err:+.1%})"


class _Lora:
    """A LoRA adapter around a frozen nn.Linear: base(x) + B(A(x)) (what PEFT and torchtune compute)."""

    @staticmethod
    def wrap(model, targets, rank):
        torch = pytest.importorskip("torch")

        class Lora(torch.nn.Module):
            def __init__(self, base):
                super().__init__()
                self.base = base
                self.A = torch.nn.Linear(base.in_features, rank, bias=False)
                self.B = torch.nn.Linear(rank, base.out_features, bias=False)

            def forward(self, x):
                return self.base(x) + self.B(self.A(x))

        for p in model.parameters():
            p.requires_grad_(False)
        for layer in model.model.layers:
            for parent in (layer.self_attn, layer.mlp):
                for name in targets:
                    if hasattr(parent, name):
                        setattr(parent, name, Lora(getattr(parent, name)))
        return model


@pytest.mark.parametrize(
    "targets,precision,layers",
    [
        (("q_proj", "v_proj"), "fp32", 2),
        (("q_proj", "k_proj", "v_proj", "o_proj"), "fp32", 2),
        ("all-linear", "fp32", 2),
        (("down_proj",), "fp32", 2),
        (("q_proj", "v_proj"), "bf16", 3),
        (("gate_proj", "up_proj", "down_proj"), "bf16", 3),
        (("o_proj",), "bf16", 3),
    ],
)
def test_frozen_base_saves_only_what_adapters_need_as_transformers_does(targets, precision, layers):
    """A frozen projection keeps no input (only its weight's gradient would need it), a frozen norm weight
    no normalised value, and the first layer records nothing before its first adapter: counted against
    the tensors autograd saves in a transformers Llama with adapters (exact to the byte)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from hf_tiny import hf_forward, saved_bytes, tiny_llama

    from aiworkbook.specs import spec_from_config

    b, s, r = 2, 128 if precision == "fp32" else 64, 8
    mods = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    model = _Lora.wrap(tiny_llama("sdpa", layers=layers), mods if targets == "all-linear" else targets, r)
    if precision == "bf16":
        model = model.to(torch.bfloat16)
    w = Workload(
        mode="lora",
        precision=precision,
        recipe="pure-bf16" if precision == "bf16" else "fp32-adamw",
        batch=b,
        seq_len=s,
        lora_rank=r,
        lora_targets=targets,
    )
    est = estimate(spec_from_config(model.config.to_dict()), w, device="cpu")
    assert est.memory.activations + est.memory.logits == saved_bytes(model, hf_forward(model, b, s))["total"]
