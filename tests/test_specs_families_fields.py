"""Config fields that decide over family defaults: dropout, architectures, quantization_config."""

from __future__ import annotations

import pytest

from aiworkbook.errors import SpecError
from aiworkbook.sizing import Workload, estimate
from aiworkbook.specs import load_model, spec_from_config

GPT2 = {"model_type": "gpt2", "n_embd": 64, "n_head": 4, "n_layer": 2, "n_positions": 128, "vocab_size": 500}


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_gpt2_config_without_dropout_is_sized_without_masks(attn):
    """A GPT-2 config whose dropouts are 0 (a fine-tuning set-up) was sized with the family's 0.1."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from hf_tiny import hf_forward, saved_bytes, tiny_gpt2

    model = tiny_gpt2(attn, 0.0)
    spec = spec_from_config(model.config.to_dict())
    assert spec.dropout == 0.0
    w = Workload(precision="fp32", recipe="fp32-adamw", attention=attn, batch=1, seq_len=256)  # dropout=None
    est = estimate(spec, w, device="cpu")
    measured = saved_bytes(model, hf_forward(model, 1, 256))["total"]
    assert est.memory.activations + est.memory.logits == pytest.approx(measured, rel=0.10)
    no_keys = {k: v for k, v in model.config.to_dict().items() if "pdrop" not in k}
    with_default = estimate(spec_from_config(no_keys), w, device="cpu")  # no dropout keys: family 0.1
    assert with_default.memory.activations > est.memory.activations
    del torch


def test_dropout_keys_validated_and_largest_kept():
    assert spec_from_config({**GPT2, "attn_pdrop": 0.0, "resid_pdrop": 0.2}).dropout == 0.2
    with pytest.raises(SpecError, match="attn_pdrop"):
        spec_from_config({**GPT2, "attn_pdrop": 1.5})


def test_bert_for_masked_lm_has_mlm_head_not_pooler():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    cfg = {
        "model_type": "bert",
        "architectures": ["BertForMaskedLM"],
        "hidden_size": 96,
        "num_attention_heads": 4,
        "num_hidden_layers": 2,
        "intermediate_size": 256,
        "vocab_size": 1000,
        "max_position_embeddings": 128,
        "pad_token_id": 0,
    }
    with torch.device("meta"):
        model = transformers.BertForMaskedLM(transformers.BertConfig(**cfg))
    spec = spec_from_config(cfg)
    assert spec.mlm_head and not spec.pooler
    assert spec.params == sum(p.numel() for p in model.parameters())


def test_quantized_checkpoints_weigh_their_stored_bytes():
    oss = load_model("gpt-oss-20b")  # MXFP4 experts, everything else bf16
    # huggingface.co/openai/gpt-oss-20b: three safetensors shards, 4.79 + 4.80 + 4.17 GB = 13.76 GB
    assert oss.quant.method == "mxfp4" and oss.quant.scope == "experts"
    assert oss.quant.weight_bytes(oss) == pytest.approx(13.76e9, rel=0.005)
    est = estimate(oss, Workload(mode="infer", batch=1, seq_len=1024))
    assert est.memory.weights == oss.quant.weight_bytes(oss)
    bf16 = estimate(oss, Workload(mode="infer", batch=1, seq_len=1024, weights_dtype="fp8"))
    assert bf16.memory.weights != est.memory.weights  # an explicit dtype still overrides
    ds = load_model("deepseek-v3")
    assert ds.quant.method == "fp8" and ds.quant.bits == 8 + 32 / (128 * 128)


@pytest.mark.parametrize(
    "qc,bits",
    [
        ({"quant_method": "gptq", "bits": 4, "group_size": 128}, 4 + 20 / 128),
        ({"quant_method": "awq", "bits": 4, "group_size": 64}, 4 + 20 / 64),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"g": {"weights": {"num_bits": 8, "strategy": "channel", "type": "int"}}},
            },
            8 + 16 / 64,
        ),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {
                    "g": {"weights": {"num_bits": 4, "strategy": "group", "group_size": 128, "type": "int"}}
                },
            },
            4 + 16 / 128,
        ),
    ],
)
def test_quantization_methods_bits(qc, bits):
    spec = spec_from_config({**GPT2, "quantization_config": qc})
    assert spec.quant.bits == pytest.approx(bits)
    lin = spec.params_linear
    assert spec.quant.weight_bytes(spec) == int(lin * bits / 8) + 2 * (spec.params - lin)


def test_unknown_quant_method_is_a_spec_error():
    with pytest.raises(SpecError, match="quant_method"):
        spec_from_config({**GPT2, "quantization_config": {"quant_method": "eetq"}})
