"""What the embedded server refuses before it loads anything: a model whose weights and KV pool do not
fit the free memory, a port outside 0..65535, a KV budget that is not a finite positive size, a device
that is not auto, cpu, cuda or cuda:N (or a CUDA device this machine lacks). `serve` and
`prove serving` reach these through `build_engine`, so both refuse the same way (exit 2, one line).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.units import MiB

if TYPE_CHECKING:
    from aiworkbook.specs.protocol import ModelSpecLike

#: memory left spare beyond the weights and the KV pool: 10 % of what is free, at least 256 MiB
#: (the activations of a forward, the allocator's slack, torch's own buffers, the server itself).
#: The same rule as vLLM's gpu_memory_utilization=0.9, which leaves a tenth of the device unplanned.
SPARE_FRACTION = 0.10
SPARE_MIN_BYTES = 256 * MiB
PORT_MAX = 65535
KV_BUDGET_MAX_MIB = 2**30
#: Bounds on the scheduler's sizes: far past what one CPU or GPU server decodes or holds (vLLM's
#: defaults are 256 sequences and 8192 tokens), near enough that nothing sized by them grows unbounded.
BATCH_MAX = 65536
QUEUE_MAX = 2**20
TOKENS_MAX = 2**24
_DEVICE = re.compile(r"auto|cpu|cuda(?::(\d{1,4}))?")


def spare_bytes(free: int) -> int:
    """The safety margin kept free out of `free` bytes."""
    return max(int(free * SPARE_FRACTION), SPARE_MIN_BYTES)


def usable_bytes(free: int) -> int:
    """What the weights and the KV pool may take out of `free` bytes: free less the margin."""
    return max(0, int(free) - spare_bytes(free))


def check_port(port: Any) -> int:
    """0 (a free port) .. 65535."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= PORT_MAX:
        raise SpecError("port", port, Msg("allowed.port", high=PORT_MAX))
    return port


def kv_budget_bytes(mib: Any) -> int | None:
    """--kv-budget-mib as bytes (None stays None: the default budget); finite, positive, at most
    KV_BUDGET_MAX_MIB (a pebibyte: past any machine, and a bound that keeps the bytes an integer)."""
    if mib is None:
        return None
    if isinstance(mib, bool) or not isinstance(mib, int | float) or not (0 < mib <= KV_BUDGET_MAX_MIB):
        raise SpecError("kv_budget_mib", mib, Msg("allowed.kv_budget_mib", high=KV_BUDGET_MAX_MIB))
    return int(mib * MiB)


def check_batching(max_batch: Any, max_queue: Any, max_batched_tokens: Any | None = None) -> None:
    """The scheduler's sizes, checked before anything is loaded: max_batch 1..BATCH_MAX, max_queue
    0..QUEUE_MAX, max_batched_tokens (None: the engine's default) max_batch..TOKENS_MAX (every running
    sequence's decode token must fit one forward)."""
    for name, v, lo, hi in (("max_batch", max_batch, 1, BATCH_MAX), ("max_queue", max_queue, 0, QUEUE_MAX)):
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise SpecError(name, v, Msg("allowed.int_dots", low=lo, high=hi))
    t = max_batched_tokens
    if t is not None and (isinstance(t, bool) or not isinstance(t, int) or not max_batch <= t <= TOKENS_MAX):
        raise SpecError(
            "max_batched_tokens", t, Msg("allowed.batched_tokens", low=max_batch, high=TOKENS_MAX)
        )


def serve_device(device: Any) -> str:
    """'cpu', 'cuda' or 'cuda:N' for the server's tensors: 'auto' picks CUDA when present; a CUDA device
    this machine does not have is an error that says what it has."""
    text = str(device).strip().lower()
    m = _DEVICE.fullmatch(text)
    if m is None:
        raise SpecError("device", device, "auto, cpu, cuda or cuda:N")
    if text == "cpu":
        return "cpu"
    from aiworkbook.proofs.device import cuda_available

    has_cuda = cuda_available()
    if text == "auto":
        return "cuda" if has_cuda else "cpu"
    if not has_cuda:
        raise SpecError("device", device, Msg("allowed.serve_no_cuda"))
    if m.group(1) is not None:
        import torch

        n = int(torch.cuda.device_count())
        if int(m.group(1)) >= n:
            raise SpecError("device", device, Msg("allowed.cuda_index", last=n - 1, n=n))
    return text


def free_bytes(device: str) -> tuple[int, str]:
    """(bytes free, where the figure comes from) on `device`: psutil's available memory on the CPU,
    torch.cuda.mem_get_info (plus this process's cached, unused blocks) on CUDA (proofs.device)."""
    from aiworkbook.proofs.device import free_memory

    if device == "cpu":
        return free_memory("cpu")[0], "psutil's available host memory"
    import torch

    with torch.cuda.device(torch.device(device)):  # cuda:N: free_memory reads the current device
        return free_memory("cuda")[0], f"free on {device} (torch.cuda.mem_get_info)"


def weights_bytes(spec: ModelSpecLike, dtype: str) -> int:
    """The bytes the torch backend allocates for `spec`'s weights at `dtype` (proofs.model.built_bytes).
    Not the sizing library's inference weights: those follow a checkpoint's quantisation (fp8, mxfp4),
    while the backend builds every weight at `dtype`: a quantised config was under-counted 2 to 3x."""
    from aiworkbook.proofs.model import TORCH_DTYPES, built_bytes

    return built_bytes(spec, TORCH_DTYPES[dtype])


def check_memory(
    name: str,
    weights: int,
    kv_pool: int,
    device: str,
    dtype: str,
    free: int | None = None,
    source: str = "",
) -> int:
    """Refuse (WouldNotFit, exit 2 on the command line) before loading when the weights and the KV pool
    need more than the free memory less the safety margin. `free` injects the figure (tests);
    None reads it from the device. Returns the bytes needed."""
    from aiworkbook.proofs.device import WouldNotFit

    if free is None:
        free, source = free_bytes(device)
    need = int(weights) + int(kv_pool)
    margin = spare_bytes(free)
    if need > free - margin:
        said = Msg("fit.source", source=source) if source else ""
        raise WouldNotFit(
            Msg(
                "fit.server",
                model=name,
                device=device,
                need=need,
                weights=int(weights),
                dtype=dtype,
                kv=int(kv_pool),
                margin=margin,
                free=free,
                source=said,
            )
        )
    return need
