"""Widgets headless: build each one, set values, and check that what it shows is what the library
computes; bad values land in the error area and the widget keeps working."""

from __future__ import annotations

import datetime as _dt
import json
import time

import pytest
from fake_nvml import DATACENTER, FakeNVML
from test_charts import rows_of

from aiworkbook.errors import SpecError
from aiworkbook.sizing import Workload, capacity, estimate
from aiworkbook.specs import get_gpu, list_gpus, load_model


def classes(w) -> set[str]:
    return set(w._dom_classes)


def assert_built(w, css: str) -> None:
    assert {f"aiwb-{css}", "aiwb-ready"} <= classes(w)
    assert "aiwb-error" in classes(w.error_area)
    assert w._dom_classes[-1] == "aiwb-ready"  # added last


def assert_error(w, *words: str) -> None:
    """The error area shows one line with each of `words`; a word that is a field with a control is
    named as the screen shows it (its label, never the library's name: issue 33)."""
    assert w.error, "expected an error message"
    for word in words:
        shown = w.field_label(word)
        assert (shown or word) in w.error, (word, shown, w.error)
        if shown and shown != word:
            assert not w.error.startswith(f"field '{word}'"), w.error
    assert w.error_area.layout.display != "none" and "Traceback" not in w.error_area.value


# ---- ModelSizer --------------------------------------------------------------------------------
@pytest.fixture
def sizer():
    from aiworkbook.widgets import ModelSizer

    s = ModelSizer()
    assert s.wait(120)
    yield s
    s.close()


def test_sizer_shows_the_library_estimate(sizer):
    assert_built(sizer, "model-sizer")
    spec = load_model("llama-3-8b")
    w = Workload(mode="infer", concurrency=8, seq_len=4096, new_tokens=512)
    est = estimate(spec, w, gpu="H100-SXM").to_dict()
    r = sizer.result
    assert r["memory"] == est["memory"] and r["fits"] == est["fits"] and r["cost"] == est["cost"]
    assert r["cheapest"] == capacity.cheapest_gpu(spec, w)
    assert {row["gpu"]: row["gpus"] for row in r["fits_on"]} == {
        g.name: capacity.gpus_needed(spec, w, g) for g in list_gpus()
    }
    assert "47.05 GiB" in sizer.headline.value and "aiwb-value" in classes(sizer.headline)
    unpriced = [g.name for g in list_gpus() if not g.price_per_hour_usd]  # shown as a dash, not $0.00
    assert unpriced and "$0.00" not in sizer.fits_table.value
    rows = rows_of(sizer.chart.spec)  # the spec on screen
    assert sum(row["bytes"] for row in rows if row.get("bar") == "itemised") == est["memory"]["total"]


def test_sizer_recomputes_when_a_control_changes(sizer):
    sizer.controls["concurrency"].value = 32
    sizer.controls["kv_dtype"].value = "fp8"
    assert sizer.wait(120)
    w = Workload(mode="infer", concurrency=32, seq_len=4096, new_tokens=512, kv_dtype="fp8")
    assert sizer.result["memory"] == estimate(load_model("llama-3-8b"), w, gpu="H100-SXM").memory.as_dict()
    assert sizer.value["concurrency"] == 32 and sizer.value["kv_dtype"] == "fp8"


def test_sizer_value_api_and_training(sizer):
    sizer.value = {"model": "qwen2.5-0.5b", "mode": "train", "batch": 4, "seq_len": 1024, "gpu": "L4"}
    assert sizer.wait(120) and sizer.error == ""
    spec = load_model("qwen2.5-0.5b")
    w = Workload(mode="train", batch=4, seq_len=1024)  # inference's fields are refused in train
    assert sizer.result["memory"] == estimate(spec, w, gpu="L4").memory.as_dict()
    assert sizer.result["model"] == "qwen2.5-0.5b" and sizer.result["gpu"] == "L4"


def test_sizer_offers_only_valid_choices(sizer):
    sizer.value = {"mode": "train", "precision": "fp32", "recipe": "fp32-adamw"}
    assert sizer.wait(120) and sizer.error == ""
    recipes = set(sizer.controls["recipe"].options)
    assert "megatron-bf16" not in recipes and "fp32-adamw" in recipes  # 16-bit recipes refuse fp32
    assert sizer.controls["zero"].options == (0,)  # dp is 1: no ZeRO stage validates
    sizer.value = {"mode": "infer"}
    assert set(sizer.controls["weights_dtype"].options) >= {"int4", "fp8"}


def test_sizer_bad_values_show_errors_and_keep_working(sizer):
    before = dict(sizer.result)
    sizer.value = {"concurrency": 0}
    assert_error(sizer, "concurrency")
    sizer.value = {"batch": "many"}
    assert_error(sizer, "batch")
    sizer.value = {"no_such_field": 1}
    assert_error(sizer, "no_such_field")
    sizer.value = {"model": "../../etc/passwd"}
    assert_error(sizer, "model")
    assert sizer.result == before  # the last good result stays on screen
    sizer.source.value = "pasted"
    sizer.config_text.value = "{not json"
    assert_error(sizer, "<pasted>", "json", "valid JSON")  # as read_json says of a file
    sizer.config_text.value = json.dumps({"model_type": "llama", "hidden_size": 0})
    assert_error(sizer, "<pasted>", "num_hidden_layers")
    sizer.value = {"model": "tiny-llama", "concurrency": 2}
    assert sizer.wait(120) and sizer.error == "" and sizer.result["model"] == "tiny-llama"


def test_a_refused_value_leaves_nothing_of_itself(sizer):
    """A dict refused on its last field does not keep its first: the GPU drop-down, the figures and
    `value` stay as they were (the GPU was set before the concurrency was found bad)."""
    assert sizer.wait(120)
    before, result, gpu = dict(sizer.value), dict(sizer.result), sizer.gpu.value
    sizer.value = {**before, "gpu": "RTX-4090", "concurrency": -5}
    assert_error(sizer, "concurrency")
    assert sizer.gpu.value == gpu != "RTX-4090" and sizer.value == before and sizer.result == result
    sizer.value = {**before, "gpu": "RTX-4090"}
    assert sizer.wait(120) and sizer.error == "" and sizer.result["gpu"] != result["gpu"]


def test_a_refused_value_leaves_no_field_of_an_unbuilt_section_behind(sizer):
    """The fine-tuning section is built when first shown; until then its fields live outside widgets.
    A dict refused on lora_rank after setting dropout leaves dropout unset there too."""
    assert not sizer.finetune.built
    sizer.value = {"mode": "lora", "dropout": 0.2, "lora_rank": -3}
    assert_error(sizer, "lora_rank")
    sizer.value = {"mode": "lora"}
    assert sizer.wait(120) and sizer.error == "" and sizer.value["dropout"] is None


def test_sizer_pasted_and_uploaded_config(sizer):
    from aiworkbook.paths import data_dir

    text = (data_dir() / "models" / "tiny-llama" / "config.json").read_text()
    sizer.value = {"config": text}
    assert sizer.wait(120) and sizer.error == ""
    assert sizer.result["params"]["params"] == load_model("tiny-llama").params
    upload = {
        "name": "mine.json",
        "type": "application/json",
        "size": len(text),
        "content": memoryview(text.encode()),
    }
    sizer.upload.value = ({**upload, "last_modified": _dt.datetime.now(_dt.timezone.utc)},)
    assert sizer.wait(120) and sizer.error == "" and sizer.source.value == "uploaded"
    assert sizer.result["model"] == "mine"


# ---- KVPlanner ----------------------------------------------------------------------------------
def test_kv_planner_figures_come_from_capacity():
    from aiworkbook.widgets import KVPlanner

    from aiworkbook.profile.snippets import vllm_args

    k = KVPlanner(model="llama-3-8b", gpu="L40S", context=8192, concurrency=16)
    assert k.wait(120) and k.error == ""
    assert_built(k, "kv-planner")
    spec, gpu = load_model("llama-3-8b"), get_gpu("L40S")
    w = Workload(mode="infer", seq_len=8192, context=8192, concurrency=16, engine="vllm")
    assert k.result["max_concurrency"] == capacity.max_concurrency(spec, w, gpu, context=8192)
    assert k.result["max_context"] == capacity.max_context(spec, w, gpu)
    assert k.result["kv_budget_bytes"] == capacity.kv_budget(spec, w, gpu)
    assert k.result["vllm_args"] == vllm_args(spec, w, gpu, mig=False).command()
    assert f"{k.result['max_concurrency']:,}" in k.headline.value
    k.value = {"kv_dtype": "fp8"}
    assert k.wait(120)
    w8 = w.replace(kv_dtype="fp8")
    assert k.result["max_concurrency"] == capacity.max_concurrency(spec, w8, gpu, context=8192)
    k.value = {"context": -1}
    assert_error(k, "context")
    k.value = {"gpu_memory_utilization": 1.5}
    assert_error(k, "gpu_memory_utilization")
    k.value = {"model": "gpt2"}  # 8,192 tokens exceed GPT-2's learned positions: the library says so
    assert k.wait(120)
    assert_error(k, "max_position_embeddings")
    k.value = {"context": 1024}
    assert k.wait(120) and k.error == ""
    k.close()


# ---- GPUMonitor -----------------------------------------------------------------------------------
class NoGPU:
    """A GPU reader for a machine without NVIDIA GPUs."""

    def count(self) -> int:
        return 0

    def status(self) -> str:
        return "no NVIDIA GPU found (test)"

    def read_all(self) -> list:
        return []


def test_monitor_subscribes_charts_live_samples_and_unsubscribes_on_close():
    from aiworkbook.widgets import GPUMonitor

    from aiworkbook.telemetry.gpu_reader import GPUReader
    from aiworkbook.telemetry.sampler import Sampler

    with FakeNVML([DATACENTER]):
        s = Sampler(interval=0.5, gpu_reader=GPUReader(), host=False, events=False)
        m = GPUMonitor(interval=0.5, sampler=s)
        assert_built(m, "gpu-monitor")
        assert s.running and len(s.subscribers()) == 1 and m.subscribed
        deadline = time.monotonic() + 10
        while not m.result and time.monotonic() < deadline:
            time.sleep(0.1)
        assert m.result["gpu"] is True and m.result["samples"] >= 1
        title = m.charts["power_w"].spec["title"]
        assert "live on NVIDIA H100 80GB HBM3" in title
        values = [r["value"] for r in rows_of(m.charts["power_w"].spec)]  # the spec on screen
        assert values and set(values) == {DATACENTER["power_mw"] / 1000}
        n = len(values)
        deadline = time.monotonic() + 10
        while len(rows_of(m.charts["power_w"].spec)) <= n and time.monotonic() < deadline:
            time.sleep(0.1)  # later ticks swap new rows into the same spec
        assert len(rows_of(m.charts["power_w"].spec)) > n
        assert "live on NVIDIA H100 80GB HBM3" in m.charts["power_w"].spec["title"]
        m.pause.value = True
        assert not s.subscribers() and not s.running and m.value == "paused"
        m.pause.value = False
        assert len(s.subscribers()) == 1 and s.running and m.value == "live"
        m.close()
        assert not s.subscribers() and not s.running
        m2 = GPUMonitor(interval=0.5, sampler=s)
        assert s.running
        m2.comm.handle_close({"content": {"data": {}}})  # the page went away: the frontend closed the comm
        assert not s.subscribers() and not s.running


def test_monitor_without_gpu_says_so_and_offers_the_recorded_trace():
    from aiworkbook.widgets import GPUMonitor

    from aiworkbook.telemetry.replay import load_trace, shipped_traces
    from aiworkbook.telemetry.sampler import Sampler

    s = Sampler(interval=0.5, gpu_reader=NoGPU(), events=False)
    m = GPUMonitor(interval=0.5, sampler=s)
    assert "no NVIDIA GPU found" in m.headline.value
    assert set(m.charts) == {"cpu_pct", "ram_used_bytes"}  # host telemetry
    deadline = time.monotonic() + 10
    while not m.result and time.monotonic() < deadline:
        time.sleep(0.1)
    assert m.result["gpu"] is False
    m.recorded.click()
    header, samples = load_trace(shipped_traces()[0])
    assert m.value == "recorded" and not s.subscribers() and not s.running
    assert m.result["samples"] == len(samples) and m.result["source"] == header["label"]
    assert "synthetic" in m.charts["power_w"].spec["title"]
    with pytest.raises(SpecError, match="trace"):  # not a shipped trace: a viewer never reaches files
        m.show_recorded("/etc/passwd")
    m.close()


def test_monitor_shows_no_empty_chart_before_the_first_reading_and_says_it_waits():
    """Issue 33: at ready the host-memory chart showed an empty axis. Until the first reading each chart
    is an empty place (no JupyterChart, no axes) and the status line says the page waits for it; the
    reading draws every chart and clears that line. The sampler here reads only when told
    (`sample_now`), so "before the first reading" is not a race."""
    from aiworkbook.widgets import GPUMonitor

    from aiworkbook.telemetry.sampler import Sampler

    class ReadWhenTold(Sampler):
        def start(self) -> Sampler:  # no thread: a reading only on sample_now()
            return self

    s = ReadWhenTold(interval=0.5, gpu_reader=NoGPU(), events=False)
    m = GPUMonitor(interval=0.5, sampler=s)
    try:
        assert "Waiting for the first reading" in m.status.value and m.status in m.children
        assert set(m.charts) == {"cpu_pct", "ram_used_bytes"} and not m.result
        assert all(v.spec is None and not v.children for v in m.charts.values())  # nothing drawn, no axes
        s.sample_now()
        assert m.result["samples"] == 1 and m.status.value == ""
        assert all(rows_of(v.spec) for v in m.charts.values())  # both host charts, with the reading
    finally:
        m.close()


def _titles(m) -> list[str]:
    return [str(v.spec.get("title", "")) for v in m.charts.values() if v.spec is not None]


def test_monitor_resumed_after_the_recorded_trace_is_live_host_data_again():
    """Issue 25: "Show the recorded trace", then "Resume" kept the synthetic H100 curves titled "live"
    and lost the host charts and the trace button until a reload."""
    from aiworkbook.widgets import GPUMonitor

    from aiworkbook.telemetry.sampler import Sampler

    s = Sampler(interval=0.5, gpu_reader=NoGPU(), events=False)
    m = GPUMonitor(interval=0.5, sampler=s)
    try:
        m.recorded.click()
        assert m.value == "recorded" and set(m.charts) == {
            "util_gpu_pct",
            "mem_used_bytes",
            "power_w",
            "temp_gpu_c",
        }
        assert all("synthetic" in t and "live" not in t for t in _titles(m))
        m.pause.value = False  # "Resume"
        assert m.value == "live" and s.running and len(s.subscribers()) == 1
        assert set(m.charts) == {"cpu_pct", "ram_used_bytes"}  # the host charts are back
        assert any(m.recorded in box.children for box in m.children if hasattr(box, "children"))
        assert "no NVIDIA GPU found" in m.headline.value
        deadline = time.monotonic() + 10
        while not m.result and time.monotonic() < deadline:
            time.sleep(0.1)
        assert m.result["gpu"] is False and m.result["source"] == "live"
        assert m.result["samples"] < 30  # this machine's samples only, none of the trace's hundreds
        titles = _titles(m)
        assert titles and all(t.endswith(": live") and "synthetic" not in t for t in titles)
        m.recorded.click()  # and the trace can be shown again
        assert m.value == "recorded" and all("synthetic" in t for t in _titles(m))
    finally:
        m.close()


def test_monitor_on_a_replaying_sampler_never_says_live():
    """A dashboard started with $AIWORKBOOK_TELEMETRY_REPLAY charts a trace: titled with its label."""
    from aiworkbook.widgets import GPUMonitor

    from aiworkbook.telemetry.replay import ReplayReader, shipped_traces
    from aiworkbook.telemetry.sampler import Sampler

    s = Sampler(interval=0.5, gpu_reader=ReplayReader(shipped_traces()[0]), host=False, events=False)
    m = GPUMonitor(interval=0.5, sampler=s)
    try:
        deadline = time.monotonic() + 10
        while not m.result and time.monotonic() < deadline:
            time.sleep(0.1)
        assert m.result["gpu"] is True and m.result["source"].startswith("replay of: synthetic trace")
        assert m.pause.description  # paused and resumed: still the trace's label
        m.pause.value = True
        m.pause.value = False
        deadline = time.monotonic() + 10
        while not _titles(m) and time.monotonic() < deadline:
            time.sleep(0.1)
        titles = _titles(m)
        assert titles and all("replay of: synthetic trace" in t and "live" not in t for t in titles)
    finally:
        m.close()


def test_monitor_interval_must_be_one_to_two_hertz():
    from aiworkbook.widgets import GPUMonitor

    with pytest.raises(SpecError, match="interval"):
        GPUMonitor(interval=0.1, sampler=object())


# ---- PatternPicker, NodePicker, ProfileLocker ------------------------------------------------------
def test_pattern_picker_matches_recommend_in_each_language():
    from aiworkbook.widgets import PatternPicker

    from aiworkbook.patterns import recommend

    p = PatternPicker()
    assert_built(p, "pattern-picker")
    answers = {"model_kind": "llm", "phase": "serving", "latency_slo_ms": 500}
    p.value = answers
    assert p.result == recommend(answers).to_dict()
    p.language.value = "nl"
    assert p.result == recommend(answers, lang="nl").to_dict()
    assert recommend(answers, lang="nl").pattern.title in p.title.value
    p.controls["latency_slo_ms"].value = "soon"
    assert_error(p, "latency_slo_ms")
    p.value = {"phase": "sometimes"}
    assert_error(p, "phase")
    p.controls["latency_slo_ms"].value = ""
    assert p.error == "" and p.result == recommend({**answers, "latency_slo_ms": None}, lang="nl").to_dict()


def test_node_picker_lists_reference_nodes_and_this_node():
    from aiworkbook.widgets import NodePicker

    from aiworkbook.specs import get_node, list_nodes

    n = NodePicker(node="inference-4xl40s")
    assert_built(n, "node-picker")
    assert n.result == get_node("inference-4xl40s").model_dump(mode="json")
    assert "this-node" in n.nodes and n.nodes["this-node"].detected
    for ref in list_nodes():
        assert f"<th>{ref.name}</th>" in n.matrix.value
    assert "4 × L40S" in n.matrix.value
    assert n.value == {"node": "inference-4xl40s"}  # a dict of the widget's fields, as every widget's
    n.value = {"node": "this-node"}
    assert n.result["detected"] is True
    n.value = {"node": "no-such-node"}
    assert_error(n, "no-such-node")
    assert n.value == {"node": "this-node"}  # the previous choice stays
    n.value = {"nodes": "this-node"}
    assert_error(n, "value", "nodes")


def test_profile_locker_locks_and_checks_through_the_library():
    from aiworkbook.widgets import ProfileLocker

    from aiworkbook.profile import check, lock
    from aiworkbook.proofs.result import ProofResult

    r = ProofResult("kv", "cpu", {"model": "tiny-llama"}, 1.02e6, "B", 1.0e6, "KV bytes")
    p = ProfileLocker(node="inference-4xl40s", detect=False)
    assert_built(p, "profile-locker")
    p.check_button.click()
    assert_error(p, "profile")
    p.add_result(r)
    p.lock_button.click()
    assert p.error == "" and p.profile is not None
    expected = lock("llm-inference", node="inference-4xl40s", results=[r], detected=None)
    assert [g.name for g in p.profile.proofs] == [g.name for g in expected.proofs]
    assert 'download="profile.json"' in p.download.value
    p.check_button.click()
    assert p.result["report"]["exit_code"] == check(p.profile, results=[r], rerun=False).exit_code == 0
    p.results = [ProofResult("kv", "cpu", {"model": "tiny-llama"}, 2.0e6, "B", 1.0e6, "KV bytes")]
    p.check_button.click()
    assert p.result["report"]["exit_code"] == 1 and "[fail]" in p.details.value
    p.report_button.click()
    assert p.error == "" and 'download="report.html"' in p.download.value
    from aiworkbook.profile.report import render_html

    assert p.result == {"action": "report", "bytes": len(render_html(p.profile).encode())}
    bad = {"name": "p.json", "type": "", "size": 4, "content": memoryview(b"{bad")}
    p.upload.value = ({**bad, "last_modified": _dt.datetime.now(_dt.timezone.utc)},)
    assert_error(p, "profile")


# ---- layering ------------------------------------------------------------------------------------
def test_widgets_import_cheaply_and_lazily():
    import subprocess
    import sys

    code = "import sys, aiworkbook.widgets; print('ipywidgets' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_sizer_model_family_form(sizer):
    from aiworkbook.specs import spec_from_config

    sizer.source.value = "family"  # the form starts from Llama-3-8B's architecture
    assert sizer.wait(120) and sizer.error == ""
    assert sizer.result["params"]["params"] == load_model("llama-3-8b").params
    sizer.family_fields["num_hidden_layers"].value = 16
    assert sizer.wait(120)
    cfg = {"model_type": "llama", **{k: int(w.value) for k, w in sizer.family_fields.items()}}
    assert sizer.result["params"]["params"] == spec_from_config(cfg).params
    sizer.family_fields["num_key_value_heads"].value = 7
    assert_error(sizer, "num_key_value_heads")


def test_results_are_observable(sizer):
    seen = []
    sizer.observe(lambda change: seen.append(change["new"]["workload"]["concurrency"]), names="result")
    sizer.value = {"concurrency": 12}
    assert sizer.wait(120)
    assert seen == [12]


def test_workers_start_only_after_the_modules_they_import_are_loaded():
    """A dashboard's second widget built while the first one's worker imports numpy got a partially
    initialised numpy inside Altair (an error cell under load): Background preloads on its own thread."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from aiworkbook.widgets import KVPlanner, ModelSizer\n"
        "from aiworkbook.widgets.base import PRELOAD\n"
        "s = ModelSizer()\n"
        "assert all(m in sys.modules for m in PRELOAD)\n"
        "k = KVPlanner(); s.wait(); k.wait()\n"
        "assert not s.error and not k.error, (s.error, k.error)\n"
    )
    for _ in range(3):  # before the fix most runs of this failed; each run is a fresh interpreter
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr[-2000:]


def test_charts_share_the_served_bundle_only_under_the_dashboard_server(tmp_path, monkeypatch):
    """Under the dashboard server (CHART_JS_ENV set) a chart's JavaScript is a few lines importing the
    cached bundle by its URL, so a page evaluates the bundle once; elsewhere, or with no cached bundle,
    each chart carries the bundle itself."""
    import altair as alt
    from aiworkbook.widgets import base

    from aiworkbook.charts import render
    from aiworkbook.paths import CHART_JS_ENV

    bundle = tmp_path / ("jupyterchart-" + "0" * 32 + ".js")
    bundle.write_text("export default {render() {}};", encoding="utf-8")
    monkeypatch.setattr(render, "_bundle_file", bundle)
    monkeypatch.delenv(CHART_JS_ENV, raising=False)
    assert base.shared_chart_class() is None  # a notebook in JupyterLab: no server route to load from
    monkeypatch.setenv(CHART_JS_ENV, "/under/aiwb/charts/")
    cls = base.shared_chart_class()
    assert issubclass(cls, alt.JupyterChart)
    chart = cls(alt.Chart(alt.Data(values=[{"x": 1}])).mark_point().encode(x="x:Q"))
    assert f'"/under/aiwb/charts/{bundle.name}"' in chart._esm and len(chart._esm) < 300
    assert chart.spec["mark"]["type"] == "point"
    chart.close()
    bundle.unlink()  # the cache emptied since: back to the bundle in each chart, never a dead URL
    assert base.shared_chart_class() is None


def test_dashboard_charts_draw_the_spec_altair_would_without_revalidating_it(monkeypatch):
    """A chart of aiworkbook.charts shows the very spec Altair's JupyterChart would send, through its
    public `spec` trait and without validating it; a chart with a parameter (or a transform that
    defines one) still goes Altair's own way, and a plain chart after it leaves no selection behind."""
    import altair as alt
    from aiworkbook.widgets.base import dashboard_chart_class, interactive

    from aiworkbook.charts import memory_chart

    chart = memory_chart(estimate(load_model("llama-3-8b"), Workload(mode="infer"), gpu="H100-SXM"))
    ours, altairs = dashboard_chart_class()(None), alt.JupyterChart(chart)
    asked: list[bool] = []
    real = type(chart).to_dict

    def spy(self, *args, **kwargs):
        asked.append(kwargs.get("validate", True))
        return real(self, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(type(chart), "to_dict", spy)
        ours.draw(chart)
    assert asked == [False] and ours.spec == altairs.spec and ours.chart is None
    pick = alt.selection_point(fields=["x"], name="pick")
    selectable = alt.Chart(alt.Data(values=[{"x": 1}])).mark_point().encode(x="x:Q").add_params(pick)
    ours.draw(selectable)
    assert ours.chart is selectable and "pick" in ours.selections.trait_names()
    assert ours.spec == alt.JupyterChart(selectable).spec
    ours.draw(chart)
    assert ours.chart is None and ours.spec == altairs.spec
    assert not ours.get_state().get("_vl_selections")  # the page holds no selection of the old chart
    assert interactive({"layer": [{"mark": "point"}, {"params": [{"name": "p", "value": 1}]}]})
    assert interactive({"hconcat": [{"transform": [{"param": "x", "loess": "y", "on": "x"}]}]})
    assert not interactive(alt.Chart(alt.Data(values=[])).mark_point().to_dict(validate=False))
    for w in (ours, altairs):
        w.close()


def test_the_newest_cached_chart_bundle_is_the_one_a_page_preloads(tmp_path, monkeypatch):
    import os

    from aiworkbook.widgets.dashboard_server import newest_chart_bundle

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert newest_chart_bundle() is None  # no kernel cached one yet: nothing to name
    cache = tmp_path / "aiworkbook"
    cache.mkdir()
    old, new = (cache / f"jupyterchart-{c * 32}.js" for c in "ab")
    for i, p in enumerate((old, new)):
        p.write_text("export default {};", encoding="utf-8")
        os.utime(p, (1_000 + i, 1_000 + i))
    (cache / "jupyterchart-notours.js").write_text("x", encoding="utf-8")  # not a bundle's name
    assert newest_chart_bundle() == new.name
