"""PyTorch's caching allocator as sizing.cuda_allocator counts it: the rules of
c10/cuda/CUDACachingAllocator.cpp, and on a GPU the real allocator's own count."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from aiworkbook.sizing.cuda_allocator import allocated_bytes, segment_size, slack_bytes

MiB = 1 << 20


def test_a_large_request_counts_its_whole_segment_unless_more_than_1_mib_is_left():
    assert allocated_bytes([462 * MiB]) == 462 * MiB  # a multiple of 2 MiB: exact
    assert allocated_bytes([231 * MiB]) == 232 * MiB  # 1 MiB left: not split, counted
    assert allocated_bytes([229 * MiB + MiB // 2]) == 230 * MiB  # 0.5 MiB left: counted
    assert allocated_bytes([64 * MiB + MiB // 2]) == 64 * MiB + MiB // 2  # 1.5 MiB left: split off
    assert segment_size(231 * MiB) == 232 * MiB and segment_size(3 * MiB) == 20 * MiB


def test_small_requests_round_to_512_bytes():
    assert allocated_bytes([1]) == 512 and allocated_bytes([513, 16384]) == 1024 + 16384
    assert allocated_bytes([0]) == 0  # an empty tensor allocates nothing
    assert slack_bytes([MiB]) == 0  # 1 MiB is still a small-pool request


def test_mid_size_requests_share_20_mib_segments_and_reuse_split_remainders():
    # seven 3 MiB requests: six from one 20 MiB segment (2 MiB left over, split off), the seventh opens
    # another; nothing is counted beyond the requests
    assert allocated_bytes([3 * MiB] * 7) == 21 * MiB
    # two 9.5 MiB requests: the second takes the first segment's 10.5 MiB remainder and leaves 1 MiB,
    # which is not split off, so it is counted
    assert allocated_bytes([19 * MiB // 2] * 2) == 20 * MiB
    # a remainder cached from an earlier segment serves a later request that fits it (best fit): 16 MiB
    # from the 17 MiB left by a 3 MiB request leaves 1 MiB, counted; in a segment of its own it would not be
    assert allocated_bytes([3 * MiB, 16 * MiB]) == 20 * MiB and allocated_bytes([16 * MiB]) == 16 * MiB


_REAL = """
import json, sys, torch
sizes = json.loads(sys.argv[1])
keep = [torch.empty(n, dtype=torch.uint8, device="cuda") for n in sizes]
torch.cuda.synchronize()
print(json.dumps(torch.cuda.memory_allocated()))
"""


@pytest.mark.gpu
@pytest.mark.timeout(180)
def test_the_count_is_the_real_allocators_on_a_gpu():
    """A fresh process (an allocator with nothing cached) allocates the same run of tensors; PyTorch's
    own memory_allocated is what allocated_bytes says."""
    sizes = [231 * MiB, 462 * MiB, 3 * MiB, 19 * MiB // 2, 19 * MiB // 2, 100, 16384, 64 * MiB + MiB // 2]
    sizes += [3 * MiB] * 7 + [16 * MiB]
    env = {k: v for k, v in os.environ.items() if k != "PYTORCH_CUDA_ALLOC_CONF"}  # the default allocator
    out = subprocess.run(
        [sys.executable, "-c", _REAL, json.dumps(sizes)], capture_output=True, text=True, timeout=150, env=env
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout) == allocated_bytes(sizes)
