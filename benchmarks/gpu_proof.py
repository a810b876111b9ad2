"""`make gpu-proof`: every proof on CUDA in under 8 minutes, one JSON ProofResult per proof.

Results go to $OUT (else ./gpu-proof-results), plus summary.json. Without CUDA this says so and
exits 1: it never falls back to the CPU and calls that a GPU proof. Commit the folder under
data/reference-runs/<gpu>/ when it ran on a GPU.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

BUDGET_S = 8 * 60


def main() -> int:
    import torch

    if not torch.cuda.is_available():
        print(
            "gpu-proof: no CUDA device (torch.cuda.is_available() is False; torch "
            f"{torch.__version__}, built for CUDA {torch.version.cuda}). Nothing was measured.",
            file=sys.stderr,
        )
        return 1
    from aiworkbook.proofs.device import DoesNotFit, WouldNotFit
    from aiworkbook.proofs.kv import prove_kv
    from aiworkbook.proofs.roofline import prove_roofline
    from aiworkbook.proofs.vram import prove_vram

    out = Path(os.environ.get("OUT") or "./gpu-proof-results")
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.monotonic()
    plan = [
        ("roofline", lambda: prove_roofline("llama-3-8b", device="cuda")),
        ("vram-tiny-llama-bf16", lambda: prove_vram("tiny-llama", device="cuda", seq_len=512)),
        ("vram-llama-3.2-1b-bf16", lambda: prove_vram("llama-3.2-1b", device="cuda", seq_len=2048)),
        (
            "vram-llama-3.2-1b-mixed",
            lambda: prove_vram("llama-3.2-1b", device="cuda", precision="bf16-mixed", seq_len=2048),
        ),
        (
            "vram-llama-3.2-1b-full-ckpt",
            lambda: prove_vram("llama-3.2-1b", device="cuda", seq_len=4096, checkpointing="full"),
        ),
        ("vram-llama-3-8b-bf16", lambda: prove_vram("llama-3-8b", device="cuda", seq_len=2048)),
        ("kv-llama-3.2-1b", lambda: prove_kv("llama-3.2-1b", device="cuda", quick=True)),
        ("kv-llama-3-8b", lambda: prove_kv("llama-3-8b", device="cuda")),
    ]
    summary = []
    for name, fn in plan:
        left = BUDGET_S - (time.monotonic() - t_start)
        if left < 45:
            summary.append({"proof": name, "status": f"skipped: {left:.0f} s of the 8-minute budget left"})
            continue
        t0 = time.monotonic()
        try:
            r = fn()
        except (WouldNotFit, DoesNotFit) as exc:
            summary.append({"proof": name, "status": f"does not fit: {exc}"})
            continue
        except Exception as exc:  # record and go on: one failing proof must not hide the others
            summary.append({"proof": name, "status": f"error: {type(exc).__name__}: {exc}"})
            continue
        finally:
            torch.cuda.empty_cache()
        r.save(out / f"{name}.json")
        summary.append(
            {
                "proof": name,
                "status": r.verdict,
                "ratio": r.ratio,
                "seconds": time.monotonic() - t0,
                "headline": r.headline(),
            }
        )
        print(r.headline(), flush=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"wrote {len(list(out.glob('*.json')))} files to {out} in {time.monotonic() - t_start:.0f} s")
    return 0 if all(s["status"] in ("pass", "info") for s in summary) else 3


if __name__ == "__main__":
    sys.exit(main())
