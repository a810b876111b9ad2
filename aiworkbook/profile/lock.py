"""lock(): build a LockedProfile from a pattern, workloads (sized here) and proof results."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.profile.fingerprint import Fingerprint
from aiworkbook.profile.model import GoldenProof, LockedProfile, NodeSection, Tolerance, WorkloadEntry

#: Proof verdicts that cannot serve as a reference.
UNLOCKABLE = ("interrupted", "does-not-fit", "error", "invalid")


def as_result(item: Any):
    """A ProofResult from a ProofResult, its to_dict(), or a path to a saved one."""
    from aiworkbook.persist import read_json
    from aiworkbook.profile.schema import ResultDoc, check_part, scan
    from aiworkbook.proofs.result import KIND, SCHEMA_VERSION, ProofResult

    if isinstance(item, ProofResult):
        return item
    source = None
    if isinstance(item, str | os.PathLike):
        source = str(item)
        item = read_json(
            item,
            kind=KIND,
            max_version=SCHEMA_VERSION,
            what=Msg("file.proof_result"),
            unique_keys=True,
        )
    if isinstance(item, Mapping):
        doc = {k: v for k, v in item.items() if k not in ("kind", "schema_version")}
        scan(doc, source=source)  # NaN/Infinity, 64-bit overflow, depth: a SpecError naming the field
        check_part(ResultDoc, doc, field="result", source=source)
        return ProofResult.from_dict(doc)
    raise SpecError("results", type(item).__name__, Msg("allowed.result_item"))


def as_entry(item: Any, default_name: str) -> WorkloadEntry:
    """A WorkloadEntry from one, a dict with model + workload (the JSON of `aiworkbook size --json`
    works), or (model, Workload[, gpu])."""
    from aiworkbook.persist import validation_error
    from aiworkbook.sizing import Workload

    if isinstance(item, WorkloadEntry):
        return item
    if isinstance(item, tuple):
        model, w, *rest = item
        item = {"model": model, "workload": w, "gpu": rest[0] if rest else None}
    if not isinstance(item, Mapping):
        raise SpecError("workloads", type(item).__name__, Msg("allowed.workload_item"))
    w = item.get("workload")
    if isinstance(w, Workload):
        w = w.to_dict()
    doc = {
        "name": item.get("name") or default_name,
        "model": item.get("model"),
        "gpu": item.get("gpu"),
        "device": item.get("device", "cuda"),
        "workload": w,
        "assumptions": dict(item.get("assumptions") or {}),
        "config": item.get("config") or _local_config(item.get("model"), default_name),
    }
    if doc["config"] and not item.get("config"):  # read from a path here: named by its folder, as `size` does
        doc["model"] = Path(doc["config"]["path"]).name or doc["model"]
    from pydantic import ValidationError

    try:
        return WorkloadEntry.model_validate(doc)
    except ValidationError as exc:
        raise validation_error(exc, prefix=f"workloads[{default_name}]") from None


def _local_config(model: Any, where: str) -> dict[str, Any] | None:
    """A non-preset model named by a path (a folder or its config.json): its config, embedded."""
    from aiworkbook.specs.catalog import embedded_config

    if not isinstance(model, str) or not model:
        return None
    try:
        return embedded_config(model)
    except SpecError as exc:
        raise SpecError(
            f"workloads[{where}].{exc.field}", exc.value, exc.allowed, source=exc.source
        ) from None


def rerun_inputs(result) -> dict[str, Any]:
    """The inputs that re-run `result`'s proof: those of the registry's InputSpecs it recorded, with
    the device it ran on (so a CPU golden is not re-run on CUDA by 'auto')."""
    from aiworkbook.proofs import registry

    try:
        info = registry.get(result.proof)
    except SpecError:
        return dict(result.inputs)
    # not the folder a proof wrote in: that is this host's, and `check` names its own (profile/check.py)
    names = {i.name for i in info.inputs if i.kind != "path"}
    out = {k: v for k, v in result.inputs.items() if k in names and v is not None}
    if "device" in names and result.device in ("cpu", "cuda"):
        out["device"] = result.device
    return out


def lock(
    pattern: str | None,
    *,
    workloads: Iterable[Any] = (),
    results: Iterable[Any] = (),
    node: Any = None,
    detected: Any = True,
    tolerances: Mapping[str, Tolerance | float | tuple[float, float] | Mapping[str, float]] | None = None,
    inputs: Mapping[str, Mapping[str, Any]] | None = None,
    answers: Mapping[str, Any] | None = None,
    lang: str = "en",
    notes: Iterable[str] = (),
) -> LockedProfile:
    """Lock a profile. `pattern` None: the one `answers` (the questionnaire) recommend.

    `node`: the declared reference node (a name from data/nodes, a node JSON or a NodeProfile);
    `detected`: True detects this node, a NodeProfile uses it, None skips it; `workloads` are sized
    against the declared node's GPU (or their own `gpu`); `results` become the golden proofs, named
    by proof (`kv`, then `kv#2` ...); `tolerances` per golden name: a Tolerance, a float (pass
    within; drift up to 2.5x that), a (pass, fail) pair or {"pass_within", "fail_beyond"};
    `inputs` override the re-run inputs per golden name.
    """
    from pydantic import ValidationError

    from aiworkbook.patterns import Answers
    from aiworkbook.patterns.catalog import check_pattern
    from aiworkbook.patterns.i18n import check_lang
    from aiworkbook.persist import validation_error
    from aiworkbook.specs import detect, get_node

    if pattern is None:
        if not answers:
            raise SpecError("pattern", None, Msg("allowed.pattern_or_answers"))
        from aiworkbook.patterns import recommend

        pattern = recommend(answers, lang).pattern.id
    check_pattern(pattern)
    check_lang(lang)
    declared = get_node(node) if isinstance(node, str) else node
    facts = None
    if detected is True:
        from aiworkbook.profile.gpu_facts import read_facts

        detected = detect()
        facts = read_facts()  # None without a GPU: not recorded
    entries = [as_entry(w, f"workload-{i + 1}") for i, w in enumerate(workloads)]
    estimates = {e.name: _estimate(e, declared) for e in entries}
    golden: list[GoldenProof] = []
    first_env: dict[str, Any] = {}
    for r in (as_result(x) for x in results):
        if r.verdict in UNLOCKABLE or r.measured is None:
            raise SpecError("results", f"{r.proof}: verdict {r.verdict}", Msg("allowed.completed_proof"))
        n = sum(1 for g in golden if g.proof == r.proof)
        name = r.proof if n == 0 else f"{r.proof}#{n + 1}"
        ins = dict((inputs or {}).get(name, rerun_inputs(r)))
        golden.append(GoldenProof(name=name, proof=r.proof, inputs=ins, result=r.to_dict()))
        first_env = first_env or dict(r.environment)
    if inputs:
        unknown = set(inputs) - {g.name for g in golden}
        if unknown:
            raise SpecError("inputs", sorted(unknown), ", ".join(g.name for g in golden) or "(no results)")
    fp = _fingerprint(first_env, detected, declared)
    tols = {k: to_tolerance(k, v) for k, v in (tolerances or {}).items()}
    try:
        return LockedProfile(
            pattern=pattern,  # type: ignore[arg-type]
            lang=lang,
            answers=Answers.parse(answers).to_dict() if answers else {},
            node=NodeSection(declared=declared, detected=detected, fingerprint=fp, nvml=facts),
            workloads=entries,
            estimates=estimates,
            proofs=golden,
            tolerances=tols,
            notes=list(notes),
        )
    except ValidationError as exc:
        raise validation_error(exc) from None


def to_tolerance(name: str, v: Any) -> Tolerance:
    """A Tolerance from a Tolerance, a float, a (pass, fail) pair or a mapping; SpecError names `name`."""
    from pydantic import ValidationError

    from aiworkbook.persist import validation_error

    try:
        if isinstance(v, Tolerance):
            return v
        if isinstance(v, bool):
            raise SpecError(f"tolerances.{name}", v, "a fraction, (pass, fail) or a mapping")
        if isinstance(v, int | float):
            return Tolerance(pass_within=v, fail_beyond=2.5 * v)
        if isinstance(v, tuple | list) and len(v) == 2:
            return Tolerance(pass_within=v[0], fail_beyond=v[1])
        if isinstance(v, Mapping):
            return Tolerance(**v)
    except ValidationError as exc:
        raise validation_error(exc, prefix=f"tolerances.{name}") from None
    raise SpecError(f"tolerances.{name}", v, "a fraction, (pass, fail) or a mapping")


def _estimate(e: WorkloadEntry, declared: Any) -> dict[str, Any]:
    from aiworkbook.sizing import estimate
    from aiworkbook.sizing.formula_data import with_stored_formulas

    node, a = assumptions_for(e, declared)
    est = estimate(e.spec(), e.to_workload(), gpu=e.gpu or None, device=e.device, assumptions=a, node=node)
    return with_stored_formulas(est.to_dict())  # the formulas as messages too: the report says them


def assumptions_for(e: WorkloadEntry, declared: Any) -> tuple[Any, Any]:
    """The node (or pool) a workload entry is sized on and the Assumptions that price it: the entry's
    own, else the node's price for the node's own GPU only, else (another GPU) that GPU's list price.
    The lock and the report's answer price from here."""
    node = declared
    if declared is not None and declared.pools and not e.gpu:
        node = _pool_for(declared, e)
    from aiworkbook.sizing import Assumptions

    a = Assumptions.from_node(node, **e.assumptions) if node is not None else Assumptions(**e.assumptions)
    if (
        node is not None
        and e.gpu
        and "price_per_gpu_hour" not in e.assumptions
        and not _node_gpu(node, e.gpu)
    ):
        from dataclasses import replace

        a = replace(a, price_per_gpu_hour=None)  # the node's price is for its own GPU: use e.gpu's price
    return node, a


def _node_gpu(node: Any, gpu: str) -> bool:
    """Whether `gpu` (a catalogue name or GPU file) is the node's own GPU, the one its price is for."""
    from aiworkbook.specs import load_gpu

    own = node.gpu_spec()
    return own is not None and load_gpu(gpu).name == own.name


def _pool_for(declared: Any, e: WorkloadEntry) -> Any:
    """The pool of a hybrid node that serves this workload: inference pool for infer, else training."""
    want = "llm-inference" if e.workload.get("mode") == "infer" else "dl-training"
    for p in declared.pools:
        if p.pattern == want:
            return p
    return declared.pools[0]


def _fingerprint(env: dict[str, Any], detected: Any, declared: Any) -> Fingerprint:
    """Where the golden proofs ran (their environment), else the detected node, else the declared one."""
    if env:
        return Fingerprint.from_environment(env)
    if detected is not None:
        return Fingerprint.from_node(detected)
    if declared is not None:
        return Fingerprint.from_node(declared)
    return Fingerprint()
