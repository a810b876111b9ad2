"""Issue 23's vLLM 0.19 H100 runs (bf16, max_model_len 8192, utilisation 0.9): KV-cache tokens per engine
version and the error against the logged tokens. The logs are not public; the issue gives only the errors
of `fit --engine vllm` (engine "v1") against them, so the logged tokens are rebuilt as
v1 tokens / (1 + error); the rebuilt figure carries the rounding of the issue's one-decimal percentage.
Where engine "v1" predicts no KV cache the logged figure cannot be rebuilt: the row says so, and a note
gives the most memory outside torch with which the engine v1-019 arithmetic would still start
(vLLM refuses to start when the cache cannot hold one max_model_len request:
vllm/v1/core/kv_cache_utils.py, _check_enough_kv_cache_memory).
Usage: .venv/bin/python tools/vllm_issue23_runs.py"""

from __future__ import annotations

from pathlib import Path

from aiworkbook.sizing.vllm import VllmSettings, startup
from aiworkbook.specs import get_gpu, load_model

CONFIGS = Path(__file__).resolve().parents[1] / "tests" / "data" / "configs"
MAX_LEN = 8192
#: (model, tensor parallel size, the issue's error of engine "v1" in %, note)
RUNS = (
    ("mixtral-8x7b", 2, +6.3, ""),
    (str(CONFIGS / "gemma-3-12b-it.json"), 1, -6.4, ""),
    ("qwen3-30b-a3b", 1, -8.9, ""),
    (str(CONFIGS / "gemma-2-27b-it.json"), 1, -15.6, ""),
    ("gemma-3-27b-it", 1, -15.3, ""),
    (str(CONFIGS / "qwen2.5-72b-instruct.json"), 2, -7.9, "kimi-dev-72b has the same shape and error"),
)


def main() -> None:
    gpu = get_gpu("H100-SXM")
    print(f"{'model':20s} {'tp':>2s} {'logged~':>8s} {'v1':>8s} {'v1-019':>8s} {'v1-019 error':>13s}")
    notes = []
    for model, tp, v1_error, note in RUNS:
        spec = load_model(model)
        runs = {
            eng: startup(spec, gpu, VllmSettings(engine=eng, max_model_len=MAX_LEN, tensor_parallel_size=tp))
            for eng in ("v1", "v1-019")
        }
        v1, new = runs["v1"].kv_cache_tokens, runs["v1-019"].kv_cache_tokens
        name = Path(model).stem if model.endswith(".json") else model
        if v1:
            logged = v1 / (1 + v1_error / 100)
            shown = f"{logged:8.0f} {v1:8d} {new:8d} {100 * (new - logged) / logged:+12.2f}%"
        else:
            shown = f"{'?':>8s} {v1:8d} {new:8d} {'?':>13s}"
            notes.append(f"{name} tp {tp}: {start_note(runs['v1-019'])}")
        print(f"{name:20s} {tp:2d} {shown}" + (f"  ({note})" if note else ""))
    for line in notes:
        print(line)


def start_note(r) -> str:
    """Why the logged figure cannot be rebuilt, and what the run's start says about the profile."""
    need = r.one_request_kv_bytes  # vLLM's own check before it starts (sizing.vllm.refusal)
    room = r.requested_bytes - r.weights_bytes - r.activation_peak_bytes - need
    return (
        "engine v1 predicts no KV cache, so the issue's error cannot be turned into a logged figure; "
        f"with v1-019's torch peak ({r.activation_peak_bytes / 2**30:.2f} GiB) the run starts only if memory "
        f"outside torch is at most {room / 2**30:.2f} GiB (v1-019 assumes {r.non_torch_bytes / 2**30:.2f} GiB; "
        f"one {MAX_LEN}-token request needs {need / 2**30:.2f} GiB of KV cache)"
    )


if __name__ == "__main__":
    main()
