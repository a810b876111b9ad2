"""check(): re-run a locked profile's golden proofs on this node (or take given results) and compare
each with the locked figure: pass, drift or fail with the ratio, and which fingerprint part changed.

Exit codes for CI (`aiworkbook check`): 0 every proof passed (drift too, unless strict), 1 a
regression, 2 unusable input (a golden proof without a result, or one that could not run here)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from aiworkbook.errors import printable
from aiworkbook.message import Joined, Msg, quoted
from aiworkbook.profile.fingerprint import Fingerprint, part_words, said_changes
from aiworkbook.profile.lock import as_result
from aiworkbook.profile.model import GoldenProof, LockedProfile, Tolerance

Status = Literal["pass", "drift", "fail", "missing", "error"]
Runner = Callable[..., Any]


#: how a result that wanted a GPU and ran on the CPU is marked in every output of a check
CPU_ONLY = "CPU only: no GPU verdict"


def _status(status: str) -> Msg:
    """A check's status in words: pass, drift, fail, missing, error."""
    return Msg(f"check.status.{status}")


@dataclass(frozen=True)
class ProofCheck:
    """One golden proof checked: status, now/locked ratio, both figures and what changed underneath."""

    name: str
    proof: str
    status: Status
    ratio: float | None
    locked: float | None
    measured: float | None
    unit: str
    tolerance: Tolerance
    estimate_ratio: float | None = None
    flags: tuple[str, ...] = ()
    changes: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    message: str = ""
    device: str = ""  # where the new result ran ("cuda", "cpu"; "" when there is none)

    @property
    def cpu_only(self) -> bool:
        """The new result wanted a GPU and ran on the CPU (flag cpu-fallback): no GPU verdict."""
        return "cpu-fallback" in self.flags

    def line(self) -> Msg:
        """One line for people (a message: English as its str, the CLI and widgets say it in theirs)."""
        ratio = Msg("check.ratio", ratio=self.ratio) if self.ratio is not None else Msg("check.no_ratio")
        message = self.message if isinstance(self.message, Msg) else printable(self.message, 400)
        return Msg(
            "check.line",
            status=_status(self.status),
            where=Msg("check.cpu_only") if self.cpu_only else "",
            name=printable(self.name, 80),
            ratio=ratio,
            within=self.tolerance.pass_within,
            beyond=self.tolerance.fail_beyond,
            extra=Msg("check.extra", message=message) if self.message else "",
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "proof": self.proof,
            "status": self.status,
            "ratio": self.ratio,
            "locked": self.locked,
            "measured": self.measured,
            "unit": self.unit,
            "tolerance": self.tolerance.model_dump(),
            "estimate_ratio": self.estimate_ratio,
            "flags": list(self.flags),
            "changes": {k: list(v) for k, v in self.changes.items()},
            "message": self.message,
            "device": self.device,
            "cpu_only": self.cpu_only,
        }


@dataclass(frozen=True)
class CheckReport:
    """Every golden proof's check, the fingerprint parts that changed, and results that matched none."""

    checks: tuple[ProofCheck, ...]
    fingerprint_changes: dict[str, tuple[Any, Any]]
    unmatched: tuple[str, ...] = ()
    strict: bool = False

    @property
    def exit_code(self) -> int:
        statuses = {c.status for c in self.checks}
        if statuses & {"missing", "error"} or not self.checks:
            return 2
        if "fail" in statuses or (self.strict and "drift" in statuses):
            return 1
        return 0

    def warnings(self) -> list[Msg]:
        """What the reader should know beside the lines (messages, said in the reader's language)."""
        out = []
        if self.fingerprint_changes:
            changes = self.fingerprint_changes
            parts = Joined(
                *[
                    p
                    for i, k in enumerate(changes)
                    for p in ((", ", part_words(k)) if i else (part_words(k),))
                ]
            )
            out.append(Msg("check.fingerprint_changed", parts=parts, changes=said_changes(changes)))
        out += [Msg("check.unmatched", proof=printable(u, 80)) for u in self.unmatched]
        if not self.checks:
            out.append(Msg("check.no_goldens"))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "exit_code": self.exit_code,
            "checks": [c.to_dict() for c in self.checks],
            "fingerprint_changes": {k: list(v) for k, v in self.fingerprint_changes.items()},
            "unmatched": list(self.unmatched),
            "warnings": self.warnings(),
        }


def classify(ratio: float, tol: Tolerance) -> Status:
    """pass when |ratio - 1| <= pass_within, drift up to fail_beyond, fail beyond."""
    dev = abs(ratio - 1)
    if dev <= tol.pass_within:
        return "pass"
    return "drift" if dev <= tol.fail_beyond else "fail"


def compare(profile: LockedProfile, golden: GoldenProof, result: Any) -> ProofCheck:
    """Compare one new result with its golden proof."""
    locked = golden.to_result()
    tol = profile.tolerance(golden.name)
    env = result.environment or {}
    changes = profile.node.fingerprint.diff(Fingerprint.from_environment(env)) if env else {}
    common = dict(
        name=golden.name,
        proof=golden.proof,
        locked=locked.measured,
        measured=result.measured,
        unit=locked.unit,
        tolerance=tol,
        estimate_ratio=result.ratio,
        flags=tuple(result.flags),
        changes=changes,
        device=str(result.device or ""),
    )
    if result.proof != golden.proof:
        other = Msg("check.other_proof", proof=printable(str(result.proof), 80))
        return ProofCheck(status="fail", ratio=None, message=other, **common)
    if result.verdict == "interrupted":  # nothing was checked: unusable, not a regression
        return ProofCheck(status="error", ratio=None, message=Msg("check.interrupted"), **common)
    if result.measured is None or result.verdict == "does-not-fit":
        none = Msg("check.no_measurement", verdict=printable(str(result.verdict), 40))
        return ProofCheck(status="fail", ratio=None, message=none, **common)
    if result.unit != locked.unit:
        units = Msg(
            "check.units", unit=printable(repr(result.unit), 40), locked=printable(repr(locked.unit), 40)
        )
        return ProofCheck(status="fail", ratio=None, message=units, **common)
    if not locked.measured:
        return ProofCheck(status="fail", ratio=None, message=Msg("check.locked_zero"), **common)
    ratio = result.measured / locked.measured
    status = classify(ratio, tol)
    notes: list[Any] = []
    if changes:
        notes.append(Msg("check.fingerprint", changes=said_changes(changes)))
    new_flags = sorted(set(result.flags) - set(locked.flags))
    if new_flags:
        notes.append(Msg("check.new_flags", flags=", ".join(new_flags)))
    message = Joined(*[p for i, n in enumerate(notes) for p in (("; ", n) if i else (n,))]) if notes else ""
    return ProofCheck(status=status, ratio=ratio, message=message, **common)


def rerooted_inputs(proof: str, inputs: dict[str, Any], root: str | os.PathLike) -> dict[str, Any]:
    """A golden proof's stored inputs, made safe to re-run: only the inputs its proof takes, every path
    input (the folder a proof writes under) set to `root` whatever the profile says (a hand-edited
    `/etc` or `../..` included), and nothing kept afterwards."""
    from aiworkbook.errors import SpecError
    from aiworkbook.proofs import registry

    try:
        specs = registry.get(proof).inputs
    except SpecError:
        return {}  # an unknown proof gets nothing from the profile; running it says it is unknown
    out = {s.name: inputs[s.name] for s in specs if s.name in inputs and s.kind != "path"}
    out.update({s.name: str(root) for s in specs if s.kind == "path"})
    if any(s.name == "keep" for s in specs):
        out["keep"] = False
    return out


def check(
    profile: LockedProfile,
    results: Iterable[Any] | None = None,
    *,
    rerun: bool = True,
    runner: Runner | None = None,
    progress: Any = None,
    cancel: Any = None,
    strict: bool = False,
    workdir: str | os.PathLike | None = None,
) -> CheckReport:
    """Check every golden proof of `profile`.

    `results` (ProofResults, dicts or paths) are matched to golden proofs by proof name, in order;
    without them and with `rerun`, each golden proof runs again through `runner(proof, **inputs)`
    (default `aiworkbook.proofs.registry.run`, the one proof lock, with `progress(done, total,
    message)` and the `cancel` event a widget passes) with the inputs stored in the profile. A golden proof left without a result is 'missing', one that raised while re-running is
    'error' (both exit code 2: nothing was checked). `strict` makes drift a regression (exit 1)."""
    goldens = list(profile.proofs)
    pairs: list[tuple[GoldenProof, Any | None]] = []
    unmatched: list[str] = []
    if results is not None:
        pool = [as_result(r) for r in results]
        taken: set[int] = set()
        for g in goldens:
            idx = next((i for i, r in enumerate(pool) if i not in taken and r.proof == g.proof), None)
            if idx is not None:
                taken.add(idx)
            pairs.append((g, pool[idx] if idx is not None else None))
        unmatched = [r.proof for i, r in enumerate(pool) if i not in taken]
    elif rerun:
        if runner is None:
            from aiworkbook.proofs import registry

            def run(name: str, **inputs: Any) -> Any:
                return registry.run(name, progress=progress, cancel=cancel, **inputs)
        else:
            run = runner
        from aiworkbook.proofs.scratch import temporary_root

        with temporary_root(workdir) as root:
            for g in goldens:
                try:
                    pairs.append((g, run(g.proof, **rerooted_inputs(g.proof, g.inputs, root))))
                except Exception as exc:  # a proof that cannot run here is reported, never a traceback in CI
                    why = quoted(printable(f"{type(exc).__name__}: {exc}", 400))
                    pairs.append((g, Msg("check.could_not_run", why=why)))
    else:
        pairs = [(g, None) for g in goldens]
    checks = []
    for g, r in pairs:
        if r is None or isinstance(r, str):
            locked = g.to_result()
            checks.append(
                ProofCheck(
                    name=g.name,
                    proof=g.proof,
                    status="missing" if r is None else "error",
                    ratio=None,
                    locked=locked.measured,
                    measured=None,
                    unit=locked.unit,
                    tolerance=profile.tolerance(g.name),
                    message=r or Msg("check.no_result"),
                )
            )
        else:
            checks.append(compare(profile, g, r))
    changes: dict[str, tuple[Any, Any]] = {}
    for c in checks:
        for k, v in c.changes.items():
            changes.setdefault(k, v)
    return CheckReport(tuple(checks), changes, tuple(unmatched), strict)
