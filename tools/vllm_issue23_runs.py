"""Issue 23's vLLM 0.19 H100 runs (bf16, max_model_len 8192, utilisation 0.9): KV-cache tokens per engine
version and the error against the logged tokens. The logs are not public; the issue gives only the errors
of `fit --engine vllm` (engine "v1") against them, so the logged tokens are rebuilt as
v1 tokens / (1 + error); the rebuilt figure carries the rounding of the issue's one-decimal percentage.
Usage: .venv/bin/python tools/vllm_issue23_runs.py"""

from __future__ import annotations

from pathlib import Path

from aiworkbook.sizing.vllm import VllmSettings, startup
from aiworkbook.specs import get_gpu, load_model

CONFIGS = Path(__file__).resolve().parents[1] / "tests" / "data" / "configs"
#: (model, tensor parallel size, the issue's error of engine "v1" in %)
RUNS = (
    ("mixtral-8x7b", 2, +6.3),
    (str(CONFIGS / "gemma-3-12b-it.json"), 1, -6.4),
    ("qwen3-30b-a3b", 1, -8.9),
    (str(CONFIGS / "gemma-2-27b-it.json"), 1, -15.6),
    ("gemma-3-27b-it", 1, -15.3),
)


def main() -> None:
    gpu = get_gpu("H100-SXM")
    print(f"{'model':18s} {'tp':>2s} {'logged~':>8s} {'v1':>8s} {'v1-019':>8s} {'v1-019 error':>13s}")
    for model, tp, v1_error in RUNS:
        spec = load_model(model)
        tokens = {
            eng: startup(spec, gpu, VllmSettings(engine=eng, max_model_len=8192, tensor_parallel_size=tp))
            for eng in ("v1", "v1-019")
        }
        logged = tokens["v1"].kv_cache_tokens / (1 + v1_error / 100)
        new = tokens["v1-019"].kv_cache_tokens
        name = Path(model).stem if model.endswith(".json") else model
        print(
            f"{name:18s} {tp:2d} {logged:8.0f} {tokens['v1'].kv_cache_tokens:8d} {new:8d} "
            f"{100 * (new - logged) / logged:+12.2f}%"
        )


if __name__ == "__main__":
    main()
