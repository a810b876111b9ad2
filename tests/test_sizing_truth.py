"""The activation estimate held to what transformers itself saves for backward, family by family.

Every family aiworkbook.proofs.activation_truth builds (small configs, CPU): fp32, pure bf16 and
bf16-mixed (autocast), eager and sdpa where transformers offers it, with and without full
checkpointing, the three shapes spread over those cases. Measured with saved_tensors_hooks (unique
storages, parameters excluded); the full table: `python -m aiworkbook.proofs.activation_truth`.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from aiworkbook.proofs import activation_truth as truth  # noqa: E402

#: the bar each family is held to (estimate / measured - 1, every case); docs/sizing.md has the table
WITHIN = 0.05
#: families not yet within it: the bar they are held to now, and the mechanism still missing (issue 32)
OPEN = {
    "gpt2": (0.35, "pure bf16 sdpa on CPU with dropout: the math fallback's bf16 tensors"),
    "gpt_neox": (0.17, "parallel attention and MLP, partial rotary"),
    "qwen2_moe": (0.18, "the shared expert and its sigmoid gate"),
    "phi3": (0.11, "fused gate_up_proj: one saved tensor for gate and up"),
    "phimoe": (0.10, "sparsemixer routing (its own top-2 masks and gathers)"),
    "mixtral": (0.09, "router under autocast (fp32 router logits)"),
    "gemma3_text": (0.07, "sliding layers' eager scores"),
    "gemma2": (0.06, "soft-capped eager scores at fp32"),
    "phi": (0.06, "partial rotary, parallel attention and MLP"),
}


def _cases(family: str) -> list[truth.Case]:
    out = []
    k = 0
    for precision in truth.PRECISIONS:
        for attention in truth.ATTENTIONS:
            try:
                model = truth.build(family, precision, attention)
            except ValueError as e:  # transformers offers no sdpa for this family
                assert "attention implementation" in str(e)
                continue
            for ckpt in (False, True):
                if ckpt:
                    model.gradient_checkpointing_enable({"use_reentrant": True})
                b, s = truth.SHAPES[k % len(truth.SHAPES)]
                k += 1
                m = truth.saved(model, b, s, precision == "bf16-mixed")
                e = truth.estimated(family, precision, attention, ckpt, b, s)
                out.append(truth.Case(family, precision, attention, ckpt, b, s, m, e))
    return out


@pytest.mark.timeout(600)
@pytest.mark.parametrize("family", sorted(truth.FAMILY_KEYS))
def test_estimate_within_bar_of_transformers(family):
    cases = _cases(family)
    assert len(cases) >= 6 and len({(c.batch, c.seq) for c in cases}) == len(truth.SHAPES)
    off = [(c.precision, c.attention, c.checkpointing, c.batch, c.seq, f"{c.error:+.1%}") for c in cases]
    bar = OPEN.get(family, (WITHIN, ""))[0]
    assert all(abs(c.error) <= bar for c in cases), off
