"""The error contract as a property: hostile configs, node and GPU files, traces and flag values for
every command give exit 0 or 2, never a traceback, valid JSON (no bare NaN/Infinity) under --json,
and no half-written file. Example counts are bounded so the whole file runs in CI in about a minute."""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aiworkbook.cli import main
from aiworkbook.paths import data_dir

FAST = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
SLOW = settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)

TINY_CONFIG = json.loads((data_dir() / "models" / "tiny-llama" / "config.json").read_text())
NODE = json.loads((data_dir() / "nodes" / "gpu-training-8xh100.json").read_text())
GPU = json.loads((data_dir() / "gpus" / "gpus.json").read_text())["gpus"][0]
TRACE = next((data_dir() / "traces").glob("*synthetic*.jsonl")).read_text().splitlines()

# JSON scalars a hand-edited or hostile file holds: wrong types, strings for booleans, huge, non-finite
SCALARS = st.one_of(
    st.sampled_from([0, 0.0, -1, -1.5, float("nan"), float("inf"), float("-inf"), 1e308, 2**63]),
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["false", "true", "0", "", "nan", "1e309", "-1"]),
    st.text(max_size=12),
)
VALUES = st.recursive(
    SCALARS,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
    max_leaves=6,
)
# the text of a flag value: numbers at and beyond every bound, non-finite spellings, junk
FLAG_TEXT = st.one_of(
    st.integers(min_value=-(2**80), max_value=2**80).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["nan", "inf", "-inf", "1e308", "1e-300", "0", "-1", "", " ", "1_000", "0x10", "--json"]),
    st.text(max_size=8),
)


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def _reject_constant(name: str) -> None:
    raise ValueError(f"bare {name} in JSON output")


def assert_contract(
    argv: list[str], folder: Path | None = None, *, finite: bool = False
) -> tuple[int, str, str]:
    """`finite`: the input is a hostile file; when it is accepted, every number answered is finite
    (a NaN or zero ceiling must be refused, not turned into nulls)."""
    rc, out, err = run(argv)
    assert rc in (0, 2), (argv, rc, err[-2000:])
    assert "Traceback" not in out + err, (argv, err[-2000:])
    assert "internal error" not in err, (argv, err)
    if rc == 2 and err.startswith("error:"):
        assert len(err.strip().splitlines()) == 1, (argv, err)
    if rc == 0 and "--json" in argv and out.strip():
        doc = json.loads(out, parse_constant=_reject_constant)
        if finite and isinstance(doc, dict):
            assert "non_finite" not in doc, (argv, doc["non_finite"])
    if folder is not None:
        left = [p.name for p in folder.rglob("*.tmp")]
        assert not left, (argv, left)
    return rc, out, err


def _write(path: Path, doc: object) -> Path:
    path.write_text(json.dumps(doc))  # Python writes NaN/Infinity tokens: hostile files may hold them
    return path


def _mutate(base: dict, key: str, value: object, drop: bool) -> dict:
    """A copy of `base` with `key` ('a.b' reaches into a nested object) set to `value` or dropped."""
    doc = json.loads(json.dumps(base))
    *outer, last = key.split(".")
    node = doc
    for k in outer:
        node = node.setdefault(k, {})
    if drop:
        node.pop(last, None)
    else:
        node[last] = value
    return doc


@FAST
@given(
    key=st.sampled_from(
        sorted(TINY_CONFIG) + ["tie_word_embeddings", "attention_bias", "mlp_bias", "head_dim"]
    ),
    value=VALUES,
    drop=st.booleans(),
    command=st.sampled_from(["params", "size"]),
)
def test_hostile_config_fields(key, value, drop, command):
    with tempfile.TemporaryDirectory() as d:
        cfg = _write(Path(d) / "config.json", _mutate(TINY_CONFIG, key, value, drop))
        argv = [command, str(cfg), "--json"] + (
            ["--mode", "infer", "--gpu", "H100-SXM"] if command == "size" else []
        )
        assert_contract(argv, Path(d), finite=True)


@FAST
@given(
    key=st.sampled_from(
        sorted(NODE)
        + ["gpu_calibrated", "interconnect_bps", "storage_write_bps", "gpu_calibrated.peak_flops_dense.bf16"]
    ),
    value=VALUES,
    drop=st.booleans(),
)
def test_hostile_node_files(key, value, drop):
    with tempfile.TemporaryDirectory() as d:
        base = {**NODE, "gpu_calibrated": GPU} if key.startswith("gpu_calibrated.") else NODE
        node = _write(Path(d) / "node.json", _mutate(base, key, value, drop))
        assert_contract(
            ["size", "tiny-llama", "--mode", "infer", "--node", str(node), "--json"], Path(d), finite=True
        )


@FAST
@given(
    key=st.sampled_from(
        [
            "memory_bandwidth_bps",
            "peak_flops_dense",
            "peak_flops_dense.bf16",
            "peak_flops_dense.fp32",
            "usable_memory_bytes",
            "memory_bytes",
            "name",
        ]
    ),  # fmt: skip
    value=VALUES,
    drop=st.booleans(),
)
def test_hostile_gpu_files(key, value, drop):
    with tempfile.TemporaryDirectory() as d:
        gpu = _write(Path(d) / "gpu.json", _mutate(GPU, key, value, drop))
        assert_contract(
            ["size", "tiny-llama", "--mode", "infer", "--gpu", str(gpu), "--json"], Path(d), finite=True
        )


SIZE_FLAGS = ["--batch", "--seq", "--new-tokens", "--gpus", "--zero", "--tp", "--lora-rank", "--concurrency",
              "--context", "--gpu-util", "--max-batched-tokens", "--train-tokens", "--price", "--write-gbps",
              "--read-gbps", "--mtbf-hours", "--mode", "--precision", "--attention", "--checkpointing",
              "--kv-dtype", "--engine", "--weights-dtype", "--recipe", "--device", "--gpu", "--node"]  # fmt: skip


@FAST
@given(
    command=st.sampled_from(["size", "fit"]),
    flag=st.sampled_from(SIZE_FLAGS),
    value=FLAG_TEXT,
    mode=st.sampled_from(["infer", "train"]),
)
def test_hostile_flag_values_size_and_fit(command, flag, value, mode):
    if command == "fit" and flag not in (
        "--batch",
        "--seq",
        "--new-tokens",
        "--gpu",
        "--mode",
        "--precision",
    ):
        flag = "--seq"
    argv = [command, "tiny-llama", "--mode", mode, flag, value, "--json"]
    assert_contract(argv)


@FAST
@given(model=FLAG_TEXT | st.sampled_from(["/", "/dev/null", "/proc/self/status", ".", "..", "~"]))
def test_hostile_model_names(model):
    assert_contract(["params", model, "--json"])


@SLOW
@given(
    proof=st.sampled_from(["roofline", "vram", "kv"]),
    flag=st.sampled_from(["--device", "--threads", "--batch", "--seq", "--precision", "--checkpointing"]),
    value=FLAG_TEXT,
)
def test_hostile_proof_flags_are_refused_before_work(proof, flag, value):
    """Only values that are certainly wrong, so no proof runs: each is refused with exit 2."""
    valid = {"--device": {"auto", "cpu"}, "--precision": {"fp32", "bf16", "fp16", "bf16-mixed", "fp16-mixed"},
             "--checkpointing": {"none", "selective", "full"}}  # fmt: skip
    if flag in valid and value.strip() in valid[flag]:
        value = value + "x"
    if flag in ("--threads", "--batch", "--seq"):
        try:
            if int(value.replace("_", "")) > 0:
                value = "-" + value.lstrip("+")
        except ValueError:
            pass
    if proof == "roofline" and flag not in ("--device", "--threads"):
        flag = "--device"
    if proof == "kv" and flag != "--device":
        flag = "--device"
    argv = ["prove", proof] + ([] if proof == "roofline" else ["tiny-llama"]) + ["--quick", flag, value]
    rc, _, _ = assert_contract(argv)
    assert rc == 2, argv


def _trace(header_key: str | None, value: object, row_key: str | None) -> str:
    lines = [json.loads(x) for x in TRACE[:6] if x.strip()]
    if header_key is not None:
        lines[0][header_key] = value
    if row_key is not None:
        row = lines[2]
        if row_key.startswith("gpu."):
            row["gpus"][0][row_key[4:]] = value
        else:
            row[row_key] = value
    return "\n".join(json.dumps(x) for x in lines) + "\n"


@SLOW
@given(
    header_key=st.none()
    | st.sampled_from(["gpus", "label", "interval_s", "kind", "schema_version", "capabilities"]),
    row_key=st.none()
    | st.sampled_from(["t", "wall", "gpus", "host", "gpu.power_w", "gpu.index", "gpu.mem_used_bytes"]),
    value=VALUES,
)
def test_hostile_traces_replayed_and_recorded(header_key, row_key, value):
    with tempfile.TemporaryDirectory() as d:
        trace = Path(d) / "t.jsonl"
        trace.write_text(_trace(header_key, value, row_key))
        rec, csv = Path(d) / "out" / "rec.jsonl", Path(d) / "out" / "c.csv"
        argv = ["monitor", "--replay", str(trace), "--interval", "0.1", "--duration", "0.25", "--no-host",
                "--record", str(rec), "--csv", str(csv)]  # fmt: skip
        rc, _, _ = assert_contract(argv, Path(d))
        if rc == 0:  # what was recorded from a hostile trace is itself a valid trace without NaN
            for line in rec.read_text().splitlines():
                json.loads(line, parse_constant=_reject_constant)


@SLOW
@given(flag=st.sampled_from(["--interval", "--duration", "--serve", "--replay"]), value=FLAG_TEXT)
def test_hostile_monitor_flags(flag, value):
    if flag == "--duration":  # a valid duration would record for that long: keep those short
        try:
            if 0.3 < float(value) < float("inf"):
                value = "-" + value
        except ValueError:
            pass
    if flag == "--interval":
        try:
            if float(value) > 0.2:
                value = "0"
        except ValueError:
            pass
    argv = ["monitor", "--replay", "synthetic", "--quiet", "--no-host", "--duration", "0.2", flag, value]
    if flag == "--serve":
        argv = [*argv[:-2], "--serve", value if ":" in value or not value.isdigit() else "127.0.0.1:0"]
    assert_contract(argv)


def test_listing_commands_json_is_valid():
    for argv in (["models", "--json"], ["gpus", "--json"], ["nodes", "--json"], ["env", "--json"]):
        rc, out, _ = assert_contract(argv)
        assert rc == 0 and out.strip()


def test_no_command_leaves_a_temporary_when_its_output_is_refused(tmp_path):
    target = tmp_path / "r.json"
    os.mkfifo(tmp_path / "fifo.json")
    for out in (tmp_path / "fifo.json", Path("/proc/aiworkbook-x.json"), tmp_path):
        rc, _, err = run(["prove", "kv", "tiny-llama", "--quick", "--json", str(out)])
        assert rc == 2 and str(out) in err and "Traceback" not in err
    assert not list(tmp_path.glob("*.tmp")) and not target.exists()
