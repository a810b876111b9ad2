"""Peak memory by accounting, for the CPU (where no allocator reports a peak): count the tensors.

Model states are read from the objects that hold them (parameters, `.grad`, the optimizer's state
tensors); activations are the unique storages autograd saves for backward, seen through
torch.autograd.graph.saved_tensors_hooks, parameters excluded. Storages are keyed by data pointer,
so views and tensors saved by several ops count once.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch


def _storage_key(t: torch.Tensor) -> tuple[str, int, int] | None:
    try:
        s = t.untyped_storage()
    except (RuntimeError, NotImplementedError):  # sparse / nested / wrapper tensors have none we can read
        return None
    return (str(t.device), s.data_ptr(), s.nbytes())


def unique_bytes(tensors) -> int:
    """Bytes of the distinct storages behind some tensors (each storage once, however many views)."""
    seen = {}
    for t in tensors:
        if t is None:
            continue
        key = _storage_key(t)
        if key is not None:
            seen[key[:2]] = key[2]
    return sum(seen.values())


class SavedTensorTracker:
    """Record every storage autograd saves for backward inside the `with` block, by phase.

    `exclude` are tensors (the parameters) whose storages are not activations. `note(t)` adds tensors
    that a checkpoint keeps alive outside the hooks' sight. A storage belongs to the first phase that saved it.
    """

    def __init__(self, exclude=()) -> None:
        self._exclude = {k[:2] for k in (_storage_key(t) for t in exclude) if k is not None}
        self.storages: dict[tuple[str, int], tuple[int, str]] = {}
        self._phase = "activations"
        self._ctx: Any = None

    def _record(self, t: torch.Tensor) -> None:
        key = _storage_key(t)
        if key is None or key[:2] in self._exclude or key[:2] in self.storages:
            return
        self.storages[key[:2]] = (key[2], self._phase)

    def _pack(self, t: torch.Tensor) -> torch.Tensor:
        self._record(t)
        return t

    @staticmethod
    def _unpack(t: torch.Tensor) -> torch.Tensor:
        return t

    def note(self, *tensors: torch.Tensor) -> None:
        for t in tensors:
            if isinstance(t, torch.Tensor):
                self._record(t)

    @contextmanager
    def phase(self, name: str):
        before, self._phase = self._phase, name
        try:
            yield
        finally:
            self._phase = before

    def bytes(self, phase: str | None = None) -> int:
        return sum(n for n, p in self.storages.values() if phase is None or p == phase)

    def by_phase(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for n, p in self.storages.values():
            out[p] = out.get(p, 0) + n
        return out

    def __enter__(self) -> SavedTensorTracker:
        self._ctx = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._ctx.__exit__(*exc)
        self._ctx = None


@dataclass(frozen=True)
class ModelStates:
    """Bytes held by the model's parameters, their gradients and the optimizer state (per-tensor counts too)."""

    weights: int
    gradients: int
    optimizer: int
    param_tensors: int
    optimizer_tensors: int

    @property
    def total(self) -> int:
        return self.weights + self.gradients + self.optimizer


def model_states(model: torch.nn.Module, optimizer: torch.optim.Optimizer | None = None) -> ModelStates:
    """Count what the objects hold right now (call it after optimizer.step(), before zero_grad)."""
    params = list({id(p): p for p in model.parameters()}.values())
    opt_tensors: list[Any] = []
    if optimizer is not None:
        for state in optimizer.state.values():
            opt_tensors.extend(v for v in state.values() if isinstance(v, torch.Tensor))
    return ModelStates(
        weights=unique_bytes(params),
        gradients=unique_bytes(p.grad for p in params),
        optimizer=unique_bytes(opt_tensors),
        param_tensors=len(params),
        optimizer_tensors=len(opt_tensors),
    )


class StepTemporaryTracker:
    """The peak bytes of temporaries alive at once inside the `with` block: every storage an op creates
    (not one of its inputs', so in-place ops and views count nothing), counted from its creation until
    the storage dies (a weakref finalizer on the storage, whose Python object torch keeps while any
    tensor holds it). The CPU has no allocator peak to read, so the
    optimizer step's temporaries (foreach's sqrt(exp_avg_sq) of the whole group) are measured this way;
    on CUDA torch.cuda.max_memory_allocated sees them. Seen at the dispatcher (TorchDispatchMode), so a
    foreach op is one op whatever its kernel does inside."""

    def __init__(self) -> None:
        self.live: dict[tuple[str, int], int] = {}
        self.now = 0
        self.peak = 0
        self._mode: Any = None

    def _free(self, key: tuple[str, int]) -> None:
        self.now -= self.live.pop(key, 0)

    def _seen(self, out: Any, inputs: set) -> None:
        import weakref

        for t in torch.utils._pytree.tree_leaves(out):
            key = _storage_key(t) if isinstance(t, torch.Tensor) else None
            if key is None or key[:2] in inputs or key[:2] in self.live:
                continue
            self.live[key[:2]] = key[2]
            self.now += key[2]
            self.peak = max(self.peak, self.now)
            # the storage's own lifetime: torch preserves a storage's Python object while any tensor
            # (a view, a Parameter, a detached alias) still holds it
            weakref.finalize(t.untyped_storage(), self._free, key[:2])

    def __enter__(self) -> StepTemporaryTracker:
        from torch.utils._python_dispatch import TorchDispatchMode

        tracker = self

        class _Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                leaves = torch.utils._pytree.tree_leaves((args, kwargs or {}))
                inputs = {
                    k[:2] for k in (_storage_key(t) for t in leaves if isinstance(t, torch.Tensor)) if k
                }
                out = func(*args, **(kwargs or {}))
                tracker._seen(out, inputs)
                return out

        self._mode = _Mode()
        self._mode.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._mode.__exit__(*exc)
        self._mode = None
