"""Typed sections of an Estimate: one frozen dataclass per section, one field per figure, its unit in
the field's metadata, None where a figure does not apply (never absent).

Why: widgets and printers read `section.field` and `Section.unit("field")` instead of guessing a unit
from a key's suffix. `to_dict()` keeps the stable JSON of `aiworkbook size --json` (the keys present
depend on the mode, as they always did), and `section["json_key"]` / `.get()` / `in` read that same
JSON view, so code written against the dict shape keeps working.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any, Literal, TypeVar

from aiworkbook.message import Msg

#: Units a figure may carry ("" for labels, verdicts and plain counts).
Unit = Literal[
    "", "B", "B/s", "s", "h", "days", "FLOP", "FLOP/s", "tokens", "tokens/s", "1/s", "$", "$/h", "$/Mtok",
    "J/Mtok", "W", "kWh", "fraction", "ratio",
]  # fmt: skip


def figure(
    unit: Unit = "",
    doc: str = "",
    *,
    default: Any = None,
    group: str | None = None,
    omit_none: bool = False,
    hidden: bool = False,
) -> Any:
    """A dataclass field for one figure: its unit, a one-line doc, the mode group it belongs to (its key
    is in the JSON only for that group), whether a None is left out of the JSON (as it was absent) and
    whether it is an attribute only (`hidden`: never in the JSON, so the pinned keys stay)."""
    meta = {"unit": unit, "doc": doc, "group": group, "omit_none": omit_none, "hidden": hidden}
    return dataclasses.field(default=default, metadata=meta)


def _plain(v: Any) -> Any:
    if isinstance(v, Section):
        return v.to_dict()
    return v.item() if hasattr(v, "item") else v


@dataclasses.dataclass(frozen=True)
class Section:
    """Base of every typed section: attribute access, plus read-only mapping access on the JSON view."""

    def _groups(self) -> frozenset[str] | None:
        """The groups whose fields are in the JSON view; None: every field."""
        return None

    def _json_fields(self) -> Iterator[tuple[str, Any]]:
        groups = self._groups()
        for f in dataclasses.fields(self):
            if f.metadata.get("hidden"):
                continue
            g = f.metadata.get("group")
            if groups is not None and g is not None and g not in groups:
                continue
            v = getattr(self, f.name)
            if v is None and f.metadata.get("omit_none"):
                continue
            yield f.name, v

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON keys of `aiworkbook size --json` for this section."""
        return {k: _plain(v) for k, v in self._json_fields()}

    # ---- mapping view (the JSON keys) ---------------------------------------------------
    def __getitem__(self, key: str) -> Any:
        for k, v in self._json_fields():
            if k == key:
                return v
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return any(k == key for k, _ in self._json_fields())

    def keys(self) -> list[str]:
        return [k for k, _ in self._json_fields()]

    def items(self) -> list[tuple[str, Any]]:
        return list(self._json_fields())

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    # ---- schema -------------------------------------------------------------------------
    @classmethod
    def unit(cls, name: str) -> str:
        """The unit of field `name` ("" for labels and counts); KeyError for an unknown field."""
        for f in dataclasses.fields(cls):
            if f.name == name:
                return str(f.metadata.get("unit", ""))
        raise KeyError(name)

    @classmethod
    def units(cls) -> dict[str, str]:
        return {f.name: str(f.metadata.get("unit", "")) for f in dataclasses.fields(cls)}

    @classmethod
    def docs(cls) -> dict[str, str]:
        return {f.name: str(f.metadata.get("doc", "")) for f in dataclasses.fields(cls)}


def _hidden(default: Any) -> Any:
    return dataclasses.field(default=default, metadata={"hidden": True, "unit": ""})


@dataclasses.dataclass(frozen=True)
class Roofline(Section):
    """Step time and throughput at the GPU's ceilings (lower bounds). Training figures for training
    modes, serving figures for inference; the other group's fields are None. `mode` "none": not computed
    (inference without a GPU)."""

    mode: Literal["train", "infer", "none"] = _hidden("none")
    # training
    flops_per_token: float | None = figure("FLOP", "model FLOPs per token (6N + attention)", group="train")
    model_flops_per_gpu_step: float | None = figure("FLOP", "model FLOPs of one step per GPU", group="train")
    assumed_mfu: float | None = figure("fraction", "model FLOPs utilisation assumed", group="train")
    peak_flops: float | None = figure("FLOP/s", "the GPU's peak at the training precision", group="train")
    step_time_s: float | None = figure("s", "time of one optimizer step", group="train")
    tokens_per_s: float | None = figure("tokens/s", "tokens trained per second, all replicas", group="train")
    # serving
    ttft_s: float | None = figure("s", "time to first token (prefill, no queueing)", group="infer")
    tpot_s: float | None = figure("s", "time per output token at the concurrency", group="infer")
    decode_tokens_per_s: float | None = figure(
        "tokens/s", "decode throughput at the concurrency", group="infer"
    )
    decode_bound: str | None = figure("", "memory or compute: which roof bounds decode", group="infer")
    batch1_tokens_per_s: float | None = figure("tokens/s", "decode throughput of one sequence", group="infer")
    crossover_batch: float | None = figure("", "batch above which decode is compute-bound", group="infer")
    experts_touched_per_layer: float | None = figure("", "MoE experts a decode step reads", group="infer")
    compute_dtype: str | None = figure(
        "", "the dtype whose peak bounds serving (not in the JSON)", hidden=True
    )
    # both modes: tensor parallelism's all-reduces over the scale-up link (aiworkbook.sizing.comm)
    tp_comm_s: float | None = figure("s", "tensor-parallel all-reduce time in one step", omit_none=True)
    tp_comm_formula: str | None = figure("", "how tp_comm_s was computed", omit_none=True)

    def _groups(self) -> frozenset[str] | None:
        return frozenset() if self.mode == "none" else frozenset({self.mode})


@dataclasses.dataclass(frozen=True)
class Fits(Section):
    """Whether the workload fits one GPU, with the budget and headroom; only gpu and fits (None) without a GPU."""

    gpu: str | None = figure("", "the GPU it was checked against")
    usable_bytes: int | None = figure("B", "driver-reported memory", omit_none=True)
    budget_bytes: int | None = figure(
        "B", "bytes the workload may use (utilisation x usable)", omit_none=True
    )
    total_bytes: int | None = figure("B", "itemised total", omit_none=True)
    headroom_bytes: int | None = figure("B", "budget minus total (negative: does not fit)", omit_none=True)
    fits: bool | None = figure("", "total within the budget")

    def margin(self) -> Msg | None:
        """The headroom in words ("58.68 GiB headroom", "short by 646.95 GiB"); None without a GPU."""
        return margin(self.headroom_bytes)


def margin(headroom_bytes: int | None) -> Msg | None:
    """A headroom a person reads: what is left when it fits, what is missing when it does not; never a
    negative headroom. The JSON keeps the signed `headroom_bytes`."""
    if headroom_bytes is None:
        return None
    if headroom_bytes < 0:
        return Msg("fit.short_by", amount=-headroom_bytes)
    return Msg("fit.headroom", amount=headroom_bytes)


@dataclasses.dataclass(frozen=True)
class Dataloader(Section):
    """The rate the input pipeline must sustain so the GPUs never wait."""

    samples_per_s: float | None = figure("1/s", "samples per second")
    bytes_per_s: float | None = figure("B/s", "stored bytes per second")


@dataclasses.dataclass(frozen=True)
class Storage(Section):
    """Checkpoint plan (training) or the served weights' load time (inference)."""

    mode: Literal["train", "infer"] = _hidden("train")
    weights_only_bytes: int | None = figure("B", "a weights-only checkpoint", group="train")
    resumable_bytes: int | None = figure(
        "B", "a resumable checkpoint (weights, master, optimizer)", group="train"
    )
    write_s: float | None = figure("s", "time to write one resumable checkpoint", group="train")
    restore_s: float | None = figure("s", "time to read it back", group="train")
    system_mtbf_s: float | None = figure("s", "mean time between failures of the job's GPUs", group="train")
    young_interval_s: float | None = figure("s", "Young's optimal checkpoint interval", group="train")
    daly_interval_s: float | None = figure("s", "Daly's optimal checkpoint interval", group="train")
    waste_fraction: float | None = figure("fraction", "time lost to checkpoints and failures", group="train")
    goodput: float | None = figure("fraction", "1 - waste", group="train")
    dataloader: Dataloader | None = figure("", "input pipeline rate", group="train", omit_none=True)
    weights_bytes: int | None = figure("B", "the served weights at their dtype", group="infer")
    load_s: float | None = figure("s", "time to load them from storage", group="infer")

    def _groups(self) -> frozenset[str] | None:
        return frozenset({self.mode})


@dataclasses.dataclass(frozen=True)
class RunCost(Section):
    """A whole training run at the token budget, checkpoint waste included."""

    train_tokens: float | None = figure("tokens", "token budget")
    days: float | None = figure("days", "wall-clock days")
    gpu_hours: float | None = figure("h", "GPU-hours, waste included")
    usd: float | None = figure("$", "cost of the GPU-hours")
    usd_lost: float | None = figure("$", "cost of the waste")
    waste_fraction: float | None = figure("fraction", "the storage section's waste fraction")
    energy_kwh: float | None = figure("kWh", "energy at TDP times PUE", omit_none=True)
    energy_usd: float | None = figure("$", "cost of that energy", omit_none=True)


@dataclasses.dataclass(frozen=True)
class Cost(Section):
    """$ and J per million tokens at the roofline's throughput (lower bounds); empty without a GPU."""

    price_per_gpu_hour: float | None = figure("$/h", "price of one GPU-hour")
    gpus: int | None = figure("", "GPUs the workload occupies (tp x dp for training, tp for serving)")
    watts_per_gpu_at_tdp: float | None = figure("W", "board power at TDP (an upper bound)")
    note: str | None = figure("", "why $ figures are missing", omit_none=True)
    usd_per_mtok_trained: float | None = figure("$/Mtok", "training cost per million tokens", omit_none=True)
    joules_per_mtok_trained: float | None = figure(
        "J/Mtok", "training energy per million tokens", omit_none=True
    )
    run: RunCost | None = figure("", "the whole run at --train-tokens", omit_none=True)
    prefill_usd_per_mtok: float | None = figure("$/Mtok", "prefill cost per million tokens", omit_none=True)
    decode_usd_per_mtok: float | None = figure("$/Mtok", "decode cost per million tokens", omit_none=True)
    effective_utilization: float | None = figure("fraction", "utilisation x (1 - headroom)", omit_none=True)
    prefill_tokens_per_s: float | None = figure("tokens/s", "prefill throughput", omit_none=True)
    decode_joules_per_mtok: float | None = figure(
        "J/Mtok", "decode energy per million tokens", omit_none=True
    )
    prefill_joules_per_mtok: float | None = figure(
        "J/Mtok", "prefill energy per million tokens", omit_none=True
    )

    def _json_fields(self) -> Iterator[tuple[str, Any]]:
        return iter(()) if self.gpus is None else super()._json_fields()


@dataclasses.dataclass(frozen=True)
class RulesOfThumb(Section):
    """A bytes-per-parameter rule of thumb beside the itemised total, never instead of it (docs/architecture.md)."""

    rule: str = figure("", "which rule", default="")
    formula: str = figure("", "the rule spelled out", default="")
    bytes: int = figure("B", "the rule's total", default=0)
    itemised_total: int = figure("B", "the itemised memory total", default=0)
    difference_bytes: int = figure("B", "rule minus itemised", default=0)
    ratio_to_itemised: float | None = figure("ratio", "rule over itemised")


SectionT = TypeVar("SectionT", bound="Section")


def from_mapping(cls: type[SectionT], d: Any, **extra: Any) -> SectionT:
    """A section from a dict of its JSON keys (nested sections converted too); unknown keys refused."""
    names = {f.name: f for f in dataclasses.fields(cls)}
    kw: dict[str, Any] = dict(extra)
    for k, v in dict(d).items():
        if k not in names:
            raise KeyError(f"{cls.__name__} has no field {k!r}")
        kw[k] = _plain(v) if not isinstance(v, Section) else v
    return cls(**kw)


@dataclasses.dataclass(frozen=True)
class CheapestGPU(Section):
    """The catalogue GPU on which the workload costs least per million tokens (capacity.cheapest_of)."""

    gpu: str = figure("", "catalogue name", default="")
    gpus: int = figure("", "GPUs needed (tensor parallel)", default=0)
    usd_per_hour: float = figure("$/h", "their price per hour", default=0.0)
    usd_per_mtok: float = figure("$/Mtok", "what the workload costs on them per million tokens", default=0.0)
    basis: str = figure("", "what the ranking compares, in words", default="")
    price_words: str = figure("", "where its price comes from, in words", default="")


@dataclasses.dataclass(frozen=True)
class CapacityReport(Section):
    """What fits on one GPU kind (`aiworkbook fit`): the capacity answers, None where they do not apply
    (max concurrency and context are serving questions)."""

    model: str = figure("", "model name", default="")
    gpu: str = figure("", "the GPU kind", default="")
    fits: bool = figure("", "the workload fits one GPU", default=False)
    max_batch: int = figure("", "largest micro-batch (train) or concurrency (infer) that fits", default=0)
    gpus_needed_tp: int | None = figure(
        "", "smallest tensor-parallel size that fits (None: none the model's heads allow)"
    )
    cheapest_gpu: CheapestGPU | None = figure("", "cheapest catalogue GPU kind for this workload")
    mig_profile: str | None = figure("", "smallest MIG profile that holds it (None: none)")
    max_concurrency: int | None = figure("", "sequences of the context whose KV fits", group="infer")
    max_context: int | None = figure("tokens", "longest context the concurrency fits", group="infer")
    mode: Literal["train", "infer"] = _hidden("train")
    device: str = _hidden("cuda")

    def _groups(self) -> frozenset[str] | None:
        return frozenset({self.mode})
