"""Drift alarm: every pynvml and `torch.cuda` name the package calls, and every field it reads on an
NVML struct, exists in the installed nvidia-ml-py and torch, so an API change fails CI instead of a
user's first run on a GPU. Found by parsing all of aiworkbook/ with `ast` (no list kept by hand):

- `pynvml.X` / `nv.X` attributes and string literals naming an NVML function or constant (what
  `aiworkbook.nvml.call/attempt` take);
- `torch.cuda.X` attribute chains;
- `.field` reads on a name bound to an NVML call's result (`mem = call("nvmlDeviceGetMemoryInfo", h)`,
  `mem, why = nvml.attempt(...)`, a loop over a process list), checked against the `_fields_` of the
  ctypes structs that pynvml's function (or the function it delegates to) builds, read from pynvml.py.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pynvml
import pytest

import aiworkbook

PKG = Path(aiworkbook.__file__).parent
SOURCES = sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)
_NVML = re.compile(r"^(nvml[A-Z]|NVML_?[A-Z])[A-Za-z0-9_]*$")
_FN = re.compile(r"^nvml[A-Z][A-Za-z0-9_]*$")


@functools.cache
def _parsed() -> tuple:
    return tuple((path, ast.parse(path.read_text(encoding="utf-8"))) for path in SOURCES)


def _trees():
    return _parsed()


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(PKG.parent)}:{getattr(node, 'lineno', 0)}"


def pynvml_names() -> dict[str, str]:
    out: dict[str, str] = {}
    for path, tree in _trees():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                if node.value.id in ("nv", "pynvml") and _NVML.match(node.attr):
                    out.setdefault(node.attr, _where(path, node))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _NVML.match(node.value):
                out.setdefault(node.value, _where(path, node))
    return out


def torch_cuda_names() -> dict[str, str]:
    out: dict[str, str] = {}
    for path, tree in _trees():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "cuda"
                and isinstance(node.value.value, ast.Name)
                and node.value.value.id == "torch"
            ):
                out.setdefault(node.attr, _where(path, node))
    return out


@functools.cache
def _wrappers() -> dict[str, str]:
    """Package functions that return one NVML function's answer (`aiworkbook.nvml.compute_processes`):
    name -> the NVML function their first `return` calls."""
    out = {}
    for _, tree in _trees():
        for fn in [n for n in tree.body if isinstance(n, ast.FunctionDef)]:
            rets = [n for n in ast.walk(fn) if isinstance(n, ast.Return) and n.value is not None]
            value = rets[0].value if rets else None
            if isinstance(value, ast.Name):  # procs = nv.nvmlX(...) ... return procs
                value = next(
                    (
                        a.value
                        for a in ast.walk(fn)
                        if isinstance(a, ast.Assign)
                        and any(isinstance(t, ast.Name) and t.id == value.id for t in a.targets)
                    ),
                    None,
                )
            name = _nvml_function(value, wrappers=False) if value is not None else None
            if name:
                out[fn.name] = name
    return out


def _nvml_function(call: ast.AST, wrappers: bool = True) -> str | None:
    """The NVML function a call reaches: `pynvml.nvmlX(...)`, `nv.nvmlX(...)`, any call whose first
    argument is the string "nvmlX" (aiworkbook.nvml.call / attempt and their local aliases), or a
    package wrapper that returns one (`_wrappers`)."""
    if not isinstance(call, ast.Call):
        return None
    f = call.func
    if isinstance(f, ast.Attribute) and _FN.match(f.attr):
        return f.attr
    if wrappers and isinstance(f, ast.Attribute | ast.Name):
        name = _wrappers().get(f.attr if isinstance(f, ast.Attribute) else f.id)
        if name:
            return name
    if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
        if _FN.match(call.args[0].value):
            return call.args[0].value
    return None


def struct_reads() -> dict[tuple[str, str], str]:
    """(NVML function, field) -> where, for every attribute read on a name bound to that function's
    result inside one function body (or a loop variable over it)."""
    out: dict[tuple[str, str], str] = {}
    for path, tree in _trees():
        for fn in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]:
            bound: dict[str, str] = {}
            for node in ast.walk(fn):
                if isinstance(node, ast.Assign) and (name := _nvml_function(node.value)):
                    for t in node.targets:
                        if isinstance(t, ast.Name):
                            bound[t.id] = name
                        elif isinstance(t, ast.Tuple) and t.elts and isinstance(t.elts[0], ast.Name):
                            bound[t.elts[0].id] = name  # value, why = nvml.attempt(...)
            for node in ast.walk(fn):  # loop variables over a bound list (process lists)
                iters = []
                if isinstance(node, ast.For):
                    iters = [(node.target, node.iter)]
                elif isinstance(node, ast.comprehension):
                    iters = [(node.target, node.iter)]
                for target, it in iters:
                    src = it.id if isinstance(it, ast.Name) else None
                    if src in bound and isinstance(target, ast.Name):
                        bound[target.id] = bound[src]
                if (  # mine = [p for p in procs if ...]: a list of the same structs
                    isinstance(node, ast.Assign)
                    and isinstance(node.value, ast.ListComp)
                    and isinstance(node.value.generators[0].iter, ast.Name)
                    and node.value.generators[0].iter.id in bound
                ):
                    for t in node.targets:
                        if isinstance(t, ast.Name):
                            bound[t.id] = bound[node.value.generators[0].iter.id]
            for node in ast.walk(fn):
                if (  # mine[0].usedGpuMemory
                    isinstance(node, ast.Attribute)
                    and isinstance(node.value, ast.Subscript)
                    and isinstance(node.value.value, ast.Name)
                    and node.value.value.id in bound
                ):
                    out.setdefault((bound[node.value.value.id], node.attr), _where(path, node))
                if (  # getattr(pci, "busId", ...)
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id == "getattr"
                    and len(node.args) >= 2
                    and isinstance(node.args[0], ast.Name)
                    and node.args[0].id in bound
                    and isinstance(node.args[1], ast.Constant)
                ):
                    out.setdefault((bound[node.args[0].id], str(node.args[1].value)), _where(path, node))
                if (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.ctx, ast.Load)
                    and isinstance(node.value, ast.Name)
                    and node.value.id in bound
                    and not node.attr.startswith("_")
                ):
                    out.setdefault((bound[node.value.id], node.attr), _where(path, node))
    return out


@functools.cache
def _pynvml_structs() -> dict[str, set[str]]:
    """pynvml function -> the ctypes struct classes it (or an nvml function it calls) instantiates."""
    tree = ast.parse(Path(pynvml.__file__).read_text(encoding="utf-8"))
    direct: dict[str, set[str]] = {}
    calls: dict[str, set[str]] = {}
    for fn in [n for n in tree.body if isinstance(n, ast.FunctionDef)]:
        made, called = set(), set()
        for node in ast.walk(fn):
            if isinstance(node, ast.BinOp) and isinstance(node.left, ast.Name):  # c_struct * n: an array
                obj = getattr(pynvml, node.left.id, None)
                if isinstance(obj, type) and hasattr(obj, "_fields_"):
                    made.add(node.left.id)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                obj = getattr(pynvml, node.func.id, None)
                if isinstance(obj, type) and hasattr(obj, "_fields_"):
                    made.add(node.func.id)
                elif _FN.match(node.func.id):
                    called.add(node.func.id)
        direct[fn.name], calls[fn.name] = made, called
    out = {}
    for name in direct:
        seen, todo, structs = set(), [name], set()
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            structs |= direct.get(n, set())
            todo += calls.get(n, set())
        out[name] = structs
    return out


def _fields(cls_name: str) -> set[str]:
    cls = getattr(pynvml, cls_name)
    names = {f for f, _ in cls._fields_}
    for _f, t in cls._fields_:  # unions and nested structs: their members read through the outer one
        if hasattr(t, "_fields_"):
            names |= {g for g, _ in t._fields_}
    return names


def test_every_pynvml_name_the_package_uses_exists():
    names = pynvml_names()
    assert len(names) > 80, len(names)  # the scan saw the calls (constants and functions)
    missing = {n: w for n, w in names.items() if not hasattr(pynvml, n)}
    assert not missing, f"not in the installed nvidia-ml-py: {missing}"


def test_every_torch_cuda_name_the_package_uses_exists():
    torch = pytest.importorskip("torch")
    names = torch_cuda_names()
    assert {"mem_get_info", "max_memory_allocated", "is_bf16_supported", "Event"} <= set(names)
    missing = {n: w for n, w in names.items() if not hasattr(torch.cuda, n)}
    assert not missing, f"not in the installed torch.cuda: {missing}"


def missing_fields(reads, structs, fields=_fields) -> dict:
    """The reads no struct of the function has (fields of the package's NA sentinel are its own: a
    failed call answers NA, whose `.reason` the code reads)."""
    from aiworkbook.telemetry.na import NA

    bad = {}
    for (fn, field), where in reads.items():
        made = structs.get(fn, set())
        if field in NA.__dataclass_fields__ or hasattr(NA, field):
            continue
        if not made or not any(field in fields(s) for s in made):
            bad[(fn, field)] = (where, sorted(made))
    return bad


def test_every_nvml_struct_field_the_package_reads_exists():
    reads = struct_reads()
    for must in (
        ("nvmlDeviceGetMemoryInfo", "total"),
        ("nvmlDeviceGetPciInfo", "busId"),
        ("nvmlDeviceGetComputeRunningProcesses", "usedGpuMemory"),
        ("nvmlEventSetWait_v2", "eventData"),
    ):
        assert must in reads, sorted(reads)
    bad = missing_fields(reads, _pynvml_structs())
    assert not bad, f"fields no struct of the installed nvidia-ml-py has: {bad}"


def test_the_alarm_goes_off_on_a_renamed_field():
    """The check is live: with `used` renamed in pynvml's memory structs, the read is reported."""

    def renamed(cls_name):
        return {"bytes_used" if f == "used" else f for f in _fields(cls_name)}

    bad = missing_fields(struct_reads(), _pynvml_structs(), renamed)
    assert ("nvmlDeviceGetMemoryInfo", "used") in bad
