"""LockedProfile: the decision written down (pattern, node, workloads, estimates, golden proofs,
tolerances), validated by pydantic, written atomically and read back with a clear error."""

from __future__ import annotations

import datetime as _dt
import os
from typing import Any

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.profile.fingerprint import Fingerprint
from aiworkbook.profile.gpu_facts import NvmlFacts
from aiworkbook.profile.schema import MAX_NAME
from aiworkbook.specs.node import NodeProfile, Pattern

KIND = "aiworkbook.locked-profile"
SCHEMA_VERSION = 1
#: Default tolerance of a golden proof: pass within 10 %, drift up to 25 %, fail beyond.
DEFAULT_PASS = 0.10
DEFAULT_FAIL = 0.25


class Tolerance(BaseModel):
    """How far a re-measured figure may move from the locked one: |now/locked - 1| <= pass_within
    passes, <= fail_beyond drifts, beyond fails."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    pass_within: float = Field(default=DEFAULT_PASS, ge=0, allow_inf_nan=False)
    fail_beyond: float = Field(default=DEFAULT_FAIL, ge=0, allow_inf_nan=False)

    @field_validator("fail_beyond")
    @classmethod
    def _ordered(cls, v: float, info: ValidationInfo) -> float:
        low = info.data.get("pass_within")
        if low is not None and v < low:
            raise ValueError(f"must be >= pass_within ({low})")
        return v


class ModelConfig(BaseModel):
    """A local model's config.json carried inside the profile (with its sha256 over the canonical JSON,
    aiworkbook.specs.catalog.config_sha256), so check and report work after the folder moved and from
    any directory, and an edit after locking is caught."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    #: the absolute folder it was read from when locked: what the vLLM snippet serves
    path: str = Field(default="", max_length=4096)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    content: dict[str, Any]

    @model_validator(mode="after")
    def _unchanged(self) -> ModelConfig:
        from aiworkbook.specs.catalog import config_sha256
        from aiworkbook.specs.reader import spec_from_config

        actual = config_sha256(self.content)
        if actual != self.sha256:
            raise SpecError("sha256", self.sha256, Msg("allowed.embedded_sha", sha=actual))
        try:  # it must read as a model; the SpecError names the config key under `content`
            spec_from_config(self.content, source="the embedded config")
        except SpecError as exc:
            raise SpecError(f"content.{exc.field}", exc.value, exc.allowed) from None
        except (TypeError, KeyError, AttributeError, IndexError, ArithmeticError) as exc:
            raise SpecError("content", type(exc).__name__, Msg("allowed.config_model")) from None
        return self


class WorkloadEntry(BaseModel):
    """One workload: a model (a preset, or a local model's name with its config embedded), its shape
    (Workload.to_dict()) and the GPU sized."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str = Field(min_length=1, max_length=MAX_NAME)
    model: str = Field(min_length=1, max_length=MAX_NAME)
    gpu: str | None = Field(default=None, max_length=MAX_NAME)
    device: str = Field(default="cuda", max_length=MAX_NAME)
    workload: dict[str, Any]
    #: Assumptions overrides (price, storage speed, train_tokens for the run cost ...), on top of the node's
    assumptions: dict[str, Any] = {}
    #: a non-preset model's config.json (None for a preset)
    config: ModelConfig | None = None

    @model_validator(mode="after")
    def _model_known(self) -> WorkloadEntry:
        from aiworkbook.specs import list_presets

        if self.config is None and self.model not in list_presets():
            raise SpecError(
                "model",
                self.model,
                "a preset (aiworkbook models), or a local model with its config.json embedded under "
                "'config' (aiworkbook lock embeds it from `size --json` or a model folder)",
            )
        return self

    def spec(self):
        """The ModelSpec: the preset's, or the embedded config's (no file is read for a local model)."""
        from aiworkbook.specs import load_model
        from aiworkbook.specs.reader import spec_from_config

        if self.config is None:
            return load_model(self.model)
        return spec_from_config(self.config.content, name=self.model, source=f"workload '{self.name}' config")

    def served_model(self) -> str:
        """What `vllm serve` takes: the preset's Hugging Face repository id, or the local model's folder."""
        from aiworkbook.specs.catalog import hf_repo

        if self.config is not None:
            return self.config.path or self.model
        return hf_repo(self.model) or self.model

    @field_validator("workload", "assumptions")
    @classmethod
    def _builds(cls, v: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        """The dict must build a sizing Workload / Assumptions (their own checks, as one message)."""
        from aiworkbook.profile.schema import check_dataclass
        from aiworkbook.sizing import Assumptions, Workload

        target = Workload if info.field_name == "workload" else Assumptions
        check_dataclass(target, v)  # each field's declared type, strictly (SpecError names the key)
        try:
            target(**v)
        except TypeError as exc:
            raise ValueError(f"not {target.__name__} fields: {exc}") from None
        except (OverflowError, ArithmeticError) as exc:
            raise ValueError(f"numbers {target.__name__} can compute with ({exc})") from None
        return v  # a SpecError passes through: validation_error names its field under this one

    def to_workload(self):
        from aiworkbook.sizing import Workload

        return Workload(**self.workload)


class GoldenProof(BaseModel):
    """A proof result locked as the reference, with the inputs that re-run it."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str = Field(min_length=1, max_length=MAX_NAME)
    proof: str = Field(min_length=1, max_length=MAX_NAME)
    inputs: dict[str, Any] = {}
    result: dict[str, Any]

    @field_validator("result")
    @classmethod
    def _valid_result(cls, v: dict[str, Any]) -> dict[str, Any]:
        from aiworkbook.profile.schema import ResultDoc, check_part
        from aiworkbook.proofs.result import ProofResult

        check_part(ResultDoc, v, field="result")
        try:
            ProofResult.from_dict(v)
        except SpecError:
            raise
        except (TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"not a proof result: {exc}") from None
        return v

    def to_result(self):
        from aiworkbook.proofs.result import ProofResult

        return ProofResult.from_dict(self.result)


class NodeSection(BaseModel):
    """The node as declared (a reference profile) and as detected, and the detected fingerprint."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    declared: NodeProfile | None = None
    detected: NodeProfile | None = None
    fingerprint: Fingerprint
    #: driver, CUDA driver, VBIOS and MIG layout as NVML read them when locked on a GPU (`check
    #: --passive` compares them); None: not recorded (locked without a GPU, or by an older aiworkbook)
    nvml: NvmlFacts | None = None


class LockedProfile(BaseModel):
    """Pattern, node, workloads, estimates (Estimate.to_dict() by workload name), golden proofs
    (ProofResult.to_dict()), tolerances per proof, the questionnaire's answers and notes."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    created: AwareDatetime = Field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc))
    pattern: Pattern
    lang: str = "en"
    answers: dict[str, Any] = {}
    node: NodeSection
    workloads: list[WorkloadEntry] = []
    estimates: dict[str, dict[str, Any]] = {}
    proofs: list[GoldenProof] = []
    tolerances: dict[str, Tolerance] = {}
    notes: list[str] = []

    @field_validator("created")
    @classmethod
    def _utc(cls, v: _dt.datetime) -> _dt.datetime:
        return v.astimezone(_dt.timezone.utc)

    @field_validator("lang")
    @classmethod
    def _lang(cls, v: str) -> str:
        from aiworkbook.patterns import LANGS

        if v not in LANGS:
            raise ValueError(f"one of {', '.join(LANGS)}")
        return v

    @field_validator("answers")
    @classmethod
    def _answers(cls, v: dict[str, Any]) -> dict[str, Any]:
        """The questionnaire's answers as lock stored them: typed (no "true" for true) and valid."""
        if not v:
            return v
        from aiworkbook.patterns import Answers
        from aiworkbook.profile.schema import check_dataclass

        Answers.parse(v)  # unknown questions and out-of-range answers, named
        check_dataclass(Answers, v)
        return v

    @field_validator("estimates")
    @classmethod
    def _estimates(cls, v: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        from aiworkbook.profile.schema import EstimateDoc, check_part

        for name, est in v.items():
            check_part(EstimateDoc, est, field=name)
        return v

    @model_validator(mode="after")
    def _consistent(self) -> LockedProfile:
        names = [p.name for p in self.proofs]
        _names_match("proofs.name", names, "tolerances", self.tolerances, "golden proof")
        wl = [w.name for w in self.workloads]
        _names_match("workloads.name", wl, "estimates", self.estimates, "workload")
        return self

    def tolerance(self, name: str) -> Tolerance:
        """The tolerance of golden proof `name` (the default when none was set)."""
        return self.tolerances.get(name, Tolerance())

    def golden(self, name: str) -> GoldenProof:
        for p in self.proofs:
            if p.name == name:
                return p
        raise SpecError("proof", name, ", ".join(p.name for p in self.proofs) or "(no golden proofs)")

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def save(self, path: str | os.PathLike) -> None:
        """Write atomically (temp file + fsync + rename), with kind and schema_version first."""
        from aiworkbook.persist import write_json

        write_json(path, self.to_dict(), kind=KIND, schema_version=SCHEMA_VERSION)


def load_profile(path: str | os.PathLike) -> LockedProfile:
    """Read a locked profile; a missing, corrupt, truncated or hand-broken file, another kind or an
    unknown schema version raises SpecError naming the file and what is wrong."""
    from aiworkbook.persist import read_json

    src = str(path)
    doc = read_json(path, what=Msg("file.locked_profile"), unique_keys=True)
    if doc.get("kind") != KIND:
        raise SpecError("kind", doc.get("kind"), Msg("allowed.profile_kind", kind=KIND), source=src)
    v = doc.get("schema_version")
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise SpecError("schema_version", v, Msg("allowed.int_dots", low=1, high=SCHEMA_VERSION), source=src)
    if v > SCHEMA_VERSION:
        raise SpecError(
            "schema_version",
            v,
            Msg("allowed.schema_newer", high=SCHEMA_VERSION),
            source=src,
        )
    body = {k: val for k, val in doc.items() if k not in ("kind", "schema_version")}
    return _validate(body, src)


def profile_from_dict(doc: dict[str, Any], *, source: str | None = None) -> LockedProfile:
    """Validate a profile held in memory (a widget's state); errors as SpecError naming the field."""
    if not isinstance(doc, dict):
        raise SpecError("profile", type(doc).__name__, "a JSON object", source=source)
    body = {k: val for k, val in doc.items() if k not in ("kind", "schema_version")}
    return _validate(body, source)


def _validate(body: dict[str, Any], source: str | None) -> LockedProfile:
    """A profile body as JSON in strict mode (no "1" for 1, no "false" for false) after the scan for
    NaN/Infinity, 64-bit overflow and deep nesting (profile.schema), so bad input is a SpecError."""
    import json

    from aiworkbook.persist import validation_error
    from aiworkbook.profile.schema import check_document

    check_document(body, source=source)
    try:
        return LockedProfile.model_validate_json(json.dumps(body, default=str), strict=True)
    except ValidationError as exc:
        raise validation_error(exc, source=source) from None


def _names_match(field: str, names: list[str], keyed: str, keys: Any, what: str) -> None:
    """`names` are unique, and every key of `keys` (the `keyed` field) is one of them."""
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise SpecError(field, dup[0], f"a name no other {what} has")
    stray = sorted(set(keys) - set(names))
    if stray:
        raise SpecError(keyed, stray[0], f"the name of a {what}: " + ", ".join(names))
