"""The VRAM proof runs the AdamW implementation its estimate assumed, passes it to torch explicitly and
records it; on the CPU it runs foreach, and the step's temporaries are counted at the dispatcher."""

import pytest

pytest.importorskip("torch")

from aiworkbook.proofs.vram import prove_vram  # noqa: E402


@pytest.mark.parametrize("impl", [None, "fused"])
def test_cpu_vram_proof_measures_the_step_temporaries_it_predicts(impl):
    kw = {} if impl is None else {"optimizer_impl": impl}
    r = prove_vram("tiny-llama", device="cpu", quick=True, seq_len=32, **kw)
    assert r.inputs["optimizer_impl"] == (impl or "foreach")
    assert r.inputs["workload"]["optimizer_impl"] == (impl or "foreach")
    row = next(c for c in r.details["components"] if c["component"].startswith("optimizer step"))
    weights = next(c for c in r.details["components"] if c["component"] == "weights")["measured"]
    if impl is None:  # foreach: sqrt(exp_avg_sq) of the whole group, the size of the fp32 weights
        assert row["measured"] == row["predicted"] == weights
    else:
        assert row["measured"] == row["predicted"] == 0
    assert r.verdict == "pass"
