"""The plain-text tables of `aiworkbook size` and `aiworkbook fit`, in the CLI's language (`--lang`).

Every sentence, row label and note is a message (aiworkbook.message.Msg); figures are formatted for
the language from the data (units.fmt_value, a message's kinds), never cut out of English. A row's
label is `size.row.<key>`, whose English is the JSON key itself (`step_time_s`, `kv_cache`), so the
English tables stay what scripts and the docs quote; Dutch and German name the figure in words.
"""

from __future__ import annotations

from typing import Any

from aiworkbook.message import Joined, Msg, words
from aiworkbook.units import fmt_bytes, fmt_value


def row(key: str, lang: str) -> str:
    """A table row's label: a section's JSON key (`tokens_per_s`, `run.days`) in `lang`."""
    return ".".join(words(Msg(f"size.row.{k}"), lang) for k in key.split("."))


def seq_note(spec: Any, w: Any, default: int, lang: str) -> str:
    """--seq followed the model's positions, not the default: say so."""
    new = Msg("size.seq_new", n=w.new_tokens) if w.mode == "infer" and w.new_tokens else ""
    return Msg(
        "size.seq_note",
        seq=w.seq_len,
        new=new,
        model=spec.name,
        positions=spec.max_position_embeddings,
        default=default,
    ).render(lang)


def estimate_lines(spec: Any, est: Any, lang: str) -> list[str]:
    """`size`'s table: the head, the itemised memory, the verdict, the sections and the assumptions."""
    w = est.workload
    gpu = est.gpu.name if est.gpu is not None else Msg("size.no_gpu")
    head = Msg(
        "size.head",
        model=spec.name,
        mode=Msg(f"size.mode.{w.mode}"),
        params=spec.params,
        precision=w.precision,
        gpu=gpu,
        device=est.device,
    )
    out = [head.render(lang)]
    if est.device == "cuda":
        gpus = w.tp * (w.dp if w.training else 1)
        out.append(Msg("size.gpus", gpus=gpus, dp=w.dp, tp=w.tp).render(lang))
    out += ["", Msg("size.memory_title").render(lang)]
    m = est.memory
    labels = {name: row(name, lang) for name, _, _ in m.rows()}
    side = [words(Msg(k), lang) for k in ("size.host", "size.rule_of_thumb")]
    width = max(15, *(len(x) for x in labels.values()), *(len(x) for x in side))
    for name, n, formula in m.rows():
        if name == "total":
            out.append("  " + "-" * 40)
        peak = name == "total" and n < m.summed  # a training step's peak: say what is not alive
        said = words(formula, lang) if name != "total" or peak else ""
        out.append(f"  {labels[name]:<{width}} {fmt_bytes(n, 'GiB', lang=lang):>14}   {said}")
    if m.host_bytes:
        moved = ", ".join(f"{row(k, lang)} {fmt_bytes(v, 'GiB', lang=lang)}" for k, v in m.host.items() if v)
        out.append(f"  {side[0]:<{width + 1}}{fmt_bytes(m.host_bytes, 'GiB', lang=lang):>14}   {moved}")
    r = est.rules_of_thumb
    ratio = Msg("size.rule_ratio", formula=r.formula, ratio=r.ratio_to_itemised)
    out.append(f"  {side[1]:<{width + 1}}{fmt_bytes(r.bytes, 'GiB', lang=lang):>14}   {ratio.render(lang)}")
    f = est.fits
    if f.gpu:
        said = "size.fits_one" if f.fits else "size.not_fit_one"
        out.append("  " + Msg(said, gpu=f.gpu, budget=f.budget_bytes, margin=f.margin()).render(lang))
    for title, section in (
        ("size.title.roofline", est.roofline),
        ("size.title.storage", est.storage),
        ("size.title.cost", est.cost),
    ):
        out += section_lines(Msg(title), section, lang)
    a = est.assumptions
    said_a = Msg(
        "size.assumptions",
        source=a.source,
        write=a.storage_write_bps,
        read=a.storage_read_bps,
        mtbf=a.gpu_mtbf_hours,
        utilisation=a.utilization,
        headroom=a.headroom,
        pue=a.pue,
    )
    return [*out, "", said_a.render(lang)]


def section_lines(title: Msg, section: Any, lang: str) -> list[str]:
    """One typed section of an estimate, each figure in the unit its field declares (nested sections
    as parent.child), a blank line and its title first; nothing for an empty section."""
    rows = _rows(section, lang)
    if not rows:
        return []
    width = max(30, *(len(k) for k, _ in rows))
    return ["", title.render(lang), *(f"  {k:<{width}} {text}" for k, text in rows)]


def _rows(section: Any, lang: str, prefix: str = "") -> list[tuple[str, str]]:
    from aiworkbook.sizing.sections import Section

    out = []
    for k, v in section.items():
        if v is None or isinstance(v, dict):
            continue
        if isinstance(v, Section):
            out += _rows(v, lang, prefix=f"{prefix}{k}.")
        else:
            out.append((row(prefix + k, lang), _value(v, section.unit(k), lang)))
    return out


def _value(v: Any, unit: str, lang: str) -> str:
    """A figure in its unit, a message in the language, a name as it is."""
    return words(v, lang) if isinstance(v, str) else fmt_value(v, unit, lang)


def vllm_lines(vllm: Any, lang: str) -> list[str]:
    """The vLLM start-up section, titled with the release (and arithmetic) that made it."""
    from aiworkbook.sizing.vllm import release_label

    return section_lines(Msg("size.title.vllm", release=release_label(vllm.engine_version)), vllm, lang)


def fit_lines(rep: Any, vllm: Any, lang: str) -> list[str]:
    """`fit`'s table: each capacity answer on its row; max concurrency beside vLLM's own figure."""
    rows = []
    for k, v in rep.items():
        if v is None:
            text = words(Msg("size.none"), lang)
        elif k == "cheapest_gpu":
            text = cheapest_words(v).render(lang)
        else:
            text = _value(v, rep.unit(k), lang)
        if k == "max_concurrency" and v is not None and vllm is not None and vllm.max_concurrency is not None:
            text += " " + engines_differ(vllm.max_concurrency).render(lang)
        rows.append((row(k, lang), text))
    width = max(16, *(len(k) for k, _ in rows))
    return [f"{k:<{width}} {text}" for k, text in rows]


def cheapest_words(v: Any) -> Msg:
    """The lowest-cost option: what the workload costs on it, its hourly price, and what was ranked."""
    return Msg(
        "fit.cheapest",
        gpus=v.gpus,
        gpu=v.gpu,
        per_mtok=v.usd_per_mtok,
        per_hour=v.usd_per_hour,
        price=v.price_words,
        basis=v.basis,
    )


def engines_differ(vllm: float) -> Msg:
    """Why the table's max concurrency and vLLM's start-up figure below differ, both named, and which
    one the deployment uses."""
    return Msg("fit.engines_differ", vllm=vllm)


def answer_line(ans: Any) -> Joined:
    """The answer in one line: verdict, GPUs, price with its source and basis, deployment."""
    o = ans.option
    verdict = Msg("answer.fits", given=ans.given, gpu=ans.gpu) if ans.fits else None
    parts: list[Any] = [verdict or Msg("answer.not_fit", given=ans.given, gpu=ans.gpu)]
    if o is None:
        return Joined(*parts, Msg("answer.no_gpu_holds"))
    if not ans.fits:
        parts.append(Msg("answer.runs_on", gpus=o.gpus, gpu=o.gpu))
    if ans.usd_per_mtok is not None:
        per = "answer.price_infer" if ans.mode == "infer" else "answer.price_train"
        parts.append(Msg(per, usd=ans.usd_per_mtok, gpus=o.gpus, gpu=o.on, price=ans.price_words))
    d = ans.deployment
    if d is not None:
        parts.append(Msg("answer.deploy", engine=d.engine, tp=d.tp, resource=d.resource, count=d.count))
        if d.engine_note:
            parts.append(Msg("answer.deploy_note", note=d.engine_note))
    return Joined(*parts)
