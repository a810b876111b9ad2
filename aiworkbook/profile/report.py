"""Stakeholder reports from a LockedProfile: standalone offline HTML (inline SVG charts rendered by
vl-convert, no script, no CDN, A4 print CSS) and Markdown, in English, Dutch or German.

Sections: the decision, the node, workloads with the itemised memory, estimate vs measured per
proof with verdicts, honesty flags and each proof's notes, latency under concurrency, the roofline,
cost, deployment snippets and the environment."""

from __future__ import annotations

import html as _html
from typing import Any

from aiworkbook.i18n_format import fixed, integer, percent
from aiworkbook.message import restore, words
from aiworkbook.patterns import get_pattern, recommend, text
from aiworkbook.profile.fingerprint import env_parts
from aiworkbook.profile.model import LockedProfile
from aiworkbook.profile.report_blocks import Block, chart, code, h, p, table, ul
from aiworkbook.profile.report_blocks import usd as _usd
from aiworkbook.proofs.flags import FLAGS
from aiworkbook.proofs.registry import chart_kind
from aiworkbook.proofs.result import said_label, said_notes
from aiworkbook.provenance import cpu_only, verdict_words
from aiworkbook.sizing.cost import per_gpu_hour
from aiworkbook.sizing.sections import margin
from aiworkbook.units import fmt_bytes, fmt_value


def build(
    profile: LockedProfile, lang: str | None = None, *, charts: bool = True, traffic: Any = None
) -> list[Block]:
    """Every block of the report, in order. `charts=False` skips rendering (Markdown); `traffic`: the
    CFO's inputs (report_cfo.Traffic: tokens a day, $ per kWh), None for the defaults."""
    lang = lang or profile.lang
    t = _Texts(lang)
    out: list[Block] = [h(1, t("report.title")), p(where(profile).sentence(lang), "aiwb-where")]
    out += _decision(profile, t)
    out += _node(profile, t)
    out += _workloads(profile, t, charts)
    out += _proofs(profile, t, charts)
    out += _latency(profile, t, charts)
    out += _roofline(profile, t, charts)
    out += _cost(profile, t, traffic)
    out += _deployment(profile, t)
    out += _environment(profile, t)
    if profile.notes:
        out += [h(2, t("report.notes")), ul(profile.notes)]
    return out


class _Texts:
    def __init__(self, lang: str) -> None:
        self.lang = lang

    def __call__(self, key: str) -> str:
        return text(key, self.lang)


# ---- sections ------------------------------------------------------------------------------------
def _decision(prof: LockedProfile, t: _Texts) -> list[Block]:
    pat = get_pattern(prof.pattern, t.lang)
    created = prof.created.strftime("%Y-%m-%d %H:%M UTC")
    out = [
        p(f"{t('report.pattern')}: {pat.title} · {t('report.created')}: {created}", "aiwb-meta"),
        *[p(line, "aiwb-value aiwb-headline") for line in headlines(prof, t)],
        *[p(said, "aiwb-price-source") for said in price_words(prof, t.lang)],
        h(2, f"{t('report.decision')}: {pat.title}"),
        p(pat.summary),
    ]
    if prof.answers:
        rec = recommend(prof.answers, t.lang)
        if rec.pattern.id == prof.pattern:
            out += [h(3, t("report.reasons")), ul(rec.reasons)]
        else:
            out.append(p(t("report.recommended_other").format(pattern=rec.pattern.title)))
    out += [
        h(3, t("report.use_when")),
        ul(pat.use_when),
        h(3, t("report.infrastructure")),
        ul(pat.infrastructure),
        h(3, t("report.track")),
        ul(pat.target_labels().values()),
        h(3, t("report.red_flags")),
        ul(pat.red_flags),
    ]
    return out


def where(prof: LockedProfile) -> Any:
    """Where the figures were measured: the golden proofs' environments (nothing measured when none)."""
    from aiworkbook.provenance import from_results

    return from_results(g.result for g in prof.proofs)


def headlines(prof: LockedProfile, t: _Texts) -> list[str]:
    """The answer first, one line per workload: model, shape, fit on which GPU, headroom, $/Mtok."""
    lines = []
    for w in prof.workloads:
        est = prof.estimates.get(w.name, {})
        wl = _shape(est.get("workload", w.workload))
        if wl.mode == "infer":
            shape = f"{wl.concurrency} × {integer(wl.context_len, t.lang)} {t('report.tokens')}"
        else:
            shape = f"{t('mode.' + wl.mode)} {wl.batch} × {integer(wl.seq_len, t.lang)} {t('report.tokens')}"
        parts = [f"{w.name} — {w.model}, {shape}"]
        fit = est.get("fits") or {}
        cost = est.get("cost") or {}
        ans = answer_of(prof, w)
        cost = _answer_cost(cost, ans)
        if fit.get("gpu"):
            verdict = t("report.fits") if fit.get("fits") else t("report.does_not_fit")
            gpus = ans.given if ans is not None else wl.tp * (wl.dp if wl.training else 1)
            parts.append(f"{verdict}: {gpus} × {fit['gpu']}")
            parts.append(words(margin(fit["headroom_bytes"]), t.lang))
            if not fit.get("fits"):  # never priced on GPUs it does not fit on: what it needs, priced
                parts += _needs_parts(ans, t)
                cost = {}
        if cost.get("decode_usd_per_mtok") is not None:
            parts.append(f"{_usd(cost['decode_usd_per_mtok'], t.lang)} {t('report.usd_per_mtok')}")
        elif cost.get("usd_per_mtok_trained") is not None:
            run = (cost.get("run") or {}).get("usd")
            parts.append(
                f"{fixed(run, 0, t.lang)} {t('report.usd_per_run')}"
                if run is not None
                else f"{_usd(cost['usd_per_mtok_trained'], t.lang)} {t('report.usd_per_mtok_trained')}"
            )
        if cost.get("on") and len(parts) > 1:  # the MIG instance the price is for
            parts[-1] += f" ({cost['gpus']} × {cost['on']})"
        lines.append(", ".join(parts))
    return lines


def _answer_cost(cost: dict[str, Any], ans: Any) -> dict[str, Any]:
    """The stored estimate's cost, or the MIG instance's where the answer deploys on one (needs.priced_cost)."""
    from aiworkbook.sizing.needs import priced_cost

    return priced_cost(cost, ans.option if ans is not None and ans.fits else None)


#: the answers of the last profiles rendered: (profile, {workload name: Answer or None})
_ANSWERS: list[tuple[Any, dict[str, Any]]] = []


def answer_of(prof: LockedProfile, entry: Any) -> Any:
    """The answer (aiworkbook.sizing.answer) for one workload of the profile, priced as the lock priced
    it (profile.lock.assumptions_for), computed once per profile: the headline, the cost table and the
    deployment all render it. None without a catalogue GPU sized on CUDA."""
    answers = next((a for held, a in _ANSWERS if held is prof), None)
    if answers is None:
        answers = {}
        _ANSWERS[:] = [*_ANSWERS[-3:], (prof, answers)]
    if entry.name not in answers:
        answers[entry.name] = _compute_answer(prof, entry)
    return answers[entry.name]


def _compute_answer(prof: LockedProfile, entry: Any) -> Any:
    from aiworkbook.errors import SpecError
    from aiworkbook.profile.lock import assumptions_for
    from aiworkbook.sizing.answer import answer
    from aiworkbook.specs import get_gpu

    est = prof.estimates.get(entry.name) or {}
    gpu = (est.get("fits") or {}).get("gpu")
    if not gpu or est.get("device", "cuda") != "cuda":
        return None
    try:
        g = get_gpu(gpu)
    except SpecError:  # a GPU file outside the catalogue: the verdict stands unpriced
        return None
    _, a = assumptions_for(entry, prof.node.declared)
    return answer(entry.spec(), _shape(est["workload"]), g, a)


def _needs_parts(ans: Any, t: _Texts) -> list[str]:
    """ "needs 16 × RTX-4090, or 4 × MI300X at the lowest cost, 0.12 USD per million output tokens"."""
    if ans is None:
        return []
    n, out = ans.needs, []
    if n.here is not None:
        out.append(t("report.needs").format(n=n.here.gpus, gpu=n.here.gpu))
    if n.cheapest is not None and n.cheapest != n.here:  # "or …" only after what it needs here
        said = "report.lowest_cost" if n.here is not None else "report.needs"
        out.append(t(said).format(n=n.cheapest.gpus, gpu=n.cheapest.gpu))
    o = ans.option
    if o is not None and o.usd_per_mtok is not None:
        out.append(f"{_usd(o.usd_per_mtok, t.lang)} {t('report.usd_per_mtok')} ({o.gpus} × {o.on})")
    elif o is not None and o.usd_per_mtok_trained is not None:
        out.append(
            f"{_usd(o.usd_per_mtok_trained, t.lang)} {t('report.usd_per_mtok_trained')} ({o.gpus} × {o.on})"
        )
    return out


def _shape(wl: dict[str, Any]) -> Any:
    """An estimate's stored workload as a Workload (its defaults where a key is left out; load_profile
    checked its types), so the report never indexes a key a hand-edited file dropped."""
    from aiworkbook.sizing import Workload

    return Workload(**wl)


def _node(prof: LockedProfile, t: _Texts) -> list[Block]:
    out = [h(2, t("report.node"))]
    rows = []
    for label, node in (
        (t("report.declared"), prof.node.declared),
        (t("report.detected"), prof.node.detected),
    ):
        if node is None:
            continue
        rows.append((label, _said(node, "name", t.lang), *_node_cells(node, t)))
        rows += [(f"{label} · {t('report.pool')}", pool.name, *_node_cells(pool, t)) for pool in node.pools]
    if rows:
        out.append(table(("", t("report.name"), "GPU", "CPU", "RAM", t("report.storage"), "USD/h"), rows))
    out.append(p(f"{t('report.fingerprint')}: {_fingerprint(prof, t)}", "aiwb-fingerprint"))
    return out


def _fingerprint(prof: LockedProfile, t: _Texts) -> str:
    """The node's fingerprint in one line, its words in the report's language."""
    return words(prof.node.fingerprint.describe(), t.lang)


def _said(node: Any, field: str, lang: str) -> str:
    """A node's text field in `lang`: a message again where the profile recorded one (node.messages),
    else the text as stored."""
    rec = (getattr(node, "messages", None) or {}).get(field)
    return words(restore(getattr(node, field, "") or "", rec), lang)


def _said_key(doc: dict[str, Any], key: str, lang: str) -> str:
    """A stored dict's text (a proof's environment) in `lang`, by its `messages` record where it has one."""
    msgs = doc.get("messages")
    return words(restore(doc.get(key) or "", msgs.get(key) if isinstance(msgs, dict) else None), lang)


def _node_cells(node: Any, t: _Texts) -> tuple[str, ...]:
    import re

    gpu = f"{node.gpu_count} × {node.gpu}" if node.gpu else (_said(node, "gpu_status", t.lang) or "—")
    model = re.sub(r"\s*\(\d+ cores\)$", "", node.cpu_model or "?")  # a declared "(32 cores)" said once
    cpu = f"{model} ({node.cpu_cores} {t('report.cores')})"
    disk = (
        f"{fmt_bytes(node.local_storage_bytes, lang=t.lang)} {node.storage_type}".strip()
        if node.local_storage_bytes
        else "—"
    )
    price = _usd(node.price_per_hour_usd, t.lang) if node.price_per_hour_usd else "—"
    return gpu, cpu, fmt_bytes(node.ram_bytes, lang=t.lang), disk, price


def _workloads(prof: LockedProfile, t: _Texts, charts: bool) -> list[Block]:
    if not prof.workloads:
        return []
    out = [h(2, t("report.workloads"))]
    for w in prof.workloads:
        est = prof.estimates.get(w.name)
        if not est:
            continue
        wl = est["workload"]
        mode = (
            t("mode." + wl["mode"]) if wl.get("mode") in ("infer", "train", "lora", "qlora") else wl["mode"]
        )
        out.append(h(3, f"{w.name}: {est['model']} ({mode}) · {est.get('gpu') or est['device']}"))
        from aiworkbook.charts.theme import component_label
        from aiworkbook.sizing.formula_data import formula_said, stored_formulas

        mem, formulas, stored = est["memory"], est.get("formulas", {}), stored_formulas(est)
        rows = [
            (
                component_label(c, t.lang),
                fmt_bytes(v, lang=t.lang),
                formula_said(formulas.get(c, ""), t.lang, stored.get(c)),
            )
            for c, v in mem.items()
            if v or c == "total"
        ]
        out.append(
            table((t("report.component"), t("report.bytes"), t("report.formula")), rows, "aiwb-memory")
        )
        rule = est.get("rules_of_thumb") or {}
        if rule:
            from aiworkbook.sizing.formula_data import rule_said

            formula = rule_said(rule, t.lang)
            out.append(p(f"{t('report.rule_of_thumb')}: {formula} = {fmt_bytes(rule['bytes'], lang=t.lang)}"))
        if charts:
            from aiworkbook.charts import memory_chart

            out.append(
                _chart(
                    "memory",
                    f"{t('report.memory')}: {w.name}",
                    lambda est=est: memory_chart(est, lang=t.lang),
                )
            )
    return out


def _proofs(prof: LockedProfile, t: _Texts, charts: bool) -> list[Block]:
    out = [h(2, t("report.proofs"))]
    if not prof.proofs:
        return [*out, p(t("report.no_proofs"))]
    from aiworkbook.charts.theme import verdict_label

    rows, flags = [], set()
    for g in prof.proofs:
        r = g.result
        ratio = fixed(r["ratio"], 3, t.lang, False) if r.get("ratio") is not None else "—"
        tol = prof.tolerance(g.name)
        rows.append(
            (
                g.name,
                _estimate_cell(r, t.lang),
                fmt_value(r.get("measured"), r.get("unit", ""), t.lang),
                ratio,
                verdict_label(verdict_words(r), t.lang),
                ", ".join(r.get("flags", [])) or "—",
                f"±{percent(tol.pass_within, 0, t.lang)} / ±{percent(tol.fail_beyond, 0, t.lang)}",
            )
        )
        flags.update(r.get("flags", []))
    header = (
        t("report.proof"),
        t("report.estimate"),
        t("report.measured"),
        t("report.ratio"),
        t("report.verdict"),
        t("report.flags"),
        t("report.tolerance"),
    )
    out.append(table(header, rows, "aiwb-proofs"))
    if any(cpu_only(g.result) for g in prof.proofs):
        out.append(p(t("report.cpu_only_note"), "aiwb-cpu-only"))
    if flags:
        out += [
            h(3, t("report.flags")),
            ul(f"{f}: {t('flag.' + f) if f in FLAGS else ''}" for f in sorted(flags)),
        ]
    noted = [g for g in prof.proofs if g.result.get("notes")]
    if noted:  # what a proof found beside its one figure: the serving proof's SLO load, the KV run-out
        out += [
            h(3, t("report.proof_notes")),
            ul(f"{g.name}: {words(n, t.lang)}" for g in noted for n in said_notes(g.result)),
        ]
    if charts and any(g.result.get("ratio") is not None for g in prof.proofs):  # no empty chart
        from aiworkbook.charts import proofs_chart

        results = [g.result for g in prof.proofs]
        out.append(_chart("proofs", t("report.proofs"), lambda: proofs_chart(results, lang=t.lang)))
    return out


def _estimate_cell(r: dict[str, Any], lang: str = "en") -> str:
    if r.get("predicted") is None:
        return "—"
    value = fmt_value(r.get("predicted"), r.get("unit", ""), lang)
    return f"{words(said_label(r), lang)}: {value}" if r.get("predicted_label") else value


def _latency(prof: LockedProfile, t: _Texts, charts: bool) -> list[Block]:
    out = [h(2, t("report.latency"))]
    # the proofs the registry draws as a latency sweep (by their declared kind, not by probing details)
    sweeps = [
        g
        for g in prof.proofs
        if chart_kind(g.proof) == "latency" and isinstance(g.result.get("details", {}).get("sweep"), list)
    ]
    if not sweeps:
        return [*out, p(t("report.no_serving"))]
    for g in sweeps:
        det = g.result["details"]
        rows = [
            (
                r["load"],
                *(fmt_value(r.get(k), "s", t.lang) for k in ("p50_ttft_s", "p95_ttft_s", "p99_ttft_s")),
                *(fmt_value(r.get(k), "s", t.lang) for k in ("p95_tpot_s", "p99_tpot_s")),
                integer(r.get("throughput_tok_s", 0), t.lang),
            )
            for r in det["sweep"]
        ]
        load = t("report.load")
        out.append(table((load, "p50 TTFT", "p95 TTFT", "p99 TTFT", "p95 TPOT", "p99 TPOT", "tok/s"), rows))
        if charts:
            from aiworkbook.charts import latency_chart

            out.append(
                _chart(
                    "latency",
                    f"{t('report.latency')}: {g.name}",
                    lambda d=det: latency_chart(d["sweep"], d.get("knee"), lang=t.lang),
                )
            )
    return out


def roofline_rows(prof: LockedProfile) -> list[dict[str, Any]] | None:
    """A roofline proof's measured chart rows, else the datasheet roofline of the first estimated GPU
    with the first inference workload's decode point on it (None when neither exists)."""
    for g in prof.proofs:
        rows = g.result.get("details", {}).get("chart")
        if chart_kind(g.proof) == "roofline" and isinstance(rows, list) and rows:
            return rows
    est = next((e for e in prof.estimates.values() if e.get("gpu")), None)
    if est is None:
        return None
    from aiworkbook.proofs.roofline import roofline_chart_data, workload_point
    from aiworkbook.specs import get_gpu

    entry = next(w for w in prof.workloads if prof.estimates.get(w.name) is est)
    wl = _shape(est["workload"])
    point = None
    if wl.mode == "infer":
        point = workload_point(entry.spec(), batch=wl.concurrency, context=wl.context_len)
    return roofline_chart_data(get_gpu(est["gpu"]), point, label=entry.name)


def _roofline(prof: LockedProfile, t: _Texts, charts: bool) -> list[Block]:
    out = [h(2, t("report.roofline"))]
    if not charts:
        return [*out, p(t("report.charts_in_html"))]
    rows = roofline_rows(prof)
    if rows is None:
        return [*out, p(t("report.no_roofline"))]
    from aiworkbook.charts import roofline_chart

    if _roofline_measured(prof):
        return [*out, _chart("roofline", t("report.roofline"), lambda: roofline_chart(rows, lang=t.lang))]
    caption = f"{t('report.roofline')}: {t('report.datasheet')}"  # never mistaken for a measurement
    return [
        *out,
        p(caption, "aiwb-datasheet"),
        _chart("roofline", caption, lambda: roofline_chart(rows, "datasheet", lang=t.lang)),
    ]


def _roofline_measured(prof: LockedProfile) -> bool:
    """Whether a roofline proof's own chart rows are in the profile (else the rows are the datasheet's)."""
    return any(
        chart_kind(g.proof) == "roofline"
        and isinstance(g.result.get("details", {}).get("chart"), list)
        and bool(g.result["details"]["chart"])
        for g in prof.proofs
    )


def price_words(prof: LockedProfile, lang: str) -> list[str]:
    """Where the report's prices come from, once per distinct source: each priced answer's provenance
    ("list price, <source>, <date>; a lower bound at roofline throughput") in `lang`."""
    out: list[str] = []
    for w in prof.workloads:
        ans = answer_of(prof, w) if prof.estimates.get(w.name) else None
        if ans is not None and ans.usd_per_mtok is not None:
            said = ans.price_words.render(lang)
            if said not in out:
                out.append(said)
    return out


def _mapping(x: Any) -> dict[str, Any]:
    """A stored estimate's object as a dict; anything else (an edited file) counts as not recorded."""
    return x if isinstance(x, dict) else {}


def _cfo(prof: LockedProfile, t: _Texts, traffic: Any) -> list[Block]:
    """Monthly cost at the expected traffic, $/Mtok per GPU option, energy in dollars (report_cfo)."""
    from aiworkbook.profile.report_cfo import Priced, Traffic, blocks

    items = [
        Priced(
            w.name, w.spec(), _shape(est["workload"]), answer_of(prof, w), _mapping(est.get("assumptions"))
        )
        for w in prof.workloads
        if (est := prof.estimates.get(w.name))
    ]
    return blocks(items, traffic if traffic is not None else Traffic(), t.lang)


def _cost(prof: LockedProfile, t: _Texts, traffic: Any = None) -> list[Block]:
    """Serving priced per million output tokens, training per token trained and per run (never as
    output tokens); a set-up that does not fit is priced on the GPUs it needs, at their own price."""
    rows = []
    by_name = {w.name: w for w in prof.workloads}
    for name, est in prof.estimates.items():
        c = dict(est.get("cost") or {})
        fit = est.get("fits") or {}
        if fit.get("fits") and name in by_name:
            c = _answer_cost(c, answer_of(prof, by_name[name]))
        where = f"{_usd(c.get('price_per_gpu_hour') or 0, t.lang)} × {c.get('gpus', '—')}"
        if c.get("on"):
            where += f" {c['on']}"
        if fit.get("gpu") and not fit.get("fits") and name in by_name:
            ans = answer_of(prof, by_name[name])
            o = ans.option if ans is not None else None
            c = {"note": t("report.does_not_fit") + f": {c.get('gpus', '—')} × {fit['gpu']}"}
            if o is not None:
                c = {"decode_usd_per_mtok": o.usd_per_mtok, "usd_per_mtok_trained": o.usd_per_mtok_trained}
                per_gpu = per_gpu_hour(o.usd_per_hour, o.gpus) if o.usd_per_hour else 0
                where = f"{fixed(per_gpu, 2, t.lang)} × {o.gpus} {o.on}"
        run = (c.get("run") or {}).get("usd")
        note = c.get("note", "")
        rows.append(
            (
                name,
                _usd(c.get("decode_usd_per_mtok"), t.lang),
                _usd(c.get("prefill_usd_per_mtok"), t.lang),
                _usd(c.get("usd_per_mtok_trained"), t.lang),
                fixed(run, 0, t.lang) if run is not None else "—",
                where + (f" ({note})" if note else ""),
            )
        )
    if not rows:
        return []
    header = (
        "",
        t("report.usd_per_mtok"),
        t("report.prefill_usd"),
        t("report.usd_per_mtok_trained"),
        t("report.usd_per_run"),
        t("report.usd_gpu_h"),
    )
    said = [p(x, "aiwb-price-source") for x in price_words(prof, t.lang)]
    return [h(2, t("report.cost")), table(header, rows, "aiwb-cost"), *said, *_cfo(prof, t, traffic)]


def _deployment(prof: LockedProfile, t: _Texts) -> list[Block]:
    from aiworkbook.profile.snippets import k8s_yaml, snippets

    out = []
    for w in prof.workloads:
        est = prof.estimates.get(w.name)
        if not est:
            continue
        ans = answer_of(prof, w)
        s = snippets(w, est, answer=ans)
        out.append(h(3, w.name + (f" · {t('report.placement')} {s['on']}" if s.get("on") else "")))
        if "vllm" in s:
            out.append(code(s["vllm"].command(), "bash"))
        if "k8s" in s:
            out.append(code(k8s_yaml(s["k8s"]), "yaml"))
        if "note" in s:
            out.append(p(s["note"]))
        if ans is not None and ans.deployment is not None and ans.deployment.engine_note:
            out.append(p(words(ans.deployment.engine_note, t.lang)))
    return [h(2, t("report.deployment")), *out] if out else []


def _environment(prof: LockedProfile, t: _Texts) -> list[Block]:
    rows = []
    for g in prof.proofs:
        env = g.result.get("environment") or {}
        gpus, host, tor = env_parts(env)
        rows.append(
            (
                g.name,
                g.result.get("device", ""),
                ", ".join(str(x.get("name")) for x in gpus) or _said_key(env, "gpu_status", t.lang) or "—",
                str(gpus[0].get("driver")) if gpus else "—",
                f"{tor.get('version', host.get('torch_version', '—'))} / CUDA {tor.get('cuda') or '—'}",
                str(host.get("cpu_model", "—")),
                str(tor.get("num_threads", "—")),
                g.result.get("created", ""),
            )
        )
    out = [h(2, t("report.environment")), p(f"{t('report.fingerprint')}: {_fingerprint(prof, t)}")]
    if rows:
        head = (
            "report.proof",
            "report.device",
            "GPU",
            "report.driver",
            "torch",
            "CPU",
            "report.threads",
            "report.run_at",
        )
        out.append(table(tuple(t(k) if k.startswith("report.") else k for k in head), rows))
    return out


def _chart(name: str, title: str, make: Any) -> Block:
    """A chart block; figures a chart cannot draw (a hand-edited profile's, past the schema's checks)
    are bad input naming the chart, not an internal error."""
    from aiworkbook.charts import to_svg
    from aiworkbook.errors import SpecError

    try:
        return chart(name, title, to_svg(make()))
    except SpecError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, ArithmeticError) as exc:
        raise SpecError(
            f"chart.{name}", f"{type(exc).__name__}: {exc}", "figures this chart can draw"
        ) from None


# ---- renderers -------------------------------------------------------------------------------------
_CSS = """
@page { size: A4; margin: 14mm 12mm; }
body { font: 10.5pt/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1b1b1b;
       max-width: 190mm; margin: 0 auto; padding: 8mm; }
h1 { font-size: 18pt; margin: 0 0 4pt; } h2 { font-size: 13.5pt; margin: 16pt 0 6pt;
     border-bottom: 1px solid #bbb; padding-bottom: 2pt; } h3 { font-size: 11pt; margin: 10pt 0 4pt; }
table { border-collapse: collapse; width: 100%; margin: 4pt 0 8pt; font-size: 9pt; }
th, td { border: 1px solid #ccc; padding: 2pt 4pt; text-align: left; vertical-align: top; }
th { background: #f0f0f0; } .aiwb-headline { font-size: 11.5pt; font-weight: 600; margin: 2pt 0; }
.aiwb-meta { color: #555; } figure { margin: 6pt 0; } figure svg { max-width: 100%; height: auto; }
figcaption { font-size: 9pt; color: #555; } pre { background: #f6f6f6; padding: 6pt; font-size: 8.5pt;
     white-space: pre-wrap; border: 1px solid #ddd; }
@media print { body { padding: 0; max-width: none; } h2, h3 { break-after: avoid; }
  figure, table, pre { break-inside: avoid; } a { color: inherit; text-decoration: none; } }
"""


def render_html(profile: LockedProfile, lang: str | None = None, traffic: Any = None) -> str:
    """One self-contained HTML page: inline CSS and SVG, no script, nothing fetched from a network."""
    lang = lang or profile.lang
    esc = _html.escape
    body = []
    for b in build(profile, lang, charts=True, traffic=traffic):
        cls = f' class="{esc(b.css)}"' if b.css else ""
        if b.kind in ("h1", "h2", "h3"):
            body.append(f"<{b.kind}>{esc(b.text)}</{b.kind}>")
        elif b.kind == "p":
            body.append(f"<p{cls}>{esc(b.text)}</p>")
        elif b.kind == "ul":
            body.append(f"<ul{cls}>" + "".join(f"<li>{esc(i)}</li>" for i in b.items) + "</ul>")
        elif b.kind == "table":
            head = "".join(f"<th>{esc(c)}</th>" for c in b.header)
            rows = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in b.rows)
            body.append(f"<table{cls}><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
        elif b.kind == "chart":
            body.append(
                f'<figure class="aiwb-chart" data-chart="{esc(b.meta["chart"])}">{b.svg}'
                f"<figcaption>{esc(b.text)}</figcaption></figure>"
            )
        elif b.kind == "code":
            body.append(f"<pre><code>{esc(b.text)}</code></pre>")
    title = f"{text('report.title', lang)}: {get_pattern(profile.pattern, lang).title}"
    return (
        f'<!DOCTYPE html>\n<html lang="{lang}">\n<head>\n<meta charset="utf-8">\n'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(title)}</title>\n<style>{_CSS}</style>\n</head>\n"
        f'<body class="aiwb-report aiwb-ready">\n' + "\n".join(body) + "\n</body>\n</html>\n"
    )


def render_markdown(profile: LockedProfile, lang: str | None = None, traffic: Any = None) -> str:
    """The same report as Markdown (tables, lists, code blocks); the charts stay in the HTML."""
    lang = lang or profile.lang
    out: list[str] = []
    for b in build(profile, lang, charts=False, traffic=traffic):
        if b.kind in ("h1", "h2", "h3"):
            out.append("#" * int(b.kind[1]) + " " + _md(b.text))
        elif b.kind == "p":
            out.append(f"**{_md(b.text)}**" if "aiwb-headline" in b.css else _md(b.text))
        elif b.kind == "ul":
            out.append("\n".join(f"- {_md(i)}" for i in b.items))
        elif b.kind == "table":
            lines = ["| " + " | ".join(_cell(c) for c in b.header) + " |", "|" + "---|" * len(b.header)]
            lines += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in b.rows]
            out.append("\n".join(lines))
        elif b.kind == "code":
            fence = _fence(b.text)
            out.append(f"{fence}{b.meta.get('lang', '')}\n{b.text}\n{fence}")
    return "\n\n".join(out) + "\n"


#: ASCII punctuation that starts Markdown syntax inline: emphasis, code spans, links and images
#: (`[x](javascript:...)`), tables, headings, strikethrough; escaped with a backslash (CommonMark 2.4)
_MD_PUNCT = frozenset("\\`*_[]|#~!")
#: HTML's own: a raw `<script>` or `<img onerror>` would pass through Markdown untouched
_MD_HTML = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}


def _md(s: str) -> str:
    """Text (names, notes, paths a user typed among it) as Markdown that renders as exactly that text:
    HTML characters as entities, Markdown punctuation backslash-escaped, line breaks as spaces, so no
    string can open a tag, a link, an image or a new block."""
    out = []
    for ch in str(s):
        if ch in _MD_HTML:
            out.append(_MD_HTML[ch])
        elif ch in _MD_PUNCT:
            out.append("\\" + ch)
        elif ch in "\r\n":
            out.append(" ")
        else:
            out.append(ch)
    return "".join(out)


def _fence(code_text: str) -> str:
    """A code fence longer than any run of backticks in the code, so the code cannot close it."""
    longest, run = 0, 0
    for ch in code_text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def _cell(s: str) -> str:
    return _md(s)  # `|` escaped, line breaks as spaces: one cell stays one cell
