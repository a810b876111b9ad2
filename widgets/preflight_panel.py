"""PreflightPanel: will `vllm serve` start on this GPU next to what already holds it? Reads the GPU now
(aiworkbook.preflight, the same call as `aiworkbook preflight vllm`), shows who holds what, the
answer at the utilisation asked for, the largest that starts with its KV cache, and the sharing risk.
Without a GPU it says "no NVIDIA GPU found" and why."""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W

from .base import Background, Composite, html_table, value_html

#: The panel's own words (en, nl, de); the library's reasons and risks stay as it words them.
WORDS: dict[str, dict[str, str]] = {
    "en": {
        "title": "Pre-flight on this GPU (vLLM)",
        "model": "Model",
        "util": "--gpu-memory-utilization",
        "max_len": "--max-model-len (0: model's)",
        "device": "Device(s)",
        "read": "Read this GPU now",
        "no_gpu": "no NVIDIA GPU found",
        "starts": "Starts at {u}",
        "not_start": "Will not start at {u}",
        "largest": "largest --gpu-memory-utilization that starts: {u} → KV cache {t} tokens, max concurrency {c}",
        "none": "no --gpu-memory-utilization starts next to the co-tenants",
        "who": "Who holds what (NVML, read now)",
        "pid": "pid",
        "name": "process",
        "memory": "VRAM",
        "container": "container / cgroup",
        "unattributed": "not attributed to a listed process",
        "na": "n/a (NVML cannot read it)",
        "risk": "Risk",
        "release": "vLLM release (empty: the installed one, else the newest modelled)",
        "arithmetic": "Sized with the start-up arithmetic of vLLM {v} ({e})",
    },
    "nl": {
        "title": "Pre-flight op deze GPU (vLLM)",
        "model": "Model",
        "util": "--gpu-memory-utilization",
        "max_len": "--max-model-len (0: van het model)",
        "device": "Apparaat/apparaten",
        "read": "Lees deze GPU nu",
        "no_gpu": "geen NVIDIA-GPU gevonden",
        "starts": "Start bij {u}",
        "not_start": "Start niet bij {u}",
        "largest": "grootste --gpu-memory-utilization die start: {u} → KV-cache {t} tokens, max. gelijktijdigheid {c}",
        "none": "geen --gpu-memory-utilization start naast de andere gebruikers",
        "who": "Wie houdt wat vast (NVML, nu gelezen)",
        "pid": "pid",
        "name": "proces",
        "memory": "VRAM",
        "container": "container / cgroup",
        "unattributed": "niet toe te wijzen aan een getoond proces",
        "na": "n.v.t. (NVML kan het niet lezen)",
        "risk": "Risico",
        "release": "vLLM-release (leeg: de geïnstalleerde, anders de nieuwste gemodelleerde)",
        "arithmetic": "Berekend met de opstartrekenwijze van vLLM {v} ({e})",
    },
    "de": {
        "title": "Vorabprüfung auf dieser GPU (vLLM)",
        "model": "Modell",
        "util": "--gpu-memory-utilization",
        "max_len": "--max-model-len (0: des Modells)",
        "device": "Gerät(e)",
        "read": "Diese GPU jetzt lesen",
        "no_gpu": "keine NVIDIA-GPU gefunden",
        "starts": "Startet bei {u}",
        "not_start": "Startet nicht bei {u}",
        "largest": "größte --gpu-memory-utilization, die startet: {u} → KV-Cache {t} Tokens, max. Parallelität {c}",
        "none": "keine --gpu-memory-utilization startet neben den anderen Nutzern",
        "who": "Wer belegt was (NVML, jetzt gelesen)",
        "pid": "PID",
        "name": "Prozess",
        "memory": "VRAM",
        "container": "Container / Cgroup",
        "unattributed": "keinem gelisteten Prozess zuzuordnen",
        "na": "n. v. (NVML kann es nicht lesen)",
        "risk": "Risiko",
        "release": "vLLM-Release (leer: das installierte, sonst das neueste modellierte)",
        "arithmetic": "Berechnet mit der Start-Rechenweise von vLLM {v} ({e})",
    },
}


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
        w = WORDS[self.lang]
        self.words = w
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
        if auto:
            from aiworkbook import nvml

            if nvml.ensure() is not None:  # no GPU: answered at once (no NVML call to wait for)
                self.guarded(lambda: self._show(check(self.inputs())))()
            else:
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
        self.headline.value, self.details.value = render(doc, self.words)


#: why NVML found no GPU (aiworkbook/nvml.py's reasons a machine without one meets), in nl and de,
#: keyed by the panel's "no_gpu" words of that language
NVML_WHY: dict[str, dict[str, str]] = {
    "geen NVIDIA-GPU gevonden": {
        "NVIDIA driver/NVML library not found": "NVIDIA-driver of NVML-bibliotheek ontbreekt",
        "NVIDIA driver not loaded": "NVIDIA-driver niet geladen",
        "NVML library and driver versions do not match": "versies van NVML-bibliotheek en driver verschillen",
        "no permission": "geen toestemming",
    },
    "keine NVIDIA-GPU gefunden": {
        "NVIDIA driver/NVML library not found": "NVIDIA-Treiber oder NVML-Bibliothek fehlt",
        "NVIDIA driver not loaded": "NVIDIA-Treiber nicht geladen",
        "NVML library and driver versions do not match": "Versionen von NVML-Bibliothek und Treiber verschieden",
        "no permission": "keine Berechtigung",
    },
}


def _gib(n: Any) -> str:
    from aiworkbook.units import fmt_bytes

    return fmt_bytes(n) if n is not None else "n/a"


def render(doc: dict[str, Any], w: dict[str, str]) -> tuple[str, str]:
    """(headline HTML, details HTML) for a pre-flight dict; every value escaped."""
    e = html.escape
    if not doc.get("gpu_found", True):
        reason = (doc.get("reasons") or [""])[0]
        if w is not WORDS["en"]:  # "no NVIDIA GPU found (why)": the why said in the panel's language
            why = reason.removeprefix("no NVIDIA GPU found").strip().removeprefix("(").removesuffix(")")
            reason = NVML_WHY.get(w["no_gpu"], {}).get(why, why)
        return f"<b>{e(w['no_gpu'])}</b>", f"<span class='aiwb-preflight-reason'>{e(reason)}</span>"
    u = doc["utilization"]
    head = e(w["starts" if doc["starts"] else "not_start"].format(u=f"{u:g}"))
    parts = [f"<p>{e(r)}</p>" for r in doc.get("reasons", [])]
    at = doc.get("at_max_utilization")
    if doc.get("max_utilization") is not None and at is not None:
        line = w["largest"].format(
            u=f"{doc['max_utilization']:.2f}",
            t=f"{at['kv_cache_tokens']:,}",
            c=f"{at['max_concurrency']:.2f}",
        )
    else:
        line = w["none"]
    parts.append(f"<p class='aiwb-preflight-largest'>{e(line)}</p>")
    st = doc.get("settings") or {}
    if st.get("engine_version"):
        said = w["arithmetic"].format(v=st["engine_version"], e=st.get("engine", ""))
        parts.append(f"<p class='aiwb-preflight-release'>{e(said)}</p>")
    for d in doc["devices"]:
        rows = [
            [
                str(t["pid"]),
                t["name"],
                _gib(t["used_bytes"]) if t["used_bytes"] is not None else w["na"],
                t.get("container") or t.get("cgroup") or "",
            ]
            for t in d["tenants"]
        ]
        rows.append(["", w["unattributed"], _gib(d["unattributed_bytes"]), ""])
        title = (
            f"{d['label']} {d['name']}: {_gib(d['used_bytes'])} / {_gib(d['total_bytes'])} "
            f"({_gib(d['free_bytes'])} free)"
        )
        parts.append(f"<p><b>{e(w['who'])}</b> {e(title)}</p>")
        if d.get("names_note"):
            parts.append(f"<p class='aiwb-preflight-note'>{e(d['names_note'])}</p>")
        parts.append(
            html_table([w["pid"], w["name"], w["memory"], w["container"]], rows, "aiwb-preflight-tenants")
        )
    for r in doc.get("risks", []):
        parts.append(f"<p class='aiwb-preflight-risk'><b>{e(w['risk'])}:</b> {e(r)}</p>")
    return f"<b>{head}</b>", "".join(parts)
