"""PyTorch's CUDA caching allocator as its `allocated_bytes` statistic counts a run of allocations.

vLLM's "Model loading took N GiB" is that statistic before and after the weights are built
(DeviceMemoryProfiler in vllm/utils/mem_utils.py: `current_platform.get_current_memory_usage`, which
is `torch.cuda.reset_peak_memory_stats(); torch.cuda.max_memory_allocated()` in
vllm/platforms/cuda.py, v0.19.0; V0's CudaMemoryProfiler read the same). The statistic counts the
blocks handed out, not the bytes asked for (`increase_stat(stats.allocated_bytes[...], block->size)`
in `DeviceCachingAllocator::malloc`, c10/cuda/CUDACachingAllocator.cpp), and a block can be larger
than the request:

- every request rounds up to 512 B (kMinBlockSize); one of at most 1 MiB (kSmallSize) comes from the
  small pool, whose blocks are split to that size (remaining >= 512 B), so nothing more is counted;
- a larger one takes the smallest cached free block that fits, else a new segment of
  `get_allocation_size(size)`: 20 MiB (kLargeBuffer) below 10 MiB (kMinLargeAlloc), otherwise the
  size rounded up to 2 MiB (kRoundLarge);
- `should_split` splits a large-pool block only when more than 1 MiB (kSmallSize) would remain;
  otherwise the whole block is handed out and counted.

So a 231 MiB tensor (Qwen2.5-72B's down projection at tensor parallel 2) takes a 232 MiB segment
whole and counts 1 MiB more than its bytes; a 462 MiB one counts exactly. Not modelled: expandable
segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True splits whenever 512 B remain, so nothing
extra is counted; vLLM does not set it) and `max_split_size_mb` (unset by default: no limit).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterable

MIN_BLOCK = 512  # kMinBlockSize
SMALL_SIZE = 1 << 20  # kSmallSize: the largest small-pool request, and the split threshold
LARGE_BUFFER = 20 << 20  # kLargeBuffer: the segment a 1-10 MiB request opens
MIN_LARGE_ALLOC = 10 << 20  # kMinLargeAlloc
ROUND_LARGE = 2 << 20  # kRoundLarge


def round_size(size: int) -> int:
    """A request's size as the allocator takes it (round_size: a multiple of 512 B, at least 512)."""
    return max(MIN_BLOCK, -(-size // MIN_BLOCK) * MIN_BLOCK)


def segment_size(size: int) -> int:
    """The cudaMalloc a large request opens when no cached block fits (get_allocation_size)."""
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return -(-size // ROUND_LARGE) * ROUND_LARGE


def allocated_bytes(sizes: Iterable[int]) -> int:
    """What `torch.cuda.memory_allocated` reports after allocating `sizes` (bytes, in order, none
    freed) on a fresh allocator and one stream: each large request takes the best-fitting cached free
    block (a split-off remainder of an earlier segment) or a new segment, and counts the whole block
    unless more than 1 MiB is split off."""
    free: list[int] = []  # the large pool's cached free blocks, sorted by size
    total = 0
    for asked in sizes:
        if asked <= 0:  # an empty tensor allocates nothing
            continue
        size = round_size(asked)
        if size <= SMALL_SIZE:
            total += size
            continue
        i = bisect_left(free, size)
        block = free.pop(i) if i < len(free) else segment_size(size)
        if block - size > SMALL_SIZE:  # should_split: the remainder stays cached, free
            insort(free, block - size)
            total += size
        else:
            total += block
    return total


def slack_bytes(sizes: Iterable[int]) -> int:
    """The bytes `allocated_bytes` counts beyond the requests themselves."""
    sizes = list(sizes)
    return allocated_bytes(sizes) - sum(s for s in sizes if s > 0)
