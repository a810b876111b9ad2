"""Issue 23's vLLM 0.19 H100 runs (tests/data/vllm_019_held_out_runs.json: bf16, max_model_len 8192): KV-cache
tokens per engine version and the error against the logged tokens. The logs are not public; the issue gives
only the errors of `fit --engine vllm` (engine "v1") against them, so the logged tokens are rebuilt as
engine v1's tokens as filed (v1_tokens_as_filed: what v1 gave when issue 23 was filed, kept so the rebuilt
figure does not move with the arithmetic) / (1 + error), at the utilisation the runs used (0.95: issue 32's
correction of issue 23's 0.9); the rebuilt figure carries the rounding of the issue's one-decimal
percentage. `--utilization 0.9` prints the comparison at the utilisation issue 23's text named (the rebuilt
figure then moves with it: 0 v1 tokens cannot be rebuilt, the row prints ? and a note on what the start
needs). The "v1" column is engine v1 as it computes now.
Usage: .venv/bin/python tools/vllm_issue23_runs.py [--utilization U]"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from aiworkbook.sizing.vllm import VllmSettings, VllmStartup, startup
from aiworkbook.specs import get_gpu, load_model, spec_from_config
from aiworkbook.specs.protocol import ModelSpecLike

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
RUNS: dict[str, Any] = json.loads((DATA / "vllm_019_held_out_runs.json").read_text())


def run_spec(run: dict[str, Any]) -> ModelSpecLike:
    """The run's model: a preset, or a published config.json kept with the test data."""
    if "config" in run:
        return spec_from_config(json.loads((DATA / run["config"]).read_text()), name=run["config"])
    return load_model(run["model"])


def run_name(run: dict[str, Any]) -> str:
    return Path(run["config"]).stem if "config" in run else str(run["model"])


def compare(run: dict[str, Any], utilization: float | None = None) -> dict[str, Any]:
    """Engine v1 and v1-019 at the run's settings, the rebuilt logged tokens (None where v1 gave 0 when
    filed) and the v1-019 error in % (None where there is no rebuilt figure); `utilization` is one of the
    run's v1_tokens_as_filed keys."""
    util = RUNS["gpu_memory_utilization"] if utilization is None else utilization
    gpu, spec = get_gpu(RUNS["gpu"]), run_spec(run)
    out: dict[str, Any] = {}
    for eng in ("v1", "v1-019"):
        s = VllmSettings(
            engine=eng,
            max_model_len=RUNS["max_model_len"],
            tensor_parallel_size=run.get("tp", 1),
            pipeline_parallel_size=run.get("pp", 1),
            gpu_memory_utilization=util,
        )
        out[eng] = startup(spec, gpu, s)
    filed, new = run["v1_tokens_as_filed"][str(util)], out["v1-019"].kv_cache_tokens
    logged = filed / (1 + run["v1_error_pct"] / 100) if filed else None
    out["logged"] = logged
    out["error_pct"] = 100 * (new - logged) / logged if logged else None
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    filed = sorted(RUNS["runs"][0]["v1_tokens_as_filed"], key=float)
    ap.add_argument(
        "--utilization",
        type=float,
        default=None,
        choices=[float(u) for u in filed],
        help="default: the runs' own (0.95); the utilisations engine v1's figures were kept at",
    )
    util = ap.parse_args().utilization
    shown_util = RUNS["gpu_memory_utilization"] if util is None else util
    print(f"gpu_memory_utilization {shown_util}, max_model_len {RUNS['max_model_len']}, {RUNS['gpu']}")
    print(f"{'model':20s} {'tp':>2s} {'logged~':>8s} {'v1':>8s} {'v1-019':>8s} {'v1-019 error':>13s}")
    notes = []
    for run in RUNS["runs"]:
        c = compare(run, util)
        v1, new = c["v1"].kv_cache_tokens, c["v1-019"].kv_cache_tokens
        name, tp = run_name(run), run.get("tp", 1)
        if c["logged"]:
            shown = f"{c['logged']:8.0f} {v1:8d} {new:8d} {c['error_pct']:+12.2f}%"
        else:
            shown = f"{'?':>8s} {v1:8d} {new:8d} {'?':>13s}"
            notes.append(f"{name} tp {tp}: {start_note(c['v1-019'])}")
        note = f"  ({run['note']})" if run.get("note") else ""
        print(f"{name:20s} {tp:2d} {shown}{note}")
    for line in notes:
        print(line)


def start_note(r: VllmStartup) -> str:
    """Why the logged figure cannot be rebuilt, and what the run's start says about the profile."""
    need = r.one_request_kv_bytes  # vLLM's own check before it starts (sizing.vllm.refusal)
    room = r.requested_bytes - r.weights_bytes - r.activation_peak_bytes - need
    return (
        "engine v1 predicts no KV cache, so the issue's error cannot be turned into a logged figure; "
        f"with v1-019's torch peak ({r.activation_peak_bytes / 2**30:.2f} GiB) the run starts only if memory "
        f"outside torch is at most {room / 2**30:.2f} GiB (v1-019 assumes {r.non_torch_bytes / 2**30:.2f} GiB; "
        f"one {r.max_model_len}-token request needs {need / 2**30:.2f} GiB of KV cache)"
    )


if __name__ == "__main__":
    main()
