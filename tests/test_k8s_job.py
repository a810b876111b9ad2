"""`aiworkbook profile k8s-job PROFILE` (issue 26, item 3): a ConfigMap with the locked profile and a
Job or DaemonSet running `check` on GPU nodes, validated offline against the Kubernetes API's JSON
schemas (kubernetes-validate, strict: unknown fields refused), with no cluster."""

from __future__ import annotations

import contextlib
import copy
import io
import json

import kubernetes_validate
import pytest
import yaml
from profile_fakes import env, result, write_locked

from aiworkbook.cli import main
from aiworkbook.profile import load_profile
from aiworkbook.profile.k8s import locked_gpu, manifests

K8S = "1.30"


def _validate(docs):
    for d in docs:
        kubernetes_validate.validate(d, K8S, strict=True)


def _cli(capsys, *args):
    code = main(["profile", "k8s-job", *map(str, args)])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def _pod(doc):
    return doc["spec"]["template"]["spec"]


def _lock(folder, gpu: str, count: int = 1, cuda_name: str | None = None):
    e = env(gpu=gpu)
    e["gpus"] = [copy.deepcopy(e["gpus"][0]) for _ in range(count)]
    if cuda_name:
        e["cuda_device"] = {"name": cuda_name, "index": 0}
    result("kv", 1.0e9, environment=e).save(folder / "kv.json")
    out = folder / "p.json"
    args = [
        "lock",
        "--pattern",
        "llm-inference",
        "--no-detect",
        "--result",
        str(folder / "kv.json"),
        "-o",
        str(out),
    ]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(args) == 0
    return out


@pytest.fixture
def locked(tmp_path):
    return write_locked(tmp_path)


def test_the_job_is_valid_kubernetes_and_carries_the_profile_exactly(locked, capsys):
    code, out, _ = _cli(capsys, locked, "--image", "registry.example/aiworkbook:0.1", "--nodes", "3")
    assert code == 0
    docs = list(yaml.safe_load_all(out))
    assert [d["kind"] for d in docs] == ["ConfigMap", "Job"]
    _validate(docs)
    cm, job = docs
    assert cm["data"]["profile.json"] == locked.read_text()  # byte for byte, as `check` reads it
    pod = _pod(job)
    assert pod["restartPolicy"] == "Never" and job["spec"]["completions"] == job["spec"]["parallelism"] == 3
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L40S"}
    (c,) = pod["containers"]
    assert c["resources"]["requests"] == c["resources"]["limits"] == {"nvidia.com/gpu": 1}
    assert c["command"] == ["aiworkbook", "check", "/etc/aiworkbook/profile.json"]
    assert c["image"] == "registry.example/aiworkbook:0.1"
    anti = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert anti["topologyKey"] == "kubernetes.io/hostname"  # one check per node
    mount = next(m for m in c["volumeMounts"] if m["name"] == "profile")
    vol = next(v for v in pod["volumes"] if v["name"] == "profile")
    assert mount["mountPath"] == "/etc/aiworkbook" and vol["configMap"]["name"] == cm["metadata"]["name"]


def test_the_mounted_profile_is_what_check_loads(locked, capsys, tmp_path):
    _, out, _ = _cli(capsys, locked)
    cm = next(yaml.safe_load_all(out))
    mounted = tmp_path / "mounted.json"
    mounted.write_text(cm["data"]["profile.json"])
    assert load_profile(mounted) == load_profile(locked)


def test_the_daemonset_rechecks_into_the_textfile_collector(locked, capsys):
    code, out, _ = _cli(capsys, locked, "--daemonset", "--interval", "3600")
    assert code == 0
    docs = list(yaml.safe_load_all(out))
    assert [d["kind"] for d in docs] == ["ConfigMap", "DaemonSet"]
    _validate(docs)
    pod = _pod(docs[1])
    (c,) = pod["containers"]
    assert pod["restartPolicy"] == "Always"
    assert c["command"][:3] == ["/bin/sh", "-c", 'while true; do "$@"; sleep "$AIWB_INTERVAL_S"; done']
    assert c["command"][4:7] == ["aiworkbook", "check", "/etc/aiworkbook/profile.json"]
    assert c["command"][-2] == "--textfile" and c["command"][-1].startswith("/textfile/")
    assert {"name": "AIWB_INTERVAL_S", "value": "3600"} in c["env"]
    host = next(v for v in pod["volumes"] if v["name"] == "textfile")["hostPath"]
    assert host["path"] == "/var/lib/node_exporter/textfile_collector"


def test_a_mig_slice_asks_for_the_slice_resource(tmp_path, capsys):
    p = _lock(tmp_path, "NVIDIA A100-SXM4-80GB", cuda_name="NVIDIA A100-SXM4-80GB MIG 1g.10gb")
    assert locked_gpu(load_profile(p)) == ("NVIDIA A100-SXM4-80GB", 1, "1g.10gb")
    code, out, _ = _cli(capsys, p)
    docs = list(yaml.safe_load_all(out))
    _validate(docs)
    pod = _pod(docs[1])
    res = pod["containers"][0]["resources"]
    assert res["requests"] == res["limits"] == {"nvidia.com/mig-1g.10gb": 1}
    assert pod["nodeSelector"]["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-80GB"  # mixed: the whole GPU's
    code, out, _ = _cli(capsys, p, "--mig-strategy", "single")
    pod = _pod(list(yaml.safe_load_all(out))[1])
    assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 1}
    assert pod["nodeSelector"]["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb"


def test_whole_gpus_follow_the_locked_count_or_gpus(tmp_path, capsys):
    p = _lock(tmp_path, "NVIDIA H100 80GB HBM3", count=4)
    for args, want in (((), 4), (("--gpus", "2"), 2)):
        code, out, _ = _cli(capsys, p, "--json", *args)
        doc = json.loads(out)
        assert code == 0 and doc["kind"] == "List"
        _validate(doc["items"])
        c = _pod(doc["items"][1])["containers"][0]
        assert c["resources"]["requests"] == c["resources"]["limits"] == {"nvidia.com/gpu": want}
        assert _pod(doc["items"][1])["nodeSelector"]["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"


def test_the_schema_check_can_fail():
    """The validator is not a rubber stamp: a misspelt field and a string count are refused."""
    prof = load_profile_fixture()
    docs = manifests(prof, "{}", image="x:1")
    bad = copy.deepcopy(docs[1])
    _pod(bad)["containers"][0]["resource"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, K8S, strict=True)
    bad = copy.deepcopy(docs[1])
    bad["spec"]["completions"] = "3"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, K8S, strict=True)


def load_profile_fixture():
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        return load_profile(write_locked(Path(d)))


@pytest.mark.parametrize(
    "args",
    [
        ["--name", "Bad_Name"],
        ["--nodes", "0"],
        ["--gpus", "0"],
        ["--interval", "5", "--daemonset"],
        ["--mig-strategy", "none"],
        ["--product", "has space"],
        ["--product", "H100\n"],  # "$" matches before a final newline: the checks use fullmatch
        ["--name", "job\n"],
        ["--image", "two words"],
        ["--textfile-dir", "relative/dir"],
        ["--namespace", "Prod"],  # a namespace is a DNS-1123 label
        ["--namespace", "a/b"],
        ["--namespace", "ns\n"],
        ["--namespace", "x" * 64],
    ],
)
def test_bad_input_exits_two(locked, capsys, args):
    code, out, err = _cli(capsys, locked, *args)
    assert code == 2 and out == "" and "Traceback" not in err


def test_a_valid_namespace_reaches_every_manifest(locked, capsys):
    code, out, _ = _cli(capsys, locked, "--namespace", "gpu-checks")
    docs = list(yaml.safe_load_all(out)) if code == 0 else []
    _validate(docs)
    assert code == 0 and docs and all(d["metadata"]["namespace"] == "gpu-checks" for d in docs)


def test_the_output_never_replaces_the_profile(locked, capsys):
    before = locked.read_bytes()
    code, _, err = _cli(capsys, locked, "--out", locked)
    assert code == 2 and locked.read_bytes() == before


def test_a_profile_without_a_gpu_needs_a_product(tmp_path, capsys):
    e = env()
    e["gpus"] = []
    result("kv", 1.0e9, environment=e).save(tmp_path / "kv.json")
    p = tmp_path / "p.json"
    assert (
        main(
            [
                "lock",
                "--pattern",
                "llm-inference",
                "--no-detect",
                "--result",
                str(tmp_path / "kv.json"),
                "-o",
                str(p),
            ]
        )
        == 0
    )
    assert _cli(capsys, p)[0] == 2
    code, out, _ = _cli(capsys, p, "--product", "NVIDIA-L4", "--out", tmp_path / "m.yaml")
    assert code == 0 and out == ""
    docs = list(yaml.safe_load_all((tmp_path / "m.yaml").read_text()))
    _validate(docs)
    assert _pod(docs[1])["nodeSelector"]["nvidia.com/gpu.product"] == "NVIDIA-L4"
