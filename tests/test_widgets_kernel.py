"""Widgets in a real Jupyter kernel (nbclient, no browser): results computed on worker threads reach
the widgets through the kernel's event loop, a cell can wait for them without deadlocking, and the
monitor's samples arrive from the sampler thread while the kernel idles."""

from __future__ import annotations

import nbformat
import pytest

nbclient = pytest.importorskip("nbclient")

CELLS = [
    "from aiworkbook.widgets import ModelSizer, ProofRunner, GPUMonitor\n"
    "from aiworkbook.widgets.base import kernel_loop\n"
    "s = ModelSizer()\n"
    "print('loop', kernel_loop() is not None)",
    "print('sized', s.wait(120), s.error == '', s.result['model'])",
    "s.value = {'concurrency': 16}\nprint('waited', s.wait(120), s.result['workload']['concurrency'])",
    "from aiworkbook.telemetry.sampler import Sampler\n"
    "class NoGPU:\n"
    "    def count(self): return 0\n"
    "    def status(self): return 'none'\n"
    "    def read_all(self): return []\n"
    "sampler = Sampler(interval=0.5, gpu_reader=NoGPU(), events=False)\n"
    "m = GPUMonitor(interval=0.5, sampler=sampler)",
    "import asyncio\nawait asyncio.sleep(2.5)\nprint('monitor', m.result.get('samples', 0) >= 2, sampler.running)",
    "m.close()\nprint('closed', sampler.running, len(sampler.subscribers()))",
]


def test_results_arrive_through_the_kernel_loop():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3").execute()
    out = [
        "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream").strip()
        for cell in nb.cells
    ]
    assert out[0] == "loop True"
    assert out[1] == "sized True True llama-3-8b"
    assert out[2] == "waited True 16"
    assert out[4] == "monitor True True"
    assert out[5] == "closed False 0"
