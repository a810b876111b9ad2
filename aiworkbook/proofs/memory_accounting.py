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
