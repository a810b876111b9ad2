"""PreflightPanel: will `vllm serve` start on this GPU next to what already holds it? Reads the GPU now
(aiworkbook.preflight, the same call as `aiworkbook preflight vllm`), shows who holds what, the
answer at the utilisation asked for, the largest that starts with its KV cache, and the sharing risk.
Without a GPU it says "no NVIDIA GPU found" and why."""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W

from .base import Background, Composite, html_table, value_html
from .i18n import label


def check(inputs: dict[str, Any]) -> dict[str, Any]:
    """The pre-flight as a dict (aiworkbook.preflight.vllm.run): Preflight.to_dict(), or the no-GPU
    answer. Bad values raise SpecError (shown in the error area)."""
    from aiworkbook.preflight.vllm import resolve_release, run
    from aiworkbook.sizing.vllm import VllmSettings

    max_len = inputs.get("max_model_len") or None
    device = str(inputs.get("device") or "").strip()
    selectors = [x for x in device.split(",") if x.strip()] or None
    release, source = resolve_release(str(inputs.get("engine_version") or "").strip() or None)
    s = VllmSettings(
        gpu_memory_utilization=inputs["gpu_memory_utilization"], max_model_len=max_len, engine=release
    )
    r = run(str(inputs["model"]).strip(), s, selectors, engine_source=source)
    return r if isinstance(r, dict) else r.to_dict()


class PreflightPanel(Composite):
    """Model, utilisation, context and device in; the answer, who holds what and the risks out.
    `result` is the library's dict; `read()` reads the GPU again (also on the button)."""

    css = "preflight"

    def __init__(
        self, model: str = "llama-3-8b", lang: str = "en", *, auto: bool = True, **kwargs: Any
    ) -> None:
        super().__init__(lang=lang, **kwargs)
        w = words(self.lang)
        style = {"description_width": "initial"}
        self.model = W.Text(value=model, description=w["model"], style=style)
        self.utilization = W.BoundedFloatText(
            value=0.9, min=0.01, max=1.0, step=0.01, description=w["util"], style=style
        )
        self.max_model_len = W.BoundedIntText(
            value=0, min=0, max=10_000_000, description=w["max_len"], style=style
        )
        self.device = W.Text(value="", placeholder="0", description=w["device"], style=style)
        self.engine_version = W.Text(value="", placeholder="0.19.1", description=w["release"], style=style)
        self.button = W.Button(description=w["read"])
        self.button.add_class("aiwb-preflight-read")
        self.headline = value_html("")
        self.details = W.HTML("")
        self.details.add_class("aiwb-preflight-details")
        self._work = Background()
        self.button.on_click(self.guarded(lambda _b: self.read()))
        self.children = [
            W.HTML(f"<b>{html.escape(w['title'])}</b>"),
            W.HBox([self.model, self.utilization]),
            W.HBox([self.max_model_len, self.device]),
            W.HBox([self.engine_version, self.button]),
            self.error_area,
            self.headline,
            self.details,
        ]
        if auto:  # in the background, GPU or none: the page is ready before the answer (start-up)
            self.read()
        self.ready()

    def inputs(self) -> dict[str, Any]:
        return {
            "model": self.model.value,
            "gpu_memory_utilization": float(self.utilization.value),
            "max_model_len": int(self.max_model_len.value),
            "device": self.device.value,
            "engine_version": self.engine_version.value,
        }

    def read(self) -> None:
        """Read the GPU in the background; the answer replaces the panel's when it comes."""
        self._work.submit(lambda: check(self.inputs()), self._show, self.show_error)

    def wait(self, timeout: float = 30.0) -> bool:
        return self._work.wait(timeout)

    def _show(self, doc: dict[str, Any]) -> None:
        self.error = ""
        self.result = doc
        self.headline.value, self.details.value = render(doc, self.lang)


#: the panel's words: `preflight.<key>` of the catalogues
KEYS = (
    "title", "model", "util", "max_len", "device", "read", "no_gpu", "who", "pid", "name", "memory",
    "container", "unattributed", "na", "risk", "none", "release",
)  # fmt: skip


def words(lang: str) -> dict[str, str]:
    """The panel's words in `lang` (those without figures)."""
    return {key: label(f"preflight.{key}", lang) for key in KEYS}


def render(doc: dict[str, Any], lang: str = "en") -> tuple[str, str]:
    """(headline HTML, details HTML) for a pre-flight dict in `lang`; every value escaped. The
    library's reasons and risks are messages (no GPU and NVML's reason by its return code, the free
    memory at start-up, vLLM's own refusal, time-slicing), said in `lang`."""
    from aiworkbook.message import words as said
    from aiworkbook.units import fmt_bytes

    def gib(n: Any) -> str:
        return fmt_bytes(n, lang=lang) if n is not None else label("value.na", lang)

    e, w = html.escape, words(lang)
    if not doc.get("gpu_found", True):
        reason = said((doc.get("reasons") or [""])[0], lang)
        return f"<b>{e(w['no_gpu'])}</b>", f"<span class='aiwb-preflight-reason'>{e(reason)}</span>"
    u = doc["utilization"]
    head = e(label("preflight.starts" if doc["starts"] else "preflight.not_start", lang, u=u))
    parts = [f"<p>{e(said(r, lang))}</p>" for r in doc.get("reasons", [])]
    at = doc.get("at_max_utilization")
    if doc.get("max_utilization") is not None and at is not None:
        line = label(
            "preflight.largest",
            lang,
            u=doc["max_utilization"],
            t=at["kv_cache_tokens"],
            c=at["max_concurrency"],
        )
    else:
        line = w["none"]
    parts.append(f"<p class='aiwb-preflight-largest'>{e(line)}</p>")
    st = doc.get("settings") or {}
    if st.get("engine_version"):
        used = label("preflight.arithmetic", lang, v=st["engine_version"], e=st.get("engine", ""))
        parts.append(f"<p class='aiwb-preflight-release'>{e(used)}</p>")
    for d in doc["devices"]:
        rows = [
            [
                str(t["pid"]),
                t["name"],
                gib(t["used_bytes"]) if t["used_bytes"] is not None else w["na"],
                t.get("container") or t.get("cgroup") or "",
            ]
            for t in d["tenants"]
        ]
        rows.append(["", w["unattributed"], gib(d["unattributed_bytes"]), ""])
        title = label(
            "preflight.device_memory",
            lang,
            device=f"{d['label']} {d['name']}",
            used=gib(d["used_bytes"]),
            total=gib(d["total_bytes"]),
            free=gib(d["free_bytes"]),
        )
        parts.append(f"<p><b>{e(w['who'])}</b> {e(title)}</p>")
        if d.get("names_note"):
            parts.append(f"<p class='aiwb-preflight-note'>{e(said(d['names_note'], lang))}</p>")
        parts.append(
            html_table([w["pid"], w["name"], w["memory"], w["container"]], rows, "aiwb-preflight-tenants")
        )
    for r in doc.get("risks", []):
        parts.append(f"<p class='aiwb-preflight-risk'><b>{e(w['risk'])}:</b> {e(said(r, lang))}</p>")
    return f"<b>{head}</b>", "".join(parts)
