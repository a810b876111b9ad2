"""The all-reduce proof's busbw with one rank and the kv proof's grid point that did not fit, said in
Dutch and German (issue 31). Each check first sees English in the English run, so a pass is not an
empty page or a checker that sees nothing."""

from __future__ import annotations

import pytest
from english_left import english_left

from aiworkbook.cli import main
from aiworkbook.cli.prove_cmds import kv_grid_line
from aiworkbook.message import words
from aiworkbook.proofs.device import DoesNotFit, oom_guard

ONE_RANK = ["prove", "allreduce", "--ranks", "1", "--sizes", "4", "--iters", "2", "--device", "cpu"]


def _sweep(out: str) -> list[str]:
    """The sweep's lines (size: time, algbw, busbw)."""
    return [line for line in out.splitlines() if "algbw" in line]


@pytest.mark.timeout(120)
def test_one_rank_busbw_is_said_in_the_language(capsys):
    assert main(["--lang", "en", *ONE_RANK]) == 0
    en = _sweep(capsys.readouterr().out)
    assert en and english_left("\n".join(en), "nl") and english_left("\n".join(en), "de")
    for lang in ("nl", "de"):
        assert main(["--lang", lang, *ONE_RANK]) == 0
        said = _sweep(capsys.readouterr().out)
        assert len(said) == len(en) and not english_left("\n".join(said), lang), said


def test_a_grid_point_that_did_not_fit_is_said_in_the_language():
    """A real out-of-memory (a 1 PiB allocation the allocator refuses), as the kv proof records it."""
    import torch

    with pytest.raises(DoesNotFit) as caught:
        with oom_guard("batch 4 x context 64", "cpu"):
            torch.empty(2**50, dtype=torch.uint8)
    exc = caught.value
    point = {"batch": 4, "context": 64, "does_not_fit": str(exc), "reason": exc.reason}
    line = kv_grid_line(point)
    assert str(line).endswith(f"does not fit: {exc.reason}") and english_left(str(line), "nl")
    for lang in ("nl", "de"):
        said = words(line, lang)
        assert exc.reason in said and not english_left(said, lang), said
    old = {k: v for k, v in point.items() if k != "reason"}  # a result stored before `reason` was kept
    assert str(exc) in words(kv_grid_line(old), "de")


@pytest.mark.timeout(60)
def test_the_capability_matrix_is_said_in_the_language(capsys):
    """`monitor --capabilities` on a datacenter GPU and a Pascal card on an old driver (the fake NVML:
    groups not supported, functions not found): headers, group names and NVML's reasons in the language."""
    from fake_nvml import DATACENTER, OLD_DRIVER, FakeNVML

    from aiworkbook.telemetry.environment import reset as reset_reader

    pages = {}
    for lang in ("en", "nl", "de"):
        with FakeNVML([DATACENTER, OLD_DRIVER], sleep=lambda s: None):
            reset_reader()
            try:
                assert main(["--lang", lang, "monitor", "--capabilities"]) == 0
            finally:
                reset_reader()
        pages[lang] = capsys.readouterr().out
    rows = pages["en"].splitlines()
    assert any(r.startswith("utilization") for r in rows) and "not supported" in pages["en"]
    assert english_left(pages["en"], "nl") and english_left(pages["en"], "de")
    for lang in ("nl", "de"):
        said = pages[lang].splitlines()
        assert len(said) == len(rows), said  # the same table, one row per metric group
        assert not english_left(pages[lang], lang), pages[lang]
