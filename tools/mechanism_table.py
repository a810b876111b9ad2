"""docs/sizing.md's family x mechanism tables, generated from the families' declarations, transformers'
own source and the truth tool's recorded errors, so the page cannot drift from the code.

    .venv/bin/python tools/mechanism_table.py            # print the tables
    .venv/bin/python tools/mechanism_table.py --write    # put them in docs/sizing.md, between the markers
    .venv/bin/python tools/mechanism_table.py --measure  # re-measure every family the truth tool builds
                                                         # (docs/data/activation_errors.json), then --write

A row per family of the registry (aiworkbook.specs.families.PARSERS), read from its example preset; a
column per declared mechanism (every field of aiworkbook.specs.mechanisms.Mechanisms, and the sliding
window a spec declares). A cell says the declared value and the line of the installed transformers that
does it: the first line of the family's modeling file (or the named file) matching the column's pattern.
A declaration no line matches stops the tool: the declaration, or the pattern, is wrong.
tests/test_mechanism_table.py fails when a mechanism has no column, a family no row, or the page differs.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import fields
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "sizing.md"
ERRORS = ROOT / "docs" / "data" / "activation_errors.json"
BEGIN, END = "<!-- mechanism-table: begin (tools/mechanism_table.py) -->", "<!-- mechanism-table: end -->"
#: the measurement the error table records (the truth tool, every family it builds)
MEASURE = "python tools/mechanism_table.py --measure"  # aiworkbook.proofs.activation_truth.measure()


class Column(NamedTuple):
    header: str
    group: str  # the table it is shown in
    pattern: str  # the line of transformers that does it (a regex; {value} is the declared value)


#: one column per mechanism a family declares (Mechanisms' fields, then the spec's sliding window)
COLUMNS: dict[str, Column] = {
    "softmax_fp32": Column("fp32 eager softmax", "attention", r"softmax\([^)]*dtype=torch\.float32"),
    "attn_softcap": Column("score soft-capping (tanh)", "attention", r"softcap"),
    "attention_sinks": Column("attention sinks", "attention", r"torch\.cat\(\[attn_weights, sinks\]"),
    "fused_qkv": Column("fused q/k/v", "attention", r"self\.(c_attn|query_key_value|qkv_proj) = "),
    "qk_norm": Column("q/k norms", "attention", r"self\.(q_norm|q_layernorm|qk_norm) = "),
    "attentions": Column(
        "implementations (when not eager, sdpa, flash)", "attention", r"_supports_(sdpa|flash_attn) = False"
    ),
    "sliding_window": Column(
        "sliding-window layers (SDPA keeps the mask)",
        "attention",
        r"else create_sliding_window_causal_mask|create_(sliding_window|chunked)_causal_mask\(",
    ),
    "positional_mask": Column(
        "mask passed positionally (kept under checkpointing)", "attention", r"^\s+causal_mask,$"
    ),
    "mla_q_lora": Column("MLA q latent", "attention", r"self\.q_lora_rank = config\.q_lora_rank"),
    "mla_kv_lora": Column("MLA kv latent", "attention", r"self\.kv_lora_rank = config\.kv_lora_rank"),
    "mla_rope": Column("MLA rope part", "attention", r"self\.qk_rope_head_dim = config\.qk_rope_head_dim"),
    "mla_nope": Column("MLA nope part", "attention", r"self\.qk_nope_head_dim = config\.qk_nope_head_dim"),
    "rope": Column("rotary", "positions", r"= _?apply_rotary_(pos_)?emb\("),
    "rotary_fraction": Column("rotary share", "positions", r"partial_rotary_factor"),
    "rope_concat": Column(
        "RoPE joined with torch.cat",
        "positions",
        r"torch\.cat\(\((query|q)_rot|torch\.cat\(\[(q_embed|\(q_rot)",
    ),
    "no_rope_layers": Column("NoPE layers", "positions", r"self\.use_rope = "),
    "rope_complex": Column("RoPE as a complex table", "positions", r"torch\.view_as_complex\("),
    "rope_half_tables": Column("cos/sin half a head wide", "positions", r"^\s+emb = freqs$"),
    "qk_norm_rope_only": Column(
        "q/k norms on RoPE layers only", "positions", r"use_qk_norm and self\.use_rope"
    ),
    "nope_temperature": Column(
        "NoPE layers' q temperature", "positions", r"attn_temperature_tuning and not self\.use_rope"
    ),
    "norm_fp32_scale": Column(
        "fp32-scaled norm",
        "norms, MLP and logits",
        r"\(1\.0 \+ self\.weight\.float\(\)\)|\(self\.weight \* hidden_states\)\.to\(input_dtype\)",
    ),
    "post_norms": Column(
        "post-norms (output not kept)", "norms, MLP and logits", r"self\.post_feedforward_layernorm\("
    ),
    "parallel_norms": Column(
        "parallel norms (one saved input)", "norms, MLP and logits", r"if self\.use_parallel_residual"
    ),
    "activation": Column(
        "MLP activation (when not SwiGLU)",
        "norms, MLP and logits",
        r"ACT2FN\[config\.(activation_function|hidden_activation|hidden_act)\]|def _apply_gate",
    ),
    "dropout_default": Column(
        "dropout default", "norms, MLP and logits", r"(attn_pdrop|attention_probs_dropout_prob)\b.*= 0\.1"
    ),
    "multipliers": Column("multipliers", "norms, MLP and logits", r"self\.residual_multiplier = "),
    "router": Column("router (top-k)", "mixture of experts", r"torch\.topk\(|\.topk\("),
    "router_topk_first": Column(
        "top-k before the softmax", "mixture of experts", r"softmax\(router_top_value"
    ),
    "experts_grouped_mm": Column(
        "experts through grouped_mm", "mixture of experts", r"@use_experts_implementation"
    ),
    "router_fp32_input": Column(
        "router's fp32 input", "mixture of experts", r"F\.linear\(hidden_states\.type\(torch\.float32\)"
    ),
    "router_groups": Column("expert groups", "mixture of experts", r"self\.num_group = config\.n_group"),
    "router_group_ids": Column(
        "ids kept per group", "mixture of experts", r"\.topk\(2, dim=-1\)|\.max\(dim=-1\)\.values"
    ),
    "router_topk_groups": Column(
        "groups kept", "mixture of experts", r"self\.topk_group = config\.topk_group"
    ),
    "router_renorm": Column("top-k renormalised", "mixture of experts", r"if self\.norm_topk_prob"),
    "dense_layers": Column(
        "dense layers", "mixture of experts", r"config\.first_k_dense_replace|self\.is_moe_layer = "
    ),
    "dense_intermediate": Column(
        "their MLP width",
        "mixture of experts",
        r"config\.first_k_dense_replace else \w+MLP\(config\)|\w+MLP\(config\)$|"
        r"intermediate_size=config\.intermediate_size_mlp",
    ),
    "experts_dense": Column(
        "every expert runs every token", "mixture of experts", r"routed_in = hidden_states\.repeat\("
    ),
    "shared_expert": Column("shared expert", "mixture of experts", r"self\.shared_experts? = "),
    "shared_intermediate": Column(
        "shared expert's own width",
        "mixture of experts",
        r"shared_expert_intermediate_size|self\.shared_expert = \w+MLP\(config\)$|"
        r"moe_intermediate_size \* config\.n_shared_experts",
    ),
    "shared_gate": Column(
        "shared expert's sigmoid gate", "mixture of experts", r"sigmoid\(self\.shared_expert_gate"
    ),
    "final_softcap": Column("final-logit soft-capping", "norms, MLP and logits", r"final_logit_softcapping"),
}
#: where a column's pattern is found when not in the family's modeling file
CONFIG_COLUMNS = {"dropout_default"}  # the config class's default


def mechanism_fields() -> list[str]:
    """Every field a family declares: Mechanisms' fields and the spec's sliding window."""
    from aiworkbook.specs.mechanisms import Mechanisms

    return [f.name for f in fields(Mechanisms)] + ["sliding_window"]


def families() -> dict[str, Any]:
    """Every family of the registry and the spec of its example preset (or the truth tool's config)."""
    from aiworkbook.proofs.activation_truth import config
    from aiworkbook.specs import spec_from_config
    from aiworkbook.specs.catalog import family_examples, load_model
    from aiworkbook.specs.families import PARSERS

    examples = family_examples()
    out = {}
    for mt in PARSERS:
        preset = examples.get(mt, "-")
        out[mt] = load_model(preset) if preset != "-" else spec_from_config(config(mt))
    return out


@cache
def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


@cache
def _source(mt: str, config_file: bool = False) -> Path:
    """transformers' modeling (or configuration) file of family `mt`, as installed."""
    import inspect

    import transformers

    cfg = transformers.AutoConfig.for_model(mt)
    path = Path(inspect.getfile(transformers.MODEL_MAPPING[type(cfg)]))
    return path.with_name(path.name.replace("modeling_", "configuration_")) if config_file else path


def _declared(spec: Any, name: str) -> Any:
    """The value `spec` declares for `name`, or None where it declares the default (nothing to show)."""
    from aiworkbook.specs.mechanisms import Mechanisms, of

    if name == "sliding_window":
        return spec.sliding_window if spec.sliding_window and spec.sliding_window_layers else None
    value = getattr(of(spec), name)
    default = next(f.default for f in fields(Mechanisms) if f.name == name)
    return None if value == default else value


def _shown(value: Any) -> str:
    if value is True:
        return "yes"
    if isinstance(value, tuple):
        return ", ".join(value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def cell(mt: str, spec: Any, name: str) -> str:
    """`value: line` for a declared mechanism, `-` for none; a declaration no line matches raises."""
    value = _declared(spec, name)
    if value is None:
        return "-"
    col = COLUMNS[name]
    path = _source(mt, config_file=name in CONFIG_COLUMNS)
    lines = _lines(path)
    hit = next((k for k, line in enumerate(lines, 1) if re.search(col.pattern, line)), None)
    if hit is None:
        raise LookupError(
            f"{mt} declares {name}={value!r}, but no line of {path.name} matches {col.pattern!r}"
        )
    where = f"{path.name}:{hit}" if name in CONFIG_COLUMNS else str(hit)
    return f"{_shown(value)}: {where}"


def mechanism_tables() -> str:
    """One table per group of columns; every family a row in each."""
    specs = families()
    groups = dict.fromkeys(c.group for c in COLUMNS.values())
    out = []
    for group in groups:
        names = [n for n, c in COLUMNS.items() if c.group == group]
        first = group == next(iter(groups))
        where = "lines of the file named here" if first else "lines of the file the first table names"
        out.append(f"**{group[0].upper()}{group[1:]}** ({where}, under transformers/models/)\n")
        out.append(
            "| family | " + ("file | " if first else "") + " | ".join(COLUMNS[n].header for n in names) + " |"
        )
        out.append("|---" * (len(names) + 1 + first) + "|")
        for mt, spec in specs.items():
            path = _source(mt)
            file = f"`{path.parent.name}/{path.name}` | " if first else ""
            out.append(f"| {mt} | {file}" + " | ".join(cell(mt, spec, n) for n in names) + " |")
        out.append("")
    return "\n".join(out)


def error_table() -> str:
    """The measured error per family (docs/data/activation_errors.json), and why a family has none."""
    from aiworkbook.proofs.activation_truth import NOT_BUILT
    from aiworkbook.specs.families import PARSERS

    data = json.loads(ERRORS.read_text())
    head = (
        f"Measured by `{data['command']}` with transformers {data['transformers']} and torch {data['torch']} "
        f"on the CPU ({data['date']}): estimate / measured - 1 over every case of the family.\n"
    )
    rows = ["| family | cases | worst | median | worst case |", "|---|---|---|---|---|"]
    for mt in PARSERS:
        got = data["families"].get(mt)
        if got is None:
            rows.append(f"| {mt} | 0 | - | - | not built: {NOT_BUILT[mt]} |")
        else:
            w, m, n, where = got["worst"], got["median"], got["cases"], got["worst_case"]
            rows.append(f"| {mt} | {n} | {100 * w:+.1f} % | {100 * m:+.1f} % | {where} |")
    return head + "\n" + "\n".join(rows) + "\n"


def generated() -> str:
    return f"{BEGIN}\n{mechanism_tables()}\n{error_table()}{END}"


def replaced(text: str) -> str:
    """`text` with the part between the markers generated anew."""
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + generated() + text[end:]


def measure() -> None:
    """Run the truth tool over every family it builds and record the per-family summary."""
    import datetime

    import torch
    import transformers

    from aiworkbook.persist import dumps_json
    from aiworkbook.proofs import activation_truth as truth

    cases = truth.measure()
    summary = {}
    for fam in dict.fromkeys(c.family for c in cases):
        mine = sorted((c for c in cases if c.family == fam), key=lambda c: abs(c.error))
        worst = mine[-1]
        ckpt = " ckpt" if worst.checkpointing else ""
        summary[fam] = {
            "cases": len(mine),
            "worst": worst.error,
            "median": mine[len(mine) // 2].error,
            "worst_case": f"{worst.precision} {worst.attention}{ckpt} {worst.batch}x{worst.seq}",
        }
    doc = {
        "command": MEASURE,
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "date": datetime.date.today().isoformat(),
        "families": summary,
    }
    ERRORS.parent.mkdir(exist_ok=True)
    ERRORS.write_text(dumps_json(doc, indent=1) + "\n")


def main(argv: list[str]) -> int:
    if "--measure" in argv:
        measure()
    if "--write" in argv or "--measure" in argv:
        DOC.write_text(replaced(DOC.read_text()))
    else:
        print(generated())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
