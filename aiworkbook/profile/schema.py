"""The boundary a hand-edited profile (or a proof result given to `check --results`) crosses before
check or report reads it: every number finite and within 64 bits, nesting bounded, and the parts
check and report read typed strictly (no "1" for 1, no "false" for false, no negative bytes).

A locked profile's estimates and proof results are stored as the JSON their producers wrote
(Estimate.to_dict(), ProofResult.to_dict()); the strict models here name the fields the report and the
check read and let the rest through (`extra="allow"`), so a newer producer's extra keys still load."""

from __future__ import annotations

import dataclasses
import math
from functools import cache
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from aiworkbook.errors import SpecError
from aiworkbook.proofs.stats import Stats

#: JSON nested deeper than this is refused (a profile is about 6 levels deep; a result's details ~8).
MAX_DEPTH = 64
#: Integers beyond a signed 64-bit range are refused: no byte count or token count is that large, and
#: float(x) of a 400-digit integer overflows.
MAX_INT = 2**63 - 1

#: A name, a model, a GPU, a unit: what a chart labels. Past a few hundred characters it is no name,
#: and vl-convert takes minutes to lay out a 300,000-character label (found by tests/test_profile_fuzz.py).
MAX_NAME = 200
Name = Annotated[str, Field(max_length=MAX_NAME)]
NonNegInt = Annotated[int, Field(ge=0)]
NonNegFloat = Annotated[float, Field(ge=0)]


def scan(doc: Any, *, source: str | None = None, where: str = "") -> None:
    """Refuse NaN/Infinity (JSON has neither; Python's reader takes them and 1e400 as inf), integers past
    64 bits and nesting deeper than MAX_DEPTH, naming the field (`proofs.0.result.measured`)."""
    stack: list[tuple[Any, str, int]] = [(doc, where, 0)]
    while stack:
        v, at, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise SpecError(
                at or "document", f"nested {depth} levels deep", f"at most {MAX_DEPTH}", source=source
            )
        if isinstance(v, bool) or v is None or isinstance(v, str):
            continue
        if isinstance(v, float):
            if not math.isfinite(v):
                raise SpecError(
                    at or "document", v, "a finite number (JSON has no NaN or Infinity)", source=source
                )
        elif isinstance(v, int):
            if abs(v) > MAX_INT:
                raise SpecError(at or "document", v, "an integer within ±(2**63 - 1)", source=source)
        elif isinstance(v, dict):
            stack.extend((x, f"{at}.{k}" if at else str(k), depth + 1) for k, x in v.items())
        elif isinstance(v, list | tuple):
            stack.extend((x, f"{at}.{i}" if at else str(i), depth + 1) for i, x in enumerate(v))


class _Doc(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow", allow_inf_nan=False)


class _Fits(_Doc):
    gpu: Name | None = None
    fits: bool | None = None
    headroom_bytes: int | None = None
    budget_bytes: NonNegInt | None = None

    @model_validator(mode="after")
    def _sized(self) -> _Fits:
        if self.gpu and self.headroom_bytes is None:  # the headline says the headroom on that GPU
            raise SpecError("headroom_bytes", None, "an integer (bytes) when a GPU is named")
        return self


class _Rule(_Doc):
    formula: str
    bytes: NonNegInt


class _Run(_Doc):
    usd: NonNegFloat | None = None


class _Cost(_Doc):
    decode_usd_per_mtok: NonNegFloat | None = None
    prefill_usd_per_mtok: NonNegFloat | None = None
    usd_per_mtok_trained: NonNegFloat | None = None
    price_per_gpu_hour: NonNegFloat | None = None
    gpus: NonNegInt | None = None
    run: _Run | None = None
    note: str = ""


class _Shape(_Doc):
    """The workload as the estimate saw it (Workload.to_dict()): the figures the report's headline reads."""

    mode: str
    batch: NonNegInt = 1
    seq_len: NonNegInt = 0
    new_tokens: NonNegInt = 0
    concurrency: NonNegInt = 1
    context: NonNegInt | None = None
    tp: Annotated[int, Field(ge=1)] = 1
    dp: Annotated[int, Field(ge=1)] = 1


class EstimateDoc(_Doc):
    """Estimate.to_dict() as a profile stores it."""

    model: Name
    gpu: Name | None = None
    device: Name
    workload: _Shape
    memory: dict[Name, NonNegInt]
    formulas: dict[str, str] = {}
    rules_of_thumb: _Rule | None = None
    fits: _Fits | None = None
    cost: _Cost | None = None

    @model_validator(mode="after")
    def _total(self) -> EstimateDoc:
        if "total" not in self.memory:  # the memory table's last row and the chart's stack
            raise SpecError("memory.total", "(missing)", "the total bytes of the breakdown")
        return self


class _NotAvailable(_Doc):
    """An NVML value that could not be read, as the environment stores it: {"na": why}."""

    na: Name


class _Gpu(_Doc):
    name: Name | _NotAvailable | None = None
    driver: Name | _NotAvailable | None = None


class _Env(_Doc):
    gpus: list[_Gpu] = []
    gpu_status: str | None = None
    host: dict[str, Any] = {}
    torch: dict[str, Any] = {}


class _SweepRow(_Doc):
    load: float
    throughput_tok_s: NonNegFloat
    p50_ttft_s: NonNegFloat | None = None
    p95_ttft_s: NonNegFloat | None = None
    p99_ttft_s: NonNegFloat | None = None
    p95_tpot_s: NonNegFloat | None = None
    p99_tpot_s: NonNegFloat | None = None


class _Details(_Doc):
    sweep: list[_SweepRow] | None = None
    knee: float | None = None
    chart: list[dict[str, Any]] | None = None


class ResultDoc(_Doc):
    """ProofResult.to_dict() as a profile or a result file stores it."""

    proof: Annotated[str, Field(min_length=1, max_length=MAX_NAME)]
    device: Name
    inputs: dict[str, Any] = {}
    measured: NonNegFloat | None = None
    unit: Name = ""
    predicted: NonNegFloat | None = None
    predicted_label: Name = ""
    ratio: NonNegFloat | None = None
    tolerance: NonNegFloat = 0.10
    verdict: str = ""  # "" or one of proofs.result.VERDICTS (the one list, checked below)
    samples: list[float] = []
    stats: Stats | None = None  # a dict in the file, read as the one Stats (_stats)
    flags: list[str] = []
    environment: _Env = _Env()
    details: _Details = _Details()
    notes: list[str] = []
    created: str = ""

    @field_validator("stats", mode="before")
    @classmethod
    def _stats(cls, v: Any) -> Any:
        """A stored dict read as proofs.stats.Stats (its `spread` is derived, so not read back)."""
        if isinstance(v, dict):
            from pydantic import ValidationError

            try:
                return Stats(**{k: x for k, x in v.items() if k != "spread"})
            except (TypeError, ValidationError) as exc:
                err = exc.errors()[0] if isinstance(exc, ValidationError) else None
                where = ".".join(str(x) for x in err["loc"]) if err else "stats"
                raise ValueError(f"{where}: {err['msg'] if err else exc}") from None
        return v

    @field_validator("verdict")
    @classmethod
    def _known_verdict(cls, v: str) -> str:
        from aiworkbook.proofs.result import VERDICTS

        if v and v not in VERDICTS:
            raise ValueError("one of " + ", ".join(repr(x) for x in VERDICTS))
        return v


@cache
def _adapter(cls: type) -> TypeAdapter:
    return TypeAdapter(cls)


def check_dataclass(cls: type, doc: Any, *, field: str = "", source: str | None = None) -> None:
    """`doc` must build `cls` (Workload, Assumptions) with the types its fields declare, strictly (no "1"
    for 1, no null for a count), and pass its own checks; a SpecError names `field`.<key>."""
    import json

    from aiworkbook.persist import validation_error

    if isinstance(doc, dict):
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(str(k) for k in doc if k not in known)
        if unknown:
            where = f"{field}.{unknown[0]}" if field else unknown[0]
            raise SpecError(
                where, "(unknown)", f"a field of {cls.__name__}: {', '.join(sorted(known))}", source=source
            )
    try:
        _adapter(cls).validate_json(json.dumps(doc), strict=True)
    except ValidationError as exc:
        raise validation_error(exc, source=source, prefix=field) from None
    except (OverflowError, ArithmeticError, TypeError) as exc:
        raise SpecError(
            field or cls.__name__, type(exc).__name__, f"{cls.__name__} fields", source=source
        ) from None


def check_part(model: type[BaseModel], doc: Any, *, field: str, source: str | None = None) -> None:
    """Validate one stored part strictly; a SpecError names `field`.<the failing key> and its value."""
    from aiworkbook.persist import validation_error

    try:
        model.model_validate(doc)
    except ValidationError as exc:
        raise validation_error(exc, source=source, prefix=field) from None


def check_document(body: Any, *, source: str | None = None) -> None:
    """Scan a profile body, then check each stored estimate and proof result strictly (the rest is the
    LockedProfile model's, validated strictly after this)."""
    scan(body, source=source)
    if not isinstance(body, dict):
        return
    ests = body.get("estimates")
    if isinstance(ests, dict):
        from aiworkbook.sizing import Workload

        for name, est in ests.items():
            check_part(EstimateDoc, est, field=f"estimates.{name}", source=source)
            check_dataclass(Workload, est["workload"], field=f"estimates.{name}.workload", source=source)
    proofs = body.get("proofs")
    if isinstance(proofs, list):
        for i, g in enumerate(proofs):
            if isinstance(g, dict) and "result" in g:
                check_part(ResultDoc, g["result"], field=f"proofs.{i}.result", source=source)
