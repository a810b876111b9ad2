"""No **kwargs past the edge (issue 37): every public function, method and class of aiworkbook/ shows
its parameters by name and type (what mypy checks and `inspect.signature`, an IDE and help() show),
except the few below, each with the reason its keywords stay open. A new `**kw` fails here, naming it."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Any

import aiworkbook

#: qualified name -> why its **keywords stay open (who checks them)
ALLOWED: dict[str, str] = {
    # the edge: a proof chosen by name, its inputs by name; the registry builds that proof's one pydantic
    # model from them (proofs/inputs.py; an unknown name -> SpecError, exit 2) and hands the proof only it
    "aiworkbook.proofs.registry.plan": "dispatch by proof name; builds the proof's ProofInputs model from the names",
    "aiworkbook.proofs.registry.run": "dispatch by proof name; builds the proof's ProofInputs model from the names",
    # named values whose names are the data: a message's or chart word's placeholders, output paths
    "aiworkbook.charts.labels.tr": "a translated template's placeholders, named by the catalogue entry",
    "aiworkbook.message.Msg.__new__": "a message's placeholders, named by its catalogue template",
    "aiworkbook.sizing.expr.Term": "a formula leaf's message placeholders beside n, named by its catalogue template",
    "aiworkbook.cli.paths.check_paths": "each value a Path | None; its name is the CLI option it came from",
    "aiworkbook.cli.prove_run.check_outputs": "each value a Path | None; its name is the CLI option it came from",
    # forwarding to a function handed in (like functools.partial): the callee's own signature applies
    "aiworkbook.nvml.attempt": "forwards to the NVML function it is given",
    "aiworkbook.telemetry.nvml_backend.call": "forwards to the NVML function it is given",
    # overrides of another library's API, whose signature it must keep
    "aiworkbook.proofs.dcp_safe.SafeReader.read_metadata": "torch.distributed.checkpoint StorageReader's method",
    **{
        f"aiworkbook.proofs.model.{cls}": "torch's factory keywords (device, dtype) for nn layers"
        for cls in ("RMSNorm", "Attention", "MLP", "MoE", "Block")
    },
    "aiworkbook.proofs.activation_truth.hf_config": "overrides of a transformers config (transformers' fields)",
    "aiworkbook.proofs.activation_truth.build": "overrides of a transformers config (transformers' fields)",
    # pydantic models that keep what they do not declare (extra="allow"), on purpose
    **{
        f"aiworkbook.serving.requests.{cls}": "an OpenAI request body: unknown fields are kept, as servers do"
        for cls in ("ChatMessage", "ChatRequest", "CompletionRequest", "ContentPart", "StreamOptions")
    },
    "aiworkbook.profile.schema.EstimateDoc": "a stored estimate: keys of newer versions are kept, not lost",
    "aiworkbook.profile.schema.ResultDoc": "a stored proof result: keys of newer versions are kept, not lost",
    "aiworkbook.message.Msg": "a message's placeholders, named by its catalogue template",
    "aiworkbook.cli.check_group.CheckGroup": "click.Group's constructor (click's own keywords)",
    # a model's own fields, refused by name by the model it builds (SpecError / KeyError naming it)
    "aiworkbook.sizing.workload.Workload.replace": "Workload's fields, validated by Workload (SpecError)",
    "aiworkbook.sizing.workload.Workload.decoding": "Workload's fields, validated by Workload (SpecError)",
    "aiworkbook.sizing.workload.allowed": "Workload's other fields, validated by Workload (SpecError)",
    "aiworkbook.sizing.assumptions.Assumptions.from_node": "Assumptions' fields (a frozen dataclass)",
    "aiworkbook.sizing.sections.from_mapping": "the section's own fields; unknown ones refused (KeyError)",
    "aiworkbook.specs.families.blocks.assemble": "FamilySpec's fields (a frozen dataclass)",
}


def _modules() -> list[Any]:
    out = []
    for m in pkgutil.walk_packages(aiworkbook.__path__, "aiworkbook."):
        if not any(part.startswith("_") for part in m.name.split(".")[1:]):
            out.append(importlib.import_module(m.name))
    return out


def _public_callables(mod: Any) -> list[tuple[str, Any]]:
    """Functions and classes defined in `mod` (not imported) and the public methods of those classes."""
    out = []
    for name, obj in vars(mod).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != mod.__name__:
            continue
        if inspect.isfunction(obj):
            out.append((f"{mod.__name__}.{name}", obj))
        elif inspect.isclass(obj) and not getattr(obj, "_is_protocol", False):
            out.append((f"{mod.__name__}.{name}", obj))  # its constructor, as callers see it
            for attr, value in vars(obj).items():
                f = value.__func__ if isinstance(value, classmethod | staticmethod) else value
                if inspect.isfunction(f) and (not attr.startswith("_") or attr in ("__new__", "__call__")):
                    out.append((f"{mod.__name__}.{name}.{attr}", f))
    return out


def _open_keywords(f: Any) -> bool:
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):  # a builtin without a signature
        return False
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values())


def test_no_public_callable_takes_untyped_keywords_outside_the_named_list():
    found = {name for mod in _modules() for name, f in _public_callables(mod) if _open_keywords(f)}
    assert sorted(found - ALLOWED.keys()) == [], "give these typed parameters (or add them, with a reason)"
    assert sorted(ALLOWED.keys() - found) == [], "no longer open: take them off ALLOWED"
    assert all(len(why) > 20 for why in ALLOWED.values())


def test_the_sync_wrappers_and_proof_entry_points_show_their_fields():
    """What was `**kw` and is now typed: the fields are in the signature, with their types."""
    from aiworkbook.proofs.checkpoint import save_checkpoint
    from aiworkbook.proofs.kv import prove_kv
    from aiworkbook.proofs.vram import prove_vram
    from aiworkbook.serving.client import run_load, run_load_sync
    from aiworkbook.serving.discover import discover_sync

    assert inspect.signature(run_load_sync).parameters == inspect.signature(run_load).parameters
    assert "deadline" in inspect.signature(run_load_sync).parameters
    assert inspect.signature(discover_sync).parameters["timeout_s"].annotation == "float | None"
    assert {"device", "batches", "contexts", "new_tokens", "budget_bytes"} <= set(
        inspect.signature(prove_kv).parameters
    )
    vram = inspect.signature(prove_vram)
    assert vram.parameters["seq_len"].annotation == "int | None" and vram.return_annotation == "ProofResult"
    assert prove_vram.__name__ == "prove_vram" and "VramInputs" in (prove_vram.__doc__ or "")
    assert list(inspect.signature(save_checkpoint).parameters)[-3:] == ["control", "manifest", "keep"]
