"""The catalogue's CUDA-visible totals (what cudaMemGetInfo / torch reports, vLLM's total_gpu_memory) against
the driver totals beside them and the public figures their sources quote."""

from __future__ import annotations

import re

import pytest

from aiworkbook.sizing.vllm import cuda_total_bytes
from aiworkbook.specs import list_gpus

GiB = 1 << 30
WITH_CUDA = [g for g in list_gpus() if g.cuda_memory_bytes is not None]
WITHOUT_CUDA = [g for g in list_gpus() if g.cuda_memory_bytes is None]


def _quoted(source: str) -> tuple[float, float]:
    """The CUDA-visible total the source quotes, in bytes, and half a unit of its last printed digit."""
    exact = re.search(r"CUDA-visible total ([\d,]+) bytes", source)
    if exact:
        return float(exact.group(1).replace(",", "")), 0.5
    m = re.search(r"CUDA-visible total (\d+\.(\d+)) GiB", source)
    assert m, "the source quotes the CUDA-visible total it was taken from"
    return float(m.group(1)) * GiB, 0.5 * 10 ** -len(m.group(2)) * GiB


def test_some_gpus_have_a_cuda_total_and_the_newly_sourced_ones_are_among_them():
    assert {"H200-SXM", "B200", "L4"} <= {g.name for g in WITH_CUDA}


@pytest.mark.parametrize("gpu", WITH_CUDA, ids=[g.name for g in WITH_CUDA])
def test_cuda_total_is_a_little_below_the_driver_total(gpu):
    # CUDA sees the driver's total less its own reservations: never more, and never a tenth less
    assert 0.9 * gpu.usable_memory_bytes < gpu.cuda_memory_bytes <= gpu.usable_memory_bytes
    assert cuda_total_bytes(gpu) == gpu.cuda_memory_bytes


@pytest.mark.parametrize("gpu", WITH_CUDA, ids=[g.name for g in WITH_CUDA])
def test_cuda_total_matches_the_figure_its_source_quotes(gpu):
    quoted, half_unit = _quoted(gpu.source)
    assert abs(gpu.cuda_memory_bytes - quoted) <= half_unit, (gpu.cuda_memory_bytes, quoted)
    assert "github.com/" in gpu.source.split("CUDA-visible total", 1)[1]  # a public thread or file


@pytest.mark.parametrize("gpu", WITHOUT_CUDA, ids=[g.name for g in WITHOUT_CUDA])
def test_without_a_cuda_total_vllm_falls_back_to_the_driver_total(gpu):
    assert "no public figure" in gpu.source or "not recorded" in gpu.source
    assert cuda_total_bytes(gpu) == gpu.usable_memory_bytes


def test_specs_doc_table_lists_every_cuda_total():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "specs.md").read_text()
    rows = {line.split("|")[1].strip(): line for line in doc.splitlines() if line.startswith("| ")}
    for gpu in WITH_CUDA:
        quoted, _ = _quoted(gpu.source)
        exact = f"{int(quoted):,} B"
        printed = re.search(r"CUDA-visible total ([\d.]+) GiB", gpu.source)
        assert gpu.name in rows, gpu.name
        assert (exact if not printed else f"{printed.group(1)} GiB") in rows[gpu.name], gpu.name
