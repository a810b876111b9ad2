"""A proof that wanted a GPU and ran on the CPU (flag cpu-fallback) says so wherever its verdict is
printed: `prove`'s headline, and the notebooks that print a verdict (aiworkbook.proofs.verdict)."""

from __future__ import annotations

import json
from pathlib import Path

from profile_fakes import result

from aiworkbook.proofs.verdict import CPU_ONLY_VERDICT, verdict_words

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def test_the_headline_of_a_cpu_fallback_is_no_plain_pass():
    fell_back = result("kv", 9.5e8, device="cpu", flags=["cpu-fallback"])
    assert fell_back.verdict == "pass"
    assert fell_back.headline().startswith(f"[{CPU_ONLY_VERDICT}] kv on cpu:")
    failed = result("kv", 3e9, device="cpu", flags=["cpu-fallback"])
    assert failed.verdict == "fail" and failed.headline().startswith("[fail (CPU only)] kv on cpu:")
    # a run on the CPU that is not a fallback (a host proof, or a device chosen) keeps its verdict
    assert result("kv", 9.5e8, device="cpu").headline().startswith("[pass] kv on cpu:")


def test_every_notebook_cell_that_prints_a_verdict_says_whether_it_ran_on_the_cpu_only():
    """A cell printing `.verdict` bare would call a CPU fallback a pass; they print verdict_words (or a
    headline, which does). Their outputs are not compared (NBVAL_IGNORE_OUTPUT: measured here)."""
    seen = 0
    for nb in sorted(NOTEBOOKS.glob("*.ipynb")):
        for cell in json.loads(nb.read_text())["cells"]:
            src = "".join(cell["source"])
            if cell["cell_type"] != "code" or ".verdict" not in src and ".headline()" not in src:
                continue
            seen += 1
            assert ".verdict," not in src and ".verdict)" not in src, (nb.name, src)
            assert "verdict_words(" in src or ".headline()" in src, (nb.name, src)
    assert seen >= 3
    assert verdict_words({"verdict": "pass", "flags": ["cpu-fallback"]}) == CPU_ONLY_VERDICT
