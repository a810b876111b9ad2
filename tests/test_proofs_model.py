"""The plain-torch decoder: exact parameter counts, the same loss and saved bytes as transformers' Llama."""

from __future__ import annotations

import pytest
import torch

from aiworkbook.errors import SpecError
from aiworkbook.proofs.memory_accounting import SavedTensorTracker, model_states, unique_bytes
from aiworkbook.proofs.model import DecoderModel, KVCache, param_count
from aiworkbook.specs import list_presets, load_model

DECODERS = [n for n in list_presets() if load_model(n).is_decoder]


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
    from aiworkbook.specs.model import load_config_file

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
