"""The plain-torch decoder: exact parameter counts, the same loss and saved bytes as transformers' Llama and GPT-2."""

from __future__ import annotations

import pytest
import torch

from aiworkbook.errors import SpecError
from aiworkbook.proofs.memory_accounting import SavedTensorTracker, model_states, unique_bytes
from aiworkbook.proofs.model import DecoderModel, KVCache, param_count
from aiworkbook.specs import list_presets, load_model

# The plain-torch decoder builds the original families' layer; the newer ones (aiworkbook.specs.families:
# q/k norms, MLA, interleaved MoE) are counted exactly by the spec but not rebuilt here.
DECODERS = [n for n in list_presets() if load_model(n).is_decoder and not hasattr(load_model(n), "kv_groups")]


@pytest.mark.parametrize("name", DECODERS)
def test_param_count_matches_spec(name):
    spec = load_model(name)
    assert param_count(DecoderModel(spec, device="meta")) == spec.params


def test_encoder_refused():
    with pytest.raises(SpecError, match="decoder"):
        DecoderModel(load_model("bert-base-uncased"), device="meta")


def _hf_llama(spec):
    transformers = pytest.importorskip("transformers")
    from aiworkbook.paths import data_dir
    from aiworkbook.specs.reader import load_config_file

    cfg = load_config_file(data_dir() / "models" / "tiny-llama" / "config.json")
    config = transformers.LlamaConfig(**{k: v for k, v in cfg.items() if not k.startswith("_")})
    config._attn_implementation = "sdpa"
    return transformers.LlamaForCausalLM(config)


def _copy_weights(hf, ours):
    names = {
        "model.embed_tokens.": "embed_tokens.",
        "model.norm.": "norm.",
        "self_attn.": "attn.",
        "input_layernorm.": "input_norm.",
        "post_attention_layernorm.": "post_attention_norm.",
        "model.layers.": "layers.",
    }
    sd = {}
    for k, v in hf.state_dict().items():
        for a, b in names.items():
            k = k.replace(a, b)
        sd[k] = v
    ours.load_state_dict(sd, strict=True)


def test_same_loss_and_saved_bytes_as_transformers_llama():
    torch.manual_seed(0)
    spec = load_model("tiny-llama")
    hf = _hf_llama(spec).train()
    ours = DecoderModel(spec).train()
    _copy_weights(hf, ours)
    ids = torch.randint(0, spec.vocab_size, (2, 64))
    with SavedTensorTracker(hf.parameters()) as t_hf:
        loss_hf = hf(input_ids=ids, labels=ids).loss
    with SavedTensorTracker(ours.parameters()) as t_ours:
        loss_ours = ours(ids, labels=ids)
    assert loss_ours.item() == pytest.approx(loss_hf.item(), rel=1e-5)
    assert t_ours.bytes() == pytest.approx(t_hf.bytes(), rel=0.03)


def test_model_states_exact_bytes():
    spec = load_model("tiny-llama")
    model = DecoderModel(spec)
    opt = torch.optim.AdamW(model.parameters())
    ids = torch.randint(0, spec.vocab_size, (1, 16))
    model(ids, labels=ids).backward()
    opt.step()
    st = model_states(model, opt)
    n_tensors = len(list(model.parameters()))
    assert st.weights == 4 * spec.params and st.gradients == 4 * spec.params
    # AdamW: exp_avg and exp_avg_sq in fp32 per parameter, plus one fp32 `step` scalar per tensor
    assert st.optimizer == 8 * spec.params + 4 * n_tensors
    assert st.optimizer_tensors == 3 * n_tensors


def test_tracker_counts_storages_once_and_skips_parameters():
    w = torch.nn.Parameter(torch.randn(8, 8))
    x = torch.randn(4, 8, requires_grad=True)
    with SavedTensorTracker([w]) as tr:
        y = x.view(2, 16).view(4, 8)  # a view: same storage as x
        (y @ w).sum() + (x * 2).sum()
    assert tr.bytes() == x.numel() * 4  # x saved by matmul (via its view) counted once, w excluded
    assert unique_bytes([x, x.view(-1), None]) == x.numel() * 4


def test_kv_cache_grows_to_context():
    spec = load_model("tiny-llama")
    model = DecoderModel(spec).eval()
    cache = KVCache(spec.num_layers)
    with torch.inference_mode():
        nxt = model(torch.randint(0, spec.vocab_size, (3, 10)), cache=cache)[:, -1:].argmax(-1)
        for _ in range(5):
            nxt = model(nxt, cache=cache)[:, -1:].argmax(-1)
    assert cache.length == 15
    assert cache.nbytes() == 2 * spec.num_layers * spec.num_kv_heads * spec.head_dim * 4 * 3 * 15


def _hf_gpt2_into_ours(spec, attention="sdpa"):
    """transformers' GPT-2 (dropout off) and the kit's model with the same weights (Conv1D is [in, out])."""
    transformers = pytest.importorskip("transformers")
    from aiworkbook.paths import data_dir
    from aiworkbook.specs.reader import load_config_file

    cfg = load_config_file(data_dir() / "models" / "tiny-gpt2" / "config.json")
    config = transformers.GPT2Config(
        **{k: v for k, v in cfg.items() if not k.startswith("_")},
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    config._attn_implementation = attention
    hf = transformers.GPT2LMHeadModel(config).train()
    ours = DecoderModel(spec, attention=attention).train()
    sd = {}
    for k, v in hf.state_dict().items():
        if k == "lm_head.weight":
            continue  # tied to wte
        k = k.replace("transformer.wte.", "embed_tokens.").replace("transformer.wpe.", "embed_positions.")
        k = k.replace("transformer.ln_f.", "norm.").replace("transformer.h.", "layers.")
        k = k.replace(".ln_1.", ".input_norm.").replace(".ln_2.", ".post_attention_norm.")
        k = k.replace(".attn.c_attn.", ".attn.qkv_proj.").replace(".attn.c_proj.", ".attn.o_proj.")
        k = k.replace(".mlp.c_fc.", ".mlp.up_proj.").replace(".mlp.c_proj.", ".mlp.down_proj.")
        conv1d = k.endswith("weight") and v.dim() == 2 and ("attn." in k or "mlp." in k)
        sd[k] = v.t().contiguous() if conv1d else v
    ours.load_state_dict(sd, strict=True)
    return hf, ours


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
@pytest.mark.parametrize("autocast", [False, True], ids=["fp32", "bf16-autocast"])
def test_same_loss_and_saved_bytes_as_transformers_gpt2(autocast, attention):
    torch.manual_seed(0)
    spec = load_model("tiny-gpt2")
    hf, ours = _hf_gpt2_into_ours(spec, attention)
    ids = torch.randint(0, spec.vocab_size, (2, 64))
    amp = torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast)
    # use_cache=False: with a cache, transformers' GPT-2 keeps concatenated (contiguous) k and v copies
    # for backward, which a training loop without a cache does not
    with SavedTensorTracker(hf.parameters()) as t_hf, amp:
        loss_hf = hf(input_ids=ids, labels=ids, use_cache=False).loss
    with SavedTensorTracker(ours.parameters()) as t_ours, amp:
        loss_ours = ours(ids, labels=ids)
    assert loss_ours.item() == pytest.approx(loss_hf.item(), rel=1e-2 if autocast else 1e-5)
    assert t_ours.bytes() == pytest.approx(t_hf.bytes(), rel=0.03)


def test_rope_base_is_read_from_the_models_config(tmp_path):
    """ModelSpec.extra is never filled: the kit read 10,000 for every model (Llama 3: 500,000)."""
    import json
    from pathlib import Path

    from aiworkbook.proofs.model import DEFAULT_ROPE_THETA, rope_theta
    from aiworkbook.specs import load_model as load

    assert rope_theta(load("llama-3-8b")) == 500_000.0
    assert rope_theta(load("qwen2.5-7b")) == 1_000_000.0
    assert rope_theta(load("llama-3-8b").scaled(num_layers=1)) == 500_000.0  # a proxy keeps its source
    assert rope_theta(load("pythia-1.4b")) == 10_000.0  # GPT-NeoX: rotary_emb_base
    cfg = json.loads(Path(load("tiny-llama").source).read_text())
    cfg["rope_theta"] = 12345.0
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    spec = load(str(tmp_path / "config.json"))
    m = DecoderModel(spec)
    d = spec.head_dim
    expected = 1.0 / (12345.0 ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
    torch.testing.assert_close(m.inv_freq, expected)
    cfg.pop("rope_theta")
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert rope_theta(load(str(tmp_path / "config.json"))) == DEFAULT_ROPE_THETA
    torch.testing.assert_close(DecoderModel(spec, rope_base=99.0).inv_freq[1], torch.tensor(99.0 ** (-2 / d)))


def test_a_cached_prefill_is_causal_in_every_layer():
    """With a cache, layer 0 used to advance the shared length, so layers 1..L-1 of the same prefill saw
    past > 0 and attended to later tokens (a non-causal prefill). A prefill through the cache, and a
    prefill split in two chunks, must give the logits of the model without one."""
    spec = load_model("tiny-llama")
    torch.manual_seed(0)
    model = DecoderModel(spec).eval()
    ids = torch.randint(0, spec.vocab_size, (2, 12))
    with torch.inference_mode():
        plain = model(ids)
        cached = model(ids, cache=KVCache(spec.num_layers))
        cache = KVCache(spec.num_layers)
        first = model(ids[:, :7], cache=cache)
        second = model(ids[:, 7:], cache=cache)
    assert spec.num_layers > 1
    torch.testing.assert_close(cached, plain)
    torch.testing.assert_close(torch.cat([first, second], dim=1), plain)
