"""Property-based fuzzing of `check` and `report` over hand-broken profiles (hypothesis, in-process
through the CLI's main): a valid locked profile with one value replaced (wrong types, huge and
non-finite numbers, deep nesting, long strings), a key dropped or duplicated, or the file truncated.
Whatever the edit: exit 0, 1 or 2, never an internal error or a traceback, stderr under 2 KB, the
inputs unchanged and no file written but the outputs named. Each test is bounded (max_examples,
deadline); `pytest --hypothesis-show-statistics` prints the counts and the exit codes seen, and
AIWB_FUZZ_SCALE=10 runs ten times as many examples (a longer campaign than CI's)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from profile_fakes import write_locked

from aiworkbook.cli import main

SCALE = max(1, int(os.environ.get("AIWB_FUZZ_SCALE", "1") or 1))
NEST, BIG = "\u0000nest", "\u0000big"  # markers replaced in the JSON text by raw nesting / digits


class Files(dict):
    """The base files, with a short repr so a failing example's report stays readable."""

    def __repr__(self) -> str:
        return f"<{len(self)} base files>"


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> dict[str, bytes]:
    """The files of one valid locked profile (infer workload, two golden proofs) and its results."""
    d = tmp_path_factory.mktemp("fuzzbase")
    write_locked(d)
    return Files({n: (d / n).read_bytes() for n in ("p.json", "kv.json", "roof.json")})


def _paths(doc: Any, at: tuple = ()) -> list[tuple]:
    out = [at] if at else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*at, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*at, i))
    return out


HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from(["true", "false", "1", "1e400", "NaN", "", "-1", "kv", "llama-3-8b", "<script>"]),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([2**63, -(2**63) - 1, 10**30, -1, 0]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.integers(min_value=1_000, max_value=300_000).map(lambda n: "x" * n),
    st.lists(st.integers(min_value=-5, max_value=5), max_size=3),
    st.dictionaries(st.text(max_size=6), st.integers(), max_size=3),
    st.integers(min_value=2, max_value=5_000).map(lambda n: f"{NEST}{n}"),
    st.integers(min_value=19, max_value=6_000).map(lambda n: f"{BIG}{n}"),
)


def _raw(text: str) -> str:
    """Replace the markers by raw JSON: a list nested n deep, an integer of n digits."""
    while '"\\u0000nest' in text:
        i = text.index('"\\u0000nest')
        j = text.index('"', i + 1)
        n = int(text[i + len('"\\u0000nest') : j])
        text = text[:i] + "[" * n + "]" * n + text[j + 1 :]
    while '"\\u0000big' in text:
        i = text.index('"\\u0000big')
        j = text.index('"', i + 1)
        n = int(text[i + len('"\\u0000big') : j])
        text = text[:i] + "9" * n + text[j + 1 :]
    return text


@st.composite
def broken(draw, base_text: str) -> str:
    """One profile text: a value replaced, a key dropped, a key duplicated, or the text truncated."""
    doc = json.loads(base_text)
    how = draw(st.sampled_from(["replace", "replace", "replace", "drop", "duplicate", "truncate", "extra"]))
    if how == "truncate":
        return base_text[: draw(st.integers(min_value=0, max_value=len(base_text) - 1))]
    path = draw(st.sampled_from(_paths(doc)))
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    key = path[-1]
    if how == "replace":
        parent[key] = draw(HOSTILE)
    elif how == "drop":
        del parent[key]
    elif how == "extra" and isinstance(parent, dict):
        parent[draw(st.text(min_size=1, max_size=8))] = draw(HOSTILE)
    text = _raw(json.dumps(doc, allow_nan=True))
    if how == "duplicate" and isinstance(key, str):
        # the same key again in the same object, with a hostile value (json.loads keeps the last)
        dup = json.dumps(key) + ": " + _raw(json.dumps(draw(HOSTILE), allow_nan=True)) + ", "
        at = text.find(json.dumps(key) + ":")
        text = text[:at] + dup + text[at:]
    return text


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _run(
    base: dict[str, bytes], text: str, argv: list[str], outputs: tuple[str, ...]
) -> tuple[int, str, str]:
    """Run argv in a fresh folder holding the broken profile and the results; check the invariants."""
    with tempfile.TemporaryDirectory(prefix="aiwb-fuzz-") as tmp:
        root = Path(tmp)
        (root / "p.json").write_text(text, encoding="utf-8", errors="surrogatepass")
        for name in ("kv.json", "roof.json"):
            (root / name).write_bytes(base[name])
        before = _tree(root)
        out, err = io.StringIO(), io.StringIO()
        cwd = os.getcwd()
        os.chdir(root)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(argv)
        finally:
            os.chdir(cwd)
        after = _tree(root)
        e = err.getvalue()
        assert code in (0, 1, 2), (code, e[:500])
        event(f"{argv[0]} exit {code}" + (f": {e[:60]}" if code == 1 and argv[0] == "report" else ""))
        assert "internal error" not in e and "Traceback" not in e, e[:1000]
        assert len(e.encode("utf-8", "replace")) < 2048, (len(e), e[:300])
        for name, data in before.items():  # inputs unchanged
            assert after.get(name) == data, name
        stray = set(after) - set(before) - set(outputs)
        assert not stray, stray  # nothing written but the outputs named
        # every line a one-line error or warning (a traceback's lines would not be)
        assert all(ln.startswith(("error: ", "warning: ")) for ln in e.splitlines()), e[:300]
        if code == 2:
            assert not (set(after) & set(outputs)), "an output written by a run that refused its input"
        return code, out.getvalue(), e


CHECK = ["check", "p.json", "--results", "kv.json", "--results", "roof.json", "--json"]
SETTINGS = {
    "deadline": timedelta(seconds=20),
    "suppress_health_check": [
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
    "derandomize": False,
}


@settings(max_examples=300 * SCALE, **SETTINGS)
@given(data=st.data())
def test_check_survives_any_broken_profile(base, data):
    text = data.draw(broken(base["p.json"].decode()))
    code, out, _ = _run(base, text, CHECK, ())
    if code in (0, 1):

        def refuse(token: str):
            raise AssertionError(f"bare {token} in check --json")

        json.loads(out, parse_constant=refuse)


@settings(max_examples=200 * SCALE, **SETTINGS)
@given(data=st.data())
def test_markdown_report_survives_any_broken_profile(base, data):
    text = data.draw(broken(base["p.json"].decode()))
    code, _, _ = _run(base, text, ["report", "p.json", "--md", "r.md"], ("r.md",))
    assert code in (0, 2)


@settings(max_examples=40 * SCALE, **SETTINGS)
@given(data=st.data())
def test_html_report_survives_any_broken_profile(base, data):
    text = data.draw(broken(base["p.json"].decode()))
    code, _, _ = _run(base, text, ["report", "p.json", "--html", "r.html"], ("r.html",))
    assert code in (0, 2)


@settings(max_examples=100 * SCALE, **SETTINGS)
@given(data=st.data())
def test_check_survives_any_broken_result_file(base, data):
    """A `--results` file broken the same ways: exit 0/1/2, never an internal error."""
    text = data.draw(broken(base["kv.json"].decode()))
    with tempfile.TemporaryDirectory(prefix="aiwb-fuzz-") as tmp:
        (Path(tmp) / "kv.json").write_text(text, encoding="utf-8", errors="surrogatepass")
        b = Files({**base, "kv.json": (Path(tmp) / "kv.json").read_bytes()})
    _run(b, base["p.json"].decode(), CHECK, ())


@pytest.fixture(scope="module")
def local(tmp_path_factory) -> Files:
    """A profile whose workload is a local model (its config embedded), with the result files."""
    from aiworkbook.paths import data_dir
    from aiworkbook.profile import lock

    d = tmp_path_factory.mktemp("fuzzlocal")
    folder = d / "my-model"
    folder.mkdir()
    (folder / "config.json").write_bytes(
        (data_dir() / "models" / "llama-3.2-1b" / "config.json").read_bytes()
    )
    write_locked(d)
    w = {"model": str(folder), "workload": {"mode": "infer", "seq_len": 1024}, "gpu": "L40S"}
    lock("llm-inference", detected=None, workloads=[w], results=[d / "kv.json", d / "roof.json"]).save(
        d / "p.json"
    )
    return Files({n: (d / n).read_bytes() for n in ("p.json", "kv.json", "roof.json")})


@settings(max_examples=60 * SCALE, **SETTINGS)
@given(data=st.data())
def test_an_embedded_config_rehashed_after_any_edit(local, data):
    """The config itself broken (and its sha256 recomputed, as a careful forger would): the model must
    still read, or the run exits 2 naming workloads.0.config.content.<key>; never an internal error."""
    from aiworkbook.specs.catalog import config_sha256

    doc = json.loads(local["p.json"])
    conf = doc["workloads"][0]["config"]
    key = data.draw(st.sampled_from(sorted(conf["content"])))
    if data.draw(st.booleans()):
        conf["content"][key] = data.draw(HOSTILE.filter(lambda v: not (isinstance(v, float) and v != v)))
    else:
        del conf["content"][key]
    try:
        conf["sha256"] = config_sha256(conf["content"])
    except ValueError:  # an infinite number cannot be hashed (nor stored): refused at load as well
        pass
    text = _raw(json.dumps(doc, allow_nan=True))
    code, _, err = _run(local, text, ["report", "p.json", "--md", "r.md"], ("r.md",))
    assert code in (0, 2)
    if code == 2:
        # the content's key, or the content nested past the JSON reader's limit (refused as it is read)
        assert "p.json: field 'workloads.0.config" in err or "p.json: field 'json'" in err, err[:300]
