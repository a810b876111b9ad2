"""Golden outputs of `aiworkbook size --json` and `fit --json` over a broad set of cases, to check that a
refactor of aiworkbook/sizing keeps them byte-identical.

    .venv/bin/python tools/sizing_golden.py write /tmp/before.json [--quick]
    .venv/bin/python tools/sizing_golden.py check /tmp/before.json [--quick]

Each case is a CLI argument list; the stored value is the exit code and the whole output. `--quick` runs
the representative subset the test suite keeps (tests/data/sizing_golden.json).
"""

from __future__ import annotations

import json
import sys

GPUS = ("H100-SXM", "L4")
#: Option sets beside the plain modes: each exercises one branch of the breakdown.
EXTRA = (
    ["--mode", "train", "--dp", "8", "--zero", "3"],
    ["--mode", "train", "--dp", "4", "--zero", "1", "--tp", "2"],
    ["--mode", "train", "--fsdp-cpu-offload", "--dp", "2", "--zero", "3"],
    ["--mode", "train", "--recipe", "paged-adamw-8bit"],
    ["--mode", "train", "--recipe", "adafactor"],
    ["--mode", "train", "--recipe", "blockwise-adamw-8bit", "--precision", "bf16"],
    ["--mode", "train", "--recipe", "fp32-adamw", "--precision", "bf16-mixed", "--attention", "eager"],
    [
        "--mode",
        "train",
        "--recipe",
        "fp32-adamw",
        "--precision",
        "bf16-mixed",
        "--checkpointing",
        "selective",
    ],
    ["--mode", "train", "--optimizer-in-backward", "--checkpointing", "full"],
    ["--mode", "train", "--activation-offload", "--compile", "--loss-chunks", "8"],
    ["--mode", "train", "--chunked-loss", "--batch", "4", "--seq", "512"],
    ["--mode", "train", "--precision", "fp32", "--attention", "eager", "--device", "cpu"],
    ["--mode", "lora", "--lora-targets", "all-linear", "--compile", "--kv-repeat"],
    ["--mode", "lora", "--zero", "3", "--dp", "2", "--loss-chunks", "8", "--no-compile-loss", "--compile"],
    ["--mode", "qlora", "--lora-rank", "64"],
    ["--mode", "infer", "--concurrency", "8", "--seq", "1024", "--new-tokens", "256", "--kv-dtype", "fp8"],
    ["--mode", "infer", "--engine", "vllm", "--concurrency", "16", "--seq", "512", "--new-tokens", "128"],
    ["--mode", "infer", "--engine", "trtllm", "--concurrency", "4", "--weights-dtype", "int4"],
    ["--mode", "infer", "--attention", "eager", "--tp", "2", "--weights-dtype", "fp8"],
)
QUICK_MODELS = ("llama-3-8b", "gpt2", "mixtral-8x7b", "bert-base-uncased", "gemma-2-9b", "tiny-llama")


def cases(quick: bool = False) -> list[list[str]]:
    from aiworkbook.specs.catalog import list_presets, load_model

    models = QUICK_MODELS if quick else list_presets()
    out: list[list[str]] = []
    for m in models:
        # short-context models (gpt2, bert) at 512 tokens, so their cases size instead of refusing
        short = ["--seq", "512"] if load_model(m).max_position_embeddings < 2048 else []
        for mode in ("train", "lora", "infer"):
            out.append(["size", m, "--mode", mode, *short, "--json"])
            for g in GPUS if not quick else GPUS[:1]:
                out.append(["size", m, "--mode", mode, *short, "--gpu", g, "--json"])
                out.append(["fit", m, "--mode", mode, *short, "--gpu", g, "--json"])
        for extra in EXTRA if not quick or m in QUICK_MODELS[:3] else EXTRA[:4]:
            extra = [*extra, *(short if "--seq" not in extra else [])]
            out.append(["size", m, *extra, "--gpu", GPUS[0], "--json"])
            if "--device" not in extra:
                out.append(["fit", m, *extra, "--gpu", GPUS[1], "--json"])
    return out


def run(args: list[str]) -> dict:
    from typer.testing import CliRunner

    from aiworkbook.cli import app

    r = CliRunner().invoke(app, args)
    # a refused case (SpecError) is golden too: its message, as the CLI would print it
    return {"exit_code": r.exit_code, "output": r.output, "error": str(r.exception) if r.exit_code else ""}


def main(argv: list[str]) -> int:
    action, path = argv[0], argv[1]
    quick = "--quick" in argv
    got = {" ".join(a): run(a) for a in cases(quick)}
    if action == "write":
        with open(path, "w") as f:
            json.dump(got, f, indent=1, sort_keys=True)
        print(f"{len(got)} cases written to {path}")
        return 0
    with open(path) as f:
        want = json.load(f)
    bad = [k for k in want if got.get(k) != want[k]]
    print(f"{len(want) - len(bad)} of {len(want)} cases byte-identical")
    for k in bad[:10]:
        print("DIFFERS:", k)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
