"""`check --passive`: the node health check that takes no GPU time, for Slurm's HealthCheckProgram
(which must finish within 60 s), as LBNL's NHC, Meta's GCM health checks or DCGM's level-1 diagnostics
are run. It reads only NVML: the locked fingerprint parts NVML knows (GPU model, count, driver; CUDA
driver, VBIOS and MIG layout where the profile recorded them, profile/gpu_facts.py), each GPU's state
(volatile uncorrected ECC errors, row remapping pending or failed, throttle reasons that are not
benign) and the XIDs raised while it runs (profile/xid_watch.py). The golden proofs (GPU time) belong in a prolog/epilog or a maintenance
reservation (`profile slurm-job`)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from aiworkbook.message import Msg, words
from aiworkbook.profile.fingerprint import Fingerprint
from aiworkbook.profile.model import LockedProfile
from aiworkbook.profile.xid_watch import XID_WAIT_S

WATCHDOG_S = 45.0  # under Slurm's 60 s HealthCheckProgram limit, with room to drain the node
PASSIVE_PARTS = ("gpu", "gpu_count", "driver")


@dataclass
class PassiveReport:
    problems: list[str] = field(default_factory=list)
    unusable: str | None = None  # why nothing could be read
    notes: list[str] = field(default_factory=list)  # what was not checked, and why

    @property
    def exit_code(self) -> int:
        return 2 if self.unusable else (1 if self.problems else 0)

    def summary(self, lang: str = "en") -> str:
        """One line (a drain reason must be one line), in `lang`."""
        if self.unusable:
            return Msg("passive.summary.unusable", why=self.unusable).render(lang)
        if self.problems:
            said = "; ".join(words(p, lang) for p in self.problems)
            return Msg("passive.summary.problems", problems=said).render(lang)
        return Msg("passive.summary.pass").render(lang)


def _gpu_problems(i: int, gpu: dict[str, Any], live: dict[str, Any]) -> list[str]:
    out: list[str] = []
    ecc = gpu.get("ecc_volatile_uncorrected")
    if isinstance(ecc, int) and ecc > 0:
        out.append(Msg("passive.ecc", gpu=i, errors=ecc))
    if live.get("remap_pending") is True:
        out.append(Msg("passive.remap_pending", gpu=i))
    if live.get("remap_failure") is True:
        out.append(Msg("passive.remap_failed", gpu=i))
    if gpu.get("throttled") is True:
        out.append(
            Msg("passive.throttled", gpu=i, reasons=", ".join(map(str, gpu.get("throttle_reasons") or [])))
        )
    return out


#: What each fingerprint part NVML reads is called (literal ids, so pybabel's extraction finds them).
_PART = {
    "gpu": lambda: Msg("passive.what.gpu"),
    "gpu_count": lambda: Msg("passive.what.gpu_count"),
    "driver": lambda: Msg("passive.what.driver"),
}


def _read(profile: LockedProfile, xid_wait_s: float = XID_WAIT_S) -> PassiveReport:
    from aiworkbook.profile.gpu_facts import compare, read_facts
    from aiworkbook.profile.xid_watch import watch
    from aiworkbook.telemetry.environment import _gpu_reader, environment
    from aiworkbook.telemetry.events import describe

    env = environment()
    now = Fingerprint.from_environment(env)
    locked = profile.node.fingerprint
    rep = PassiveReport()
    facts = profile.node.nvml
    parts = PASSIVE_PARTS if facts is None or facts.driver is None else ("gpu", "gpu_count")
    for part in parts:
        was, is_ = getattr(locked, part), getattr(now, part)
        if was not in (None, 0) and was != is_:
            now_ = is_ if is_ not in (None, 0) else Msg("passive.value.none")
            rep.problems.append(Msg("passive.changed", what=_PART[part](), was=was, now=now_))
    gpus = env.get("gpus") or []
    reader = _gpu_reader() if gpus else None
    for i, gpu in enumerate(gpus):
        try:
            live = reader.read(i) if reader is not None else {}
        except Exception:  # noqa: BLE001 (a GPU that stops answering is a finding, not a crash)
            rep.problems.append(Msg("passive.nvml_stopped", gpu=i))
            continue
        rep.problems += _gpu_problems(i, gpu, live)
    bad, notes = compare(facts, read_facts())
    rep.problems += bad
    rep.notes += notes
    xids = watch(len(gpus), xid_wait_s)
    for g, x in xids.xids:
        text = Msg("passive.xid", gpu="?" if g is None else g, xid=x, description=describe(x))
        if (g, x) in xids.critical():
            rep.problems.append(text)
        else:
            rep.notes.append(Msg("passive.xid_application", xid=text))
    if not xids.watched:
        rep.notes.append(Msg("passive.xid_unwatched", why=xids.status))
    else:
        rep.notes.append(Msg("passive.xid_watched", seconds=xid_wait_s, gpus=xids.watched))
    return rep


def passive_check(
    profile: LockedProfile, watchdog_s: float = WATCHDOG_S, xid_wait_s: float = XID_WAIT_S
) -> PassiveReport:
    """The passive check, given up (a failure) when NVML does not answer within `watchdog_s`."""
    box: list[PassiveReport] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            box.append(_read(profile, xid_wait_s))
        except Exception as exc:  # noqa: BLE001 (reported as unusable, never a traceback)
            errors.append(exc)

    t = threading.Thread(target=work, name="aiworkbook-passive-check", daemon=True)
    t.start()
    t.join(watchdog_s)
    if box:
        return box[0]
    if errors:
        return PassiveReport(unusable=f"{type(errors[0]).__name__}: {errors[0]}"[:300])
    return PassiveReport(problems=[Msg("passive.watchdog", seconds=watchdog_s)])
