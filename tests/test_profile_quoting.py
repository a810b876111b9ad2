"""Nothing a user typed runs as code: the vLLM snippet shell-quotes every value (checked by running its
quoting through bash), the k8s block's strings read back from YAML unchanged, and the Markdown and HTML
reports show names, notes and paths as text (checked with real Markdown renderers), never as a tag,
a link or an image."""

from __future__ import annotations

import html
import json
import shlex
import subprocess
from datetime import timedelta

import mistune
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from profile_fakes import env, result

from aiworkbook.paths import data_dir
from aiworkbook.profile import lock
from aiworkbook.profile.k8s import to_yaml
from aiworkbook.profile.report import render_html, render_markdown
from aiworkbook.profile.snippets import VllmArgs, k8s_yaml

EVIL_DIR = "evil$(touch PWNED);x `id` ```\n<img src=x onerror=alert(1)> 'q' \"d\" \\"
HOSTILE = (
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[x](javascript:alert(1))",
    "![i](javascript:alert(2))",
    "<https://evil.example>",
    "`code` **bold** _em_ | pipe | # not a heading",
    "line\n# heading\n<iframe src=javascript:alert(3)>",
    "```\n<script>alert(4)</script>\n```",
    "&lt;script&gt;alert(5)&lt;/script&gt;",
)
# text a folder or a note can hold: no NUL (never in a path or an argv), no lone surrogates (not UTF-8)
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=60)
BOUNDED = settings(max_examples=60, deadline=timedelta(seconds=10))


def _argv(command: str, cwd) -> list[str]:
    """The argv bash gives `vllm serve ...` (the command with printf standing in for vllm serve)."""
    script = command.replace("vllm serve ", "printf '%s\\0' ", 1)
    assert script != command
    syntax = subprocess.run(["bash", "-n", "-c", script], capture_output=True, timeout=10, cwd=cwd)
    assert syntax.returncode == 0, syntax.stderr
    out = subprocess.run(["bash", "-c", script], capture_output=True, timeout=10, cwd=cwd, check=True)
    return out.stdout.decode("utf-8").split("\0")[:-1]


def _args(model: str, kv: str | None = None) -> VllmArgs:
    return VllmArgs(model, 2, 0.9, 4608, 17, kv)


@given(model=TEXT.filter(bool))
@BOUNDED
def test_the_vllm_command_keeps_any_model_one_argument(model, tmp_path_factory):
    cwd = tmp_path_factory.mktemp("sh")
    argv = _argv(_args(model).command(), cwd)
    assert argv == [model, *_args(model).args()]
    assert list(cwd.iterdir()) == []  # nothing ran: no file appeared where bash ran


def test_the_issue_folder_name_stays_a_name(tmp_path):
    cmd = _args(EVIL_DIR, "fp8';reboot").command()
    assert _argv(cmd, tmp_path) == [EVIL_DIR, *_args(EVIL_DIR, "fp8';reboot").args()]
    assert not (tmp_path / "PWNED").exists()
    assert shlex.split(cmd.replace(" \\\n  ", " "))[2] == EVIL_DIR
    assert "'--kv-cache-dtype=fp8'\"'\"';reboot'" in cmd  # shlex.quote's form


@given(value=TEXT)
@BOUNDED
def test_yaml_strings_read_back_unchanged(value):
    """Every YAML written (the resources block, the manifests) reads back as the very strings given,
    as keys, values, list items and multi-line text."""
    block = k8s_yaml({"limits": {value or "x": 1}})
    assert yaml.safe_load(block) == {"resources": {"limits": {value or "x": 1}}}
    docs = [{"data": {"profile.json": value, value or "k": [value, {"v": value}]}}, {"name": value}]
    assert list(yaml.safe_load_all(to_yaml(docs))) == docs


@pytest.mark.parametrize("word", ["yes", "No", "true", "null", "on", "1", "0x1f", "~", "- a", "a: b", "#c"])
def test_yaml_words_that_would_change_type_are_quoted(word):
    assert yaml.safe_load(k8s_yaml({"limits": {word: 1}})) == {"resources": {"limits": {word: 1}}}
    assert list(yaml.safe_load_all(to_yaml([{"k": word}]))) == [{"k": word}]
    assert "    nvidia.com/mig-1g.10gb: 1" in k8s_yaml({"limits": {"nvidia.com/mig-1g.10gb": 1}})  # plain


def test_yaml_counts_are_whole_numbers():
    with pytest.raises(ValueError, match="whole number"):
        k8s_yaml({"limits": {"nvidia.com/gpu": "1; rm -rf /"}})


# ---- the reports ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A profile whose user-given strings are all hostile: workload name, the model folder's name (so
    the vLLM snippet holds it), notes, a proof's notes, its environment's CPU and GPU names."""
    root = tmp_path_factory.mktemp("hostile")
    folder = root / EVIL_DIR
    folder.mkdir()
    cfg = json.loads((data_dir() / "models" / "llama-3.2-1b" / "config.json").read_text())
    cfg.pop("_name_or_path")
    (folder / "config.json").write_text(json.dumps(cfg))
    e = env(cpu=HOSTILE[1], gpu=HOSTILE[0])
    r = result("kv", 1.0e9, environment=e, notes=list(HOSTILE))
    return lock(
        "llm-inference",
        detected=None,
        workloads=[
            {
                "name": HOSTILE[0],
                "model": str(folder),
                "workload": {"mode": "infer", "seq_len": 1024, "new_tokens": 128},
                "gpu": "L40S",
            }
        ],
        results=[r],
        notes=HOSTILE,
    )


def _no_live_markup(rendered: str) -> None:
    low = rendered.lower()
    for bad in ("<script", "<img", "<iframe", 'href="javascript', 'src="javascript', 'href="https://evil'):
        assert bad not in low, bad


@pytest.mark.parametrize(
    "render",
    [
        lambda md: MarkdownIt("commonmark", {"html": True}).enable("table").render(md),
        lambda md: mistune.create_markdown(escape=False, plugins=["table", "strikethrough"])(md),
    ],
    ids=["markdown-it", "mistune"],
)
def test_markdown_report_shows_hostile_strings_as_text(hostile, render):
    md = render_markdown(hostile)
    rendered = render(md)
    _no_live_markup(rendered)
    text = html.unescape(rendered)
    for s in HOSTILE[:4]:  # each note comes back as the very text typed (one line each)
        assert s in text, s
    assert "```bash" not in md or "````bash" in md  # the code fence outlasts the backticks in the path
    assert "onerror=alert(1)&gt;" in rendered  # the folder name inside the code block, as text


def test_html_report_escapes_every_string(hostile):
    page = render_html(hostile)
    _no_live_markup(page)
    assert html.escape(HOSTILE[0]) in page and html.escape(HOSTILE[2]) in page
    assert "vllm serve &#x27;" in page  # the quoted folder, escaped again for HTML


@pytest.mark.parametrize("value", ["A\n", "nvidia.com/gpu\n", "a\n\n", " lead\nx", "x\r\ny"])
def test_a_final_newline_is_not_a_plain_word(value):
    """Python's "$" also matches before a final newline: "A\\n" once passed as a plain YAML word and read
    back as "A" (found by the property test above); text with newlines round-trips whole."""
    assert list(yaml.safe_load_all(to_yaml([{"key": value}]))) == [{"key": value}]
    assert yaml.safe_load(k8s_yaml({"limits": {value: 1}})) == {"resources": {"limits": {value: 1}}}
