"""All-reduce proof: nccl-tests' bus factor, the summary over ranks, and 2 gloo ranks under torchrun on CPU."""

from __future__ import annotations

import pytest

from aiworkbook.errors import SpecError
from aiworkbook.proofs import allreduce as A
from aiworkbook.proofs import registry


def test_bus_factor_as_nccl_tests_defines_it():
    assert A.busbw_factor(2) == 1.0
    assert A.busbw_factor(8) == pytest.approx(1.75)
    assert A.busbw_factor(1) is None
    with pytest.raises(SpecError):
        A.busbw_factor(0)


def _rank(rank, times, steps, bad=()):
    return {
        "rank": rank,
        "host": f"h{rank // 2}",
        "rows": [{"bytes": 1000, "times_s": times}],
        "steps": steps,
        "bad": list(bad),
    }


def test_summary_takes_the_slowest_rank_and_names_stragglers():
    ranks = [
        _rank(0, [1.0, 2.0, 3.0], [1.0] * 5),
        _rank(1, [2.0, 1.0, 1.0], [1.0] * 5),
        _rank(2, [1.0, 1.0, 1.0], [1.0] * 5, bad=[1000]),
        _rank(3, [1.0, 1.0, 1.0], [2.0] * 5),
    ]
    s = A.summarise(ranks, 4)
    row = s["sweep"][0]
    assert row["time_s"] == 2.0  # median of the per-iteration maxima (2, 2, 3)
    assert row["algbw_bps"] == 500.0 and row["busbw_bps"] == pytest.approx(500.0 * 1.5)
    assert s["stragglers"] == [3] and s["incorrect"] == [1000]
    assert A.summarise([_rank(0, [1.0], [1.0])], 1)["sweep"][0]["busbw_note"] == A.NOT_APPLICABLE


def test_two_gloo_ranks_under_torchrun():
    r = registry.run("allreduce", ranks=2, sizes="4,64", iters=3, quick=True, device="cpu")
    d = r.details
    assert d["backend"] == "gloo" and d["world_size"] == 2 and d["incorrect"] == []
    assert [x["bytes"] for x in d["sweep"]] == [4096, 65536]
    for x in d["sweep"]:
        assert x["busbw_bps"] == pytest.approx(x["algbw_bps"])  # 2(n-1)/n = 1 for two ranks
    assert [x["rank"] for x in d["ranks"]] == [0, 1]
    assert r.verdict == "info" and r.measured == d["sweep"][-1]["busbw_bps"]


def test_the_worker_refuses_to_run_outside_torchrun(monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    with pytest.raises(SystemExit):
        A.main(["--out", "x.json"])


def test_bad_inputs():
    with pytest.raises(SpecError, match="ranks"):
        registry.run("allreduce", ranks=0, device="cpu")
    with pytest.raises(SpecError, match="sizes"):
        A.parse_sizes("0", "cpu", True)
    assert A.parse_sizes("4,1024", "cpu", False) == [4096, 1024 * 1024]
    assert registry.plan("allreduce", ranks=1, device="cpu", quick=True).sizes["backend"] == "gloo"


def test_allreduce_cli_with_one_rank_says_not_applicable(capsys):
    from aiworkbook.cli import main

    assert (
        main(["prove", "allreduce", "--ranks", "1", "--sizes", "4", "--iters", "2", "--device", "cpu"]) == 0
    )
    assert "not applicable" in capsys.readouterr().out


@pytest.mark.gpu
def test_nccl_on_one_gpu_checks_the_sum_and_says_not_applicable():
    r = registry.run("allreduce", ranks=1, sizes="1024", iters=3, device="cuda")
    assert r.details["backend"] == "nccl" and r.details["incorrect"] == []
    assert r.details["sweep"][0]["busbw_bps"] is None and r.measured is None


def test_cpu_ranks_are_bounded_by_the_logical_cpus_before_the_plan(monkeypatch, capsys):
    """A rank is a process that loads torch: on the CPU no more than the logical CPUs (AIWORKBOOK_HOST
    sets them here), refused before the plan is shown or torchrun starts."""
    from aiworkbook.cli import main

    monkeypatch.setenv("AIWORKBOOK_HOST", "threads=3")
    with pytest.raises(SpecError, match=r"1\.\.3 \(logical CPUs"):
        registry.plan("allreduce", ranks=4, device="cpu", quick=True)
    assert registry.plan("allreduce", ranks=3, device="cpu", quick=True).sizes["ranks"] == 3
    assert main(["prove", "allreduce", "--ranks", str(2**31), "--device", "cpu", "--quick"]) == 2
    out = capsys.readouterr()
    assert "field 'ranks'" in out.err and "torchrun" not in out.out + out.err
