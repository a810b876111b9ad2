"""A block-based KV pool (vLLM's PagedAttention bookkeeping): fixed-size blocks of `block_size`
tokens, a free count, per-sequence reservations, the peak in use. Sized in bytes from the sizing
engine's KV bytes per token, so the pool's capacity is the estimate the proof compares against."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg

#: the most blocks a pool keeps ids for (its free list is a Python list: 2**20 ids are ~40 MB); a budget
#: past it is a typo or infinity, not a pool (tiny-llama's 32 KiB fp32 blocks: 32 GiB)
MAX_BLOCKS = 2**20


def blocks_for(tokens: int, block_size: int) -> int:
    return -(-int(tokens) // int(block_size))


@dataclass
class BlockPool:
    """`num_blocks` blocks of `block_size` tokens, each `bytes_per_block` bytes (all layers, K and V)."""

    num_blocks: int
    block_size: int = 16
    bytes_per_block: int = 0
    used: int = 0
    peak: int = 0

    def __post_init__(self) -> None:
        if self.num_blocks < 1:
            raise SpecError("kv_blocks", self.num_blocks, Msg("allowed.kv_blocks_min"))
        if self.num_blocks > MAX_BLOCKS:
            raise SpecError("kv_blocks", self.num_blocks, Msg("allowed.kv_blocks_max", high=MAX_BLOCKS))
        if self.block_size < 1:
            raise SpecError("block_size", self.block_size, Msg("allowed.tokens_min1"))
        self._lock = threading.Lock()
        self._free = list(range(self.num_blocks - 1, -1, -1))  # block ids; pop() hands out the lowest

    @classmethod
    def from_budget(cls, budget_bytes: int, kv_bytes_per_token: int, block_size: int = 16) -> BlockPool:
        """As many blocks as fit `budget_bytes` at the estimate's KV bytes per token."""
        if kv_bytes_per_token < 1:
            raise SpecError("kv_bytes_per_token", kv_bytes_per_token, Msg("allowed.decoder_kv"))
        per_block = int(kv_bytes_per_token) * block_size
        return cls(int(budget_bytes) // per_block, block_size, per_block)

    @property
    def free(self) -> int:
        return self.num_blocks - self.used

    def try_reserve(self, n: int) -> list[int] | None:
        """The ids of n free blocks, now reserved; None (nothing reserved) when fewer are free."""
        with self._lock:
            if n > len(self._free):
                return None
            ids = [self._free.pop() for _ in range(n)]
            self.used += n
            self.peak = max(self.peak, self.used)
            return ids

    def release(self, ids: list[int]) -> None:
        with self._lock:
            self._free.extend(ids)
            self.used -= len(ids)

    def reset_peak(self) -> None:
        with self._lock:
            self.peak = self.used

    def to_dict(self) -> dict[str, int]:
        return {
            "kv_blocks_total": self.num_blocks,
            "kv_blocks_used": self.used,
            "kv_blocks_peak": self.peak,
            "kv_block_size_tokens": self.block_size,
            "kv_bytes_per_block": self.bytes_per_block,
            "kv_bytes_used": self.used * self.bytes_per_block,
            "kv_bytes_peak": self.peak * self.bytes_per_block,
            "kv_bytes_total": self.num_blocks * self.bytes_per_block,
        }
