"""Count how often one `estimate()` enters the functions of aiworkbook/sizing/states.py and
activations.py: the measure behind "sizing in one pass" (issue 24 item 7).

    .venv/bin/python tools/sizing_call_counts.py

Every module-level function of the two modules is wrapped, both where it is defined and wherever
another aiworkbook module imported it by name, so calls from inside the module count too. "entries"
counts the calls made from outside the module (the times sizing returns to it); "all calls" every one.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from functools import wraps
from types import FunctionType, ModuleType

WATCHED = ("aiworkbook.sizing.states", "aiworkbook.sizing.activations")

#: (label, model, Workload fields, GPU): the workloads the issue follows.
CASES = (
    ("train full", "llama-3-8b", {"mode": "train"}, "H100-SXM"),
    ("train LoRA", "llama-3-8b", {"mode": "lora"}, "H100-SXM"),
    ("train ZeRO-3", "llama-3-8b", {"mode": "train", "dp": 8, "zero": 3}, "H100-SXM"),
    (
        "infer",
        "llama-3-8b",
        {"mode": "infer", "concurrency": 8, "seq_len": 1024, "new_tokens": 256},
        "H100-SXM",
    ),
    ("infer vLLM", "llama-3-8b", {"mode": "infer", "engine": "vllm", "concurrency": 16}, "H100-SXM"),
)


@contextmanager
def counting() -> Iterator[Counter]:
    """Wrap every function of WATCHED (and its by-name imports in aiworkbook.*) with a counter."""
    calls: Counter = Counter()
    depth: Counter = Counter()  # per module: >0 while one of its functions runs
    originals: list[tuple[ModuleType, str, object]] = []
    wrapped: dict[object, object] = {}
    for modname in WATCHED:
        mod = sys.modules[modname]
        for name, fn in vars(mod).items():
            if isinstance(fn, FunctionType) and fn.__module__ == modname:

                def make(f=fn, key=f"{modname.rsplit('.', 1)[1]}.{name}"):
                    @wraps(f)
                    def w(*a, **k):
                        mod_key = key.split(".")[0]
                        calls[key] += 1
                        if not depth[mod_key]:  # entered from outside the module
                            calls["entries:" + mod_key] += 1
                        depth[mod_key] += 1
                        try:
                            return f(*a, **k)
                        finally:
                            depth[mod_key] -= 1

                    return w

                wrapped[fn] = make()
    for mod in [m for n, m in list(sys.modules.items()) if n.startswith("aiworkbook") and m is not None]:
        for name, obj in list(vars(mod).items()):
            if isinstance(obj, FunctionType) and obj in wrapped:
                originals.append((mod, name, obj))
                setattr(mod, name, wrapped[obj])
    try:
        yield calls
    finally:
        for mod, name, obj in originals:
            setattr(mod, name, obj)


def count(model: str, fields: dict, gpu: str | None) -> Counter:
    """Calls per function during one estimate() of `model` under `fields` on `gpu`."""
    from aiworkbook.sizing import Workload, estimate
    from aiworkbook.specs import load_gpu, load_model

    spec, g, w = load_model(model), load_gpu(gpu) if gpu else None, Workload(**fields)
    estimate(spec, w, gpu=g)  # warm: imports done, so every wrapped module is loaded
    with counting() as calls:
        estimate(spec, w, gpu=g)
    return calls


def main() -> int:
    for label, model, fields, gpu in CASES:
        c = count(model, fields, gpu)
        by_mod: Counter = Counter()
        for k, v in c.items():
            if not k.startswith("entries:"):
                by_mod[k.split(".")[0]] += v
        print(
            f"{label:14} entries: states {c['entries:states']:3}, activations {c['entries:activations']:3};"
            f" all calls: states {by_mod['states']:3}, activations {by_mod['activations']:3}"
        )
        print("    repeated:", ", ".join(f"{k}×{v}" for k, v in sorted(c.items()) if v > 1 and ":" not in k))
    return 0


if __name__ == "__main__":
    sys.exit(main())
