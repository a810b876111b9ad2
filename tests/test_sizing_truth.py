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
OPEN: dict[str, tuple[float, str]] = {}


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    with truth.one_thread():
        yield


def _shape(family: str, k: int) -> tuple[int, int]:
    """The shape of `family`'s k-th case: the rotation starts one further per family, so across the
    families every (precision, attention, checkpointing) case meets every shape."""
    return truth.SHAPES[(k + sorted(truth.FAMILY_KEYS).index(family)) % len(truth.SHAPES)]


def _cases(family: str) -> list[truth.Case]:
    out = []
    for k, (precision, attention, ckpt, model) in enumerate(truth.variants(family)):
        b, s = _shape(family, k)
        m = truth.saved(model, b, s, precision == "bf16-mixed")
        e = truth.estimated(family, precision, attention, ckpt, b, s)
        out.append(truth.Case(family, precision, attention, ckpt, b, s, m, e))
    return out


@pytest.mark.timeout(120)
@pytest.mark.parametrize("family", sorted(truth.FAMILY_KEYS))
def test_estimate_within_bar_of_transformers(family):
    cases = _cases(family)
    assert len(cases) >= 6 and len({(c.batch, c.seq) for c in cases}) == len(truth.SHAPES)
    off = [(c.precision, c.attention, c.checkpointing, c.batch, c.seq, f"{c.error:+.1%}") for c in cases]
    bar = OPEN.get(family, (WITHIN, ""))[0]
    assert all(abs(c.error) <= bar for c in cases), off


@pytest.mark.timeout(120)
def test_one_model_switched_saves_what_a_fresh_build_saves():
    """variants() casts, switches attention and checkpointing on one model: each case saves exactly
    what a model built for it alone saves (Gemma 3: sliding and global layers, q/k norms)."""
    family, (b, s) = "gemma3_text", truth.SHAPES[0]
    switched = {(p, a, c): truth.saved(m, b, s, p == "bf16-mixed") for p, a, c, m in truth.variants(family)}
    assert len(switched) == len(truth.PRECISIONS) * len(truth.ATTENTIONS) * 2
    for (precision, attention, ckpt), got in switched.items():
        fresh = truth.build(family, precision, attention)
        if ckpt:
            fresh.gradient_checkpointing_enable({"use_reentrant": True})
        assert got == truth.saved(fresh, b, s, precision == "bf16-mixed"), (precision, attention, ckpt)
