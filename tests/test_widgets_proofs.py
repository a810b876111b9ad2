"""ProofRunner headless: the plan shows before running, progress and the result arrive, cancel yields
'interrupted', ProofBusy is a message, bad inputs are errors in the widget.

This module doubles as a tiny registered proof (plan/run below), so the runner is exercised through
the real registry, lock and Control without torch."""

from __future__ import annotations

import time

import pytest

from aiworkbook.proofs import registry
from aiworkbook.proofs.control import exclusive
from aiworkbook.proofs.registry import InputSpec, Plan, ProofInfo
from aiworkbook.proofs.result import ProofResult

NAME = "widget-test"
BYTES_PER_STEP = 20.0


def planned(steps: int) -> Plan:
    sizes = {"steps": steps, "cap": None}  # an unset setting, as serving's cap outside a rate sweep
    return Plan(NAME, "cpu", BYTES_PER_STEP * steps, "steps x 20 B", "B", sizes, True, 0.1)


def plan(inputs) -> Plan:
    return planned(inputs.steps)


def run(inputs, *, control) -> ProofResult:
    steps, device = inputs.steps, "cpu"
    for i in range(steps):
        time.sleep(inputs.delay)
        control.step(i + 1, steps, f"step {i + 1}")
    return ProofResult(
        NAME,
        device,
        {"steps": steps},
        BYTES_PER_STEP * steps * 1.02,
        "B",
        BYTES_PER_STEP * steps,
        "steps x 20 B",
        flags=["accounted"],
    )


@pytest.fixture
def runner():
    registry.register(
        ProofInfo(
            NAME,
            "Widget test proof",
            "that the runner drives plan, run, progress and cancel",
            __name__,
            (
                InputSpec("steps", "int", "units of work", 5, low=1, high=1000),
                InputSpec("delay", "float", "seconds per unit", 0.0, low=0.0, high=1.0),
                InputSpec("out", "path", "never offered to a viewer"),
            ),
        )
    )
    from aiworkbook.widgets import ProofRunner

    r = ProofRunner(proof=NAME)
    yield r
    r.close()
    registry._REGISTRY.pop(NAME, None)


def test_plan_shows_before_running_and_paths_are_not_offered(runner):
    assert "aiwb-ready" in runner._dom_classes and "aiwb-proof-runner" in runner._dom_classes
    assert set(runner.inputs) == {"steps", "delay"}
    assert runner.plan["predicted"] == planned(5).predicted
    runner.inputs["steps"].value = 8
    assert runner.plan["predicted"] == planned(8).predicted
    assert runner.value == {"proof": NAME, "inputs": {"steps": 8, "delay": 0.0}}
    assert "160 B" in runner.plan_view.value
    assert "with steps 8" in runner.plan_view.value and "cap" not in runner.plan_view.value  # words, no None


def test_run_reports_progress_and_the_result(runner):
    runner.inputs["steps"].value = 4
    assert runner.chart.layout.display == "none"  # no empty chart before a result
    assert runner.progress_row.layout.display == "none"  # nor an empty progress bar
    runner.run()
    assert runner.wait(30)
    assert runner.chart.layout.display == "" and runner.progress_row.layout.display == ""
    assert runner.result["verdict"] == "pass" and runner.result["flags"] == ["accounted"]
    assert runner.result["measured"] == pytest.approx(BYTES_PER_STEP * 4 * 1.02)
    assert runner.progress.value == 1.0 and "4/4" in runner.progress_text.value
    assert "[pass]" in runner.outcome.value and "accounted" in runner.outcome.value
    assert not runner.run_button.disabled and runner.cancel_button.disabled


def test_cancel_yields_interrupted(runner):
    runner.inputs["steps"].value = 200
    runner.inputs["delay"].value = 0.05
    runner.run()
    time.sleep(0.2)
    runner.cancel_button.click()
    assert runner.wait(10)
    assert runner.result["verdict"] == "interrupted"
    assert runner.progress.value < 1.0


def test_busy_is_a_message_not_a_traceback(runner):
    with exclusive("someone-else"):
        runner.run()
        assert runner.wait(10)
    assert "someone-else" in runner.error and "aiwb-error" in runner.error_area._dom_classes
    assert runner.error_area.layout.display != "none"
    runner.run()  # the widget keeps working
    assert runner.wait(10) and runner.result["verdict"] == "pass" and runner.error == ""


def test_bad_inputs_show_errors_and_the_widget_keeps_working(runner):
    runner.inputs["steps"].value = 0  # below the InputSpec's low
    assert "Steps" in runner.error  # named as the form shows it
    runner.run_button.click()  # the bad value is refused before a thread starts
    assert runner._thread is None and "Steps" in runner.error
    runner.inputs["steps"].value = 2
    assert runner.error == "" and runner.plan["predicted"] == planned(2).predicted


def test_runs_off_shows_plans_only():
    from aiworkbook.widgets import ProofRunner

    r = ProofRunner(allow_run=False)
    assert r.plan or r.error  # a plan (or its error) is shown
    r.run_button.click()
    assert r._thread is None
    r.close()


def test_tiny_llama_vram_quick_on_cpu_through_the_widget():
    from aiworkbook.widgets import ProofRunner

    r = ProofRunner(proof="vram", model="tiny-llama", quick=True, device="cpu")
    assert (
        r.plan["predicted"] == registry.plan("vram", model="tiny-llama", quick=True, device="cpu").predicted
    )
    r.run()
    assert r.wait(300)
    assert r.result["proof"] == "vram" and r.result["verdict"] == "pass"  # CPU accounting: exact to 10 %
    r.run()
    r.cancel()
    assert r.wait(60) and r.result["verdict"] == "interrupted"
    r.close()


def test_result_chart_is_the_kind_the_registry_declares():
    from aiworkbook.widgets import ProofRunner
    from test_charts import _sweep

    from aiworkbook.charts import proofs_chart
    from aiworkbook.proofs.roofline import roofline_chart_data
    from aiworkbook.specs import get_gpu

    assert registry.get("serving").chart == "latency" and registry.get("roofline").chart == "roofline"
    serving = ProofResult("serving", "cpu", {}, 1.0, "s", 1.0, "ttft")
    serving.details = {"sweep": _sweep(), "knee": 4}
    assert "knee at 4" in ProofRunner._chart(serving, proofs_chart).to_dict()["title"]
    roofline = ProofResult("roofline", "cpu", {}, 1.0, "B/s", 1.0, "bandwidth")
    roofline.details = {"chart": roofline_chart_data(get_gpu("L4"))}
    assert "roofline" in ProofRunner._chart(roofline, proofs_chart).to_dict()["title"]
    # details of another shape never pick the chart: an all-reduce sweep is not a latency sweep
    allreduce = ProofResult("allreduce", "cpu", {}, 1.0, "B/s", 1.0, "busbw")
    allreduce.details = {"sweep": _sweep(), "chart": roofline_chart_data(get_gpu("L4"))}
    assert ProofRunner._chart(allreduce, proofs_chart).to_dict()["title"] == "Estimate vs measured"
    serving.details = {}
    assert ProofRunner._chart(serving, proofs_chart).to_dict()["title"] == "Estimate vs measured"


# ---- start-up cost -------------------------------------------------------------------------------
def _run(code: str) -> list[str]:
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()


def test_the_report_dashboards_first_view_plans_without_torch():
    """The runner shows the first proof's plan at once; on a machine with no GPU device node that plan
    needs no torch (a second of the report dashboard's time to interactive), and the plan is the CPU's."""
    code = (
        "import sys; import aiworkbook.proofs.device as D; D.GPU_DEVICE_NODES = ('/nonexistent/nvidia0',)\n"
        "from aiworkbook.widgets import ProfileLocker, ProofRunner\n"
        "r = ProofRunner(allow_run=False); ProfileLocker()\n"
        "print(r.proof.value, r.plan['device'], 'torch' in sys.modules)"
    )
    assert _run(code) == ["roofline", "cpu", "False"]


def test_a_gpu_device_node_defers_to_torch():
    """Where a device node exists, torch is asked (and imported): only its answer counts there."""
    code = (
        "import sys; import aiworkbook.proofs.device as D; D.GPU_DEVICE_NODES = ('/dev/null',)\n"
        "a = D.cuda_available(); t = 'torch' in sys.modules\n"
        "import torch; print(t, a == torch.cuda.is_available())"
    )
    assert _run(code) == ["True", "True"]


def test_every_proof_plans_on_selection_and_optional_numbers_start_unset():
    """Choosing a proof must show its plan, not an error: optional numbers (no default) were plain
    number boxes showing 0, which went to the proof as 0 (serving's concurrency, checkpoint's size_mb,
    the host proof's rows were refused at once). Off, they are left out; on, they are checked."""
    from aiworkbook.widgets import ProofRunner

    r = ProofRunner(allow_run=False)
    try:
        for name in registry.names():
            r.proof.value = name
            assert r.error == "" and r.plan["proof"] == name, (name, r.error)
        r.proof.value = "serving"
        assert not {"rate", "concurrency", "slo_ttft_ms", "slo_tpot_ms"} & set(r.value["inputs"])
        r.inputs["concurrency"].value = 8
        assert r.value["inputs"]["concurrency"] == 8 and r.error == ""
        r.inputs["concurrency"].value = 0
        assert r.error == "Concurrency = 0 is not valid; allowed: >= 1"  # named as the form shows it
        r.inputs["concurrency"].value = None  # switched off again: the proof's default sweep
        assert r.error == "" and "concurrency" not in r.value["inputs"]
    finally:
        r.close()


def test_a_run_shows_a_working_sign_and_its_bar_finishes(runner, monkeypatch):
    import sys

    def quiet(inputs, *, control) -> ProofResult:  # reports no progress at all
        control.step(1, 4, "first of four")
        return ProofResult(NAME, "cpu", {"steps": inputs.steps}, 100.0, "B", 100.0, "steps x 20 B")

    monkeypatch.setattr(sys.modules[__name__], "run", quiet)
    runner.run()
    assert "Working" in runner.status.value and "fa-spin" in runner.status.value
    assert runner.wait(30)
    assert runner.result["verdict"] == "pass"
    assert runner.status.value == ""  # the sign goes when the run ends
    assert runner.progress.value == 1.0  # a finished run's bar finishes, whatever the last step said


def test_bytes_a_proof_counts_are_drawn_as_bytes(runner, monkeypatch):
    import sys

    from aiworkbook.proofs.progress import counted_bytes

    def writes(inputs, *, control) -> ProofResult:  # a proof counting the bytes it writes
        counted_bytes(control, 3 * 2**20, 4 * 2**20, "shard 1/1")
        return ProofResult(NAME, "cpu", {}, 100.0, "B", 100.0, "steps x 20 B")

    monkeypatch.setattr(sys.modules[__name__], "run", writes)
    runner.run()
    assert runner.wait(30)
    assert runner.progress_text.value == "3.00 MiB/4.00 MiB shard 1/1"


def test_a_cpu_fallback_pass_reads_as_cpu_only_information(runner, monkeypatch):
    import sys

    def fallback(inputs, *, control) -> ProofResult:
        return ProofResult(NAME, "cpu", {}, 100.0, "B", 100.0, "steps x 20 B", flags=["cpu-fallback"])

    monkeypatch.setattr(sys.modules[__name__], "run", fallback)
    runner.run()
    assert runner.wait(30)
    assert runner.result["verdict"] == "pass"  # the record keeps the proof's verdict
    assert "[info (CPU only)]" in runner.outcome.value and "[pass]" not in runner.outcome.value
    assert "without a GPU" in runner.where.value or "Measured on" in runner.where.value


def test_a_dashboard_without_runs_shows_no_progress_bar_and_an_optional_model_reads_none():
    from aiworkbook.widgets import ProofRunner
    from aiworkbook.widgets.i18n import choice

    r = ProofRunner(proof="roofline", allow_run=False, lang="de")
    try:
        assert r.progress_row.layout.display == "none" and "run" not in r.current_inputs()
        model = r.inputs["model"]
        shown = model._options_labels[model.index]  # the words the browser draws
        assert model.value == "" and shown == "keins" == choice("none", "de")  # not a blank box
        assert "model" not in r.current_inputs()  # "none" leaves the proof's default: no model point
        model.value = "llama-3-8b"
        assert r.current_inputs()["model"] == "llama-3-8b"
    finally:
        r.close()
