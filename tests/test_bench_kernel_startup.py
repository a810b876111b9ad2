"""benchmarks/bench_kernel_startup.py's pieces (its rounds run in `make bench`, not here): the cells it
runs are the dashboard's code cells in order, and a kernel that fails a cell fails the bench instead of
being timed as a fast page."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location(
        "bench_kernel", ROOT / "benchmarks" / "bench_kernel_startup.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_cells_are_the_dashboards_code_cells_in_order():
    cells = _bench().code_cells(ROOT / "widgets" / "dashboards" / "sizing.ipynb")
    built = [c for c in cells if "ModelSizer(" in c or "KVPlanner(" in c or "PreflightPanel(" in c]
    assert [c.split("(")[0].split()[-1] for c in built] == ["ModelSizer", "KVPlanner", "PreflightPanel"]
    assert cells[0].startswith("from aiworkbook.widgets import")


@pytest.mark.timeout(120)
def test_a_kernel_load_measures_cpu_and_a_failing_cell_fails_it(tmp_path):
    b = _bench()
    got = b.kernel_load([b.BARE_CELL], tmp_path)
    assert got["cpu"] > 0 and got["cpu"] >= got["cells_cpu"] >= got["ready_cpu"] >= 0 and got["wall"] > 0
    assert 0 < got["ready_wall"] <= got["wall"]
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        b.kernel_load(["1 / 0"], tmp_path)


def test_bytecode_is_compiled_where_aiworkbook_is_imported_from_unless_asked_not_to():
    import importlib.util

    import aiworkbook.widgets.model_sizer as sizer

    b = _bench()
    assert b.compile_bytecode(False) == "aiworkbook as found (--source)"
    assert b.compile_bytecode() == "aiworkbook byte-compiled as pip installs it"
    assert Path(importlib.util.cache_from_source(sizer.__file__)).is_file()
