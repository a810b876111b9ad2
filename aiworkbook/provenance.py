"""One sentence on what was measured where, opening every dashboard and report, so a reader knows
before any figure whether it was measured on a GPU, on a CPU without one, or not measured at all.

Honest numbers (docs: DESIGN.md): a figure says what it is; a CPU-only run never reads as a GPU one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

# the verdict of a run without a GPU lives with the proofs (proofs/verdict.py), where `prove` prints it
from aiworkbook.proofs.verdict import CPU_ONLY_VERDICT, cpu_only, verdict_words  # noqa: F401


@dataclass(frozen=True)
class Where:
    """Where figures come from: GPU names (empty: no GPU), CPU cores, and whether anything was measured."""

    gpus: tuple[str, ...] = ()
    cpu_cores: int | None = None
    measured: bool = True

    def sentence(self, lang: str = "en") -> str:
        """The sentence in `lang` (the report's and the dashboards' languages: aiworkbook.patterns)."""
        from aiworkbook.patterns import text

        cpu = (
            text("where.cores", lang).format(n=self.cpu_cores)
            if self.cpu_cores
            else text("where.a_cpu", lang)
        )
        if self.gpus:
            counts = Counter(self.gpus)
            gpus = ", ".join(f"{n} × {g}" for g, n in counts.items())
            return text("where.gpu" if self.measured else "where.gpu_none", lang).format(gpus=gpus)
        return text("where.cpu" if self.measured else "where.cpu_none", lang).format(cpu=cpu)


def here(measured: bool = False) -> Where:
    """This machine (NVML's GPUs, psutil's physical cores); never raises, imports no torch."""
    import psutil

    from aiworkbook.specs.detection import nvml_gpus

    try:
        gpus, _, _ = nvml_gpus()
        names: tuple[str, ...] = tuple(g.name for g in gpus)
    except Exception:  # noqa: BLE001 - a half-answering NVML is "no GPU" for this sentence
        names = ()
    cores = psutil.cpu_count(logical=False) or psutil.cpu_count() or None
    return Where(gpus=names, cpu_cores=cores, measured=measured)


def from_results(results: Iterable[dict[str, Any]], fallback: Where | None = None) -> Where:
    """Where proof results (ProofResult dicts) ran: their environments' GPUs and cores; `fallback`
    (or "nothing measured") when there are none."""
    gpus: list[str] = []
    cores: int | None = None
    seen = False
    for r in results:
        seen = True
        env = r.get("environment") or {}
        if r.get("device") == "cuda":
            for g in env.get("gpus") or []:
                if isinstance(g, dict) and isinstance(g.get("name"), str):
                    gpus.append(g["name"])
        host = env.get("host") if isinstance(env.get("host"), dict) else {}
        c = host.get("cores") if isinstance(host, dict) else None
        if isinstance(c, int) and c > 0:
            cores = c
    if not seen:
        return fallback or Where(measured=False)
    return Where(gpus=tuple(dict.fromkeys(gpus)), cpu_cores=cores, measured=True)
