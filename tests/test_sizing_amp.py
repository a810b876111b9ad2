"""PyTorch AMP (fp32 weights under torch.autocast(bf16), recipe fp32-adamw at bf16-mixed): the estimate's
activations + logits against the unique bytes autograd saves for backward (saved_tensors_hooks,
parameters excluded) on CPU, for transformers' LlamaForCausalLM / GPT2LMHeadModel and the proof kit's
plain-torch decoder, eager and sdpa.

The estimate is made for device="cpu", the list CPU autocast applies. Where CUDA autocast differs (it
runs `pow` in fp32: GPT-2's gelu_new), `test_cuda_pow_policy_emulated` replays the CUDA policy on CPU by
casting pow's input to fp32, and checks the device="cuda" estimate against that.
"""

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from hf_tiny import V, saved_bytes, tiny_gpt2, tiny_llama  # noqa: E402
from hf_tiny import hf_forward as _hf_forward  # noqa: E402

from aiworkbook.proofs.model import DecoderModel  # noqa: E402
from aiworkbook.sizing import Workload, estimate  # noqa: E402
from aiworkbook.sizing.activations import autocast_fp32_weights, layer_matrix_params  # noqa: E402
from aiworkbook.specs import spec_from_config  # noqa: E402


def _amp(attn, b, s, dropout=0.0, **kw):
    return Workload(
        precision="bf16-mixed",
        recipe="fp32-adamw",
        attention=attn,
        batch=b,
        seq_len=s,
        dropout=dropout,
        **kw,
    )


def _predicted(spec, w, device="cpu"):
    mem = estimate(spec, w, device=device).memory
    return mem.activations + mem.logits


HF_CASES = [
    ("llama", "sdpa", 1, 128),
    ("llama", "eager", 2, 128),
    ("llama", "sdpa", 2, 256),
    ("llama", "eager", 1, 256),
    ("gpt2", "sdpa", 1, 128),
    ("gpt2", "eager", 2, 128),
    ("gpt2", "sdpa", 2, 256),
    ("gpt2", "eager", 1, 256),
]


@pytest.mark.parametrize("family,attn,b,s", HF_CASES)
def test_amp_activations_match_transformers(family, attn, b, s):
    model = tiny_llama(attn) if family == "llama" else tiny_gpt2(attn)
    spec = spec_from_config(model.config.to_dict())
    measured = saved_bytes(model, _hf_forward(model, b, s), autocast=True)["total"]
    predicted = _predicted(spec, _amp(attn, b, s))
    assert predicted == pytest.approx(measured, rel=0.05), (predicted, measured, predicted / measured)


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_amp_gpt2_dropout_matches_transformers(attn):
    """Dropout masks at the dropped tensor's width on CPU: fp32 embeddings (4 B), 16-bit elsewhere. CPU sdpa
    with dropout falls back to the math path, which up-casts 16-bit q, k, v to fp32 on CPU (CPU only:
    CUDA's flash/efficient kernels take dropout)."""
    model = tiny_gpt2(attn, drop=0.1)
    spec = spec_from_config(model.config.to_dict())
    measured = saved_bytes(model, _hf_forward(model, 2, 128), autocast=True)["total"]
    predicted = _predicted(spec, _amp(attn, 2, 128, dropout=0.1))
    assert predicted == pytest.approx(measured, rel=0.05), (predicted, measured, predicted / measured)


def _kit_spec(family):
    model = tiny_llama("sdpa") if family == "llama" else tiny_gpt2("sdpa")
    return spec_from_config(model.config.to_dict())


KIT_CASES = [
    ("llama", "sdpa", 1, 128),
    ("llama", "eager", 2, 256),
    ("gpt2", "sdpa", 2, 128),
    ("gpt2", "eager", 1, 256),
]


@pytest.mark.parametrize("family,attn,b,s", KIT_CASES)
def test_amp_activations_match_the_proof_kit_decoder(family, attn, b, s):
    spec = _kit_spec(family)
    torch.manual_seed(0)
    model = DecoderModel(spec, attention=attn)
    ids = torch.randint(0, V, (b, s), generator=torch.Generator().manual_seed(1))
    measured = saved_bytes(model, lambda: model(ids, labels=ids), autocast=True)["total"]
    predicted = _predicted(spec, _amp(attn, b, s))
    assert predicted == pytest.approx(measured, rel=0.05), (predicted, measured, predicted / measured)


@pytest.mark.parametrize(
    "family,checkpointing", [("llama", "full"), ("gpt2", "full"), ("llama", "selective")]
)
def test_amp_checkpointing_matches_the_proof_kit(family, checkpointing):
    """Full: L fp32 layer inputs (4h per token) + one layer recomputed with its own weight copies (its first
    norm saves the kept input itself) + the head's. Selective: RoPE'd q and k kept in fp32 at the checkpoint."""
    from aiworkbook.proofs.memory_accounting import SavedTensorTracker

    spec = _kit_spec(family)
    b, s = 2, 128
    torch.manual_seed(0)
    model = DecoderModel(spec, attention="sdpa", checkpointing=checkpointing)
    ids = torch.randint(0, V, (b, s))
    tracker = SavedTensorTracker(model.parameters())
    with tracker, torch.autocast("cpu", dtype=torch.bfloat16):
        model.set_tracker(tracker)
        model(ids, labels=ids)
    model.set_tracker(None)
    measured = tracker.bytes()
    if (
        checkpointing == "full"
    ):  # the transient of the layer recomputed in backward, as the VRAM proof adds it
        x = torch.randn(b, s, spec.hidden_size, requires_grad=True)
        pos = torch.arange(s)[None].expand(b, -1)
        rope = None if model.embed_positions is not None else model._rope(pos, x.dtype)
        with SavedTensorTracker([*model.parameters(), x]) as one, torch.autocast("cpu", dtype=torch.bfloat16):
            model.layers[0](x, rope, None)
        measured += one.bytes()
    predicted = _predicted(spec, _amp("sdpa", b, s, checkpointing=checkpointing))
    assert predicted == pytest.approx(measured, rel=0.05), (predicted, measured, predicted / measured)


def test_cuda_pow_policy_emulated():
    """CUDA autocast puts pow in its fp32 list (CPU does not): GPT-2's gelu_new then saves an fp32 cast of
    its input, fp32 tanh and 1 + tanh, and c_proj a fresh 16-bit cast. Replayed on CPU by casting pow's
    input to fp32, eager attention without dropout (nothing else differs between the two lists here)."""
    model = tiny_gpt2("eager")
    spec = spec_from_config(model.config.to_dict())
    b, s = 1, 128
    real_pow = torch.pow

    def fp32_pow(x, *a, **k):
        return real_pow(x.float() if torch.is_tensor(x) and x.is_floating_point() else x, *a, **k)

    torch.pow = fp32_pow
    try:
        cuda_like = saved_bytes(model, _hf_forward(model, b, s), autocast=True)["total"]
    finally:
        torch.pow = real_pow
    cpu = saved_bytes(model, _hf_forward(model, b, s), autocast=True)["total"]
    w = _amp("eager", b, s)
    assert _predicted(spec, w, "cuda") - _predicted(spec, w, "cpu") == pytest.approx(
        cuda_like - cpu, rel=0.01
    )
    cuda_pred = estimate(spec, w, device="cuda").memory
    assert cuda_pred.activations + cuda_pred.logits == pytest.approx(cuda_like, rel=0.05)


def test_amp_saves_weight_copies_and_mixed_widths():
    """The AMP terms: 2 B per matrix parameter per layer, 2·V·h for the head, fp32 residual inputs."""
    model = tiny_llama("sdpa", layers=1)
    spec = spec_from_config(model.config.to_dict())
    got = saved_bytes(model, _hf_forward(model, 1, 128), autocast=True)
    h = spec.hidden_size
    copies = 2 * (layer_matrix_params(spec) + V * h)
    assert got["bfloat16"] > copies  # the copies are bf16 and counted as saved
    assert got["float32"] >= 4 * 128 * V  # the fp32 log-probs
    w = _amp("sdpa", 1, 128)
    mem = estimate(spec, w, device="cpu").memory
    assert "autocast" in mem.formulas["activations"] and "autocast copy of the head" in mem.formulas["logits"]
    assert autocast_fp32_weights(w)


@pytest.mark.parametrize(
    "recipe,precision",
    [
        ("megatron-bf16", "bf16-mixed"),
        ("zero-mixed", "bf16-mixed"),
        ("pure-bf16", "bf16"),
        ("fp32-adamw", "fp32"),
    ],
)
def test_sixteen_bit_weight_recipes_are_not_amp(recipe, precision):
    """Recipes with 16-bit working weights run no autocast casts: their figures do not change."""
    spec = _kit_spec("llama")
    w = Workload(precision=precision, recipe=recipe, batch=2, seq_len=256)
    assert not autocast_fp32_weights(w)
    mem = estimate(spec, w, device="cuda").memory
    assert "autocast" not in mem.formulas["activations"] + mem.formulas["logits"]
