"""Kubernetes manifests that run `aiworkbook check` on GPU nodes with a locked profile mounted from a
ConfigMap: a Job (one pod per node, `--nodes` of them, kept apart by pod anti-affinity; the pod's
exit code is the check's) or a DaemonSet (every matching node, re-checking on an interval and writing
node_exporter's textfile for Prometheus).

What a GPU pod needs (NVIDIA device plugin and GPU Feature Discovery conventions):
- a toleration for the GPU nodes' taint `nvidia.com/gpu` (effect NoSchedule);
- a node selector on `nvidia.com/gpu.product`, the label GFD sets to the GPU's name with spaces as
  dashes ("NVIDIA-A100-SXM4-80GB"); under MIG strategy "single" GFD appends the slice
  ("...-MIG-1g.10gb") and the resource stays `nvidia.com/gpu`; under "mixed" the product is the
  whole GPU's and the resource is the slice's, `nvidia.com/mig-1g.10gb`;
- extended resources in whole numbers, requests equal to limits.
The GPU, its count and the MIG slice come from the environment the profile was locked on.
"""

from __future__ import annotations

import re
from typing import Any

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.profile.model import LockedProfile

KINDS = ("job", "daemonset")
MIG_STRATEGIES = ("mixed", "single")
#: ConfigMap data is limited to 1 MiB in all (the API server's object limit).
CONFIGMAP_LIMIT = 1 << 20
PROFILE_DIR = "/etc/aiworkbook"
PROFILE_KEY = "profile.json"
_MIG = re.compile(r"\bMIG[ -](\d+g\.\d+gb(?:\+me)?)\b", re.IGNORECASE)
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def locked_gpu(profile: LockedProfile) -> tuple[str | None, int, str | None]:
    """(GPU name, GPU count, MIG profile or None) the profile was locked on: the fingerprint's GPU and
    count; a MIG slice where a golden proof ran on one (CUDA names it "NVIDIA A100-SXM4-80GB MIG
    1g.10gb")."""
    fp = profile.node.fingerprint
    mig = None
    for g in profile.proofs:
        env = g.result.get("environment") or {}
        dev = env.get("cuda_device") if isinstance(env, dict) else None
        name = dev.get("name") if isinstance(dev, dict) else None
        m = _MIG.search(name) if isinstance(name, str) else None
        if m:
            mig = m.group(1).lower()
            break
    return fp.gpu, fp.gpu_count, mig


def product_label(gpu: str, mig: str | None = None, strategy: str = "mixed") -> str:
    """GFD's `nvidia.com/gpu.product` value for this GPU (spaces as dashes; "-MIG-<profile>" under the
    single strategy). SpecError when it is no valid label value (then give --product)."""
    value = "-".join(gpu.split())
    if mig and strategy == "single":
        value += f"-MIG-{mig}"
    if len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
        raise SpecError("product", value, Msg("allowed.k8s_label_product"))
    return value


def _name(name: str) -> str:
    if len(name) > 52 or not _DNS1123.fullmatch(name):  # room for "-profile" and the pod suffixes
        raise SpecError("name", name, Msg("allowed.k8s_name"))
    return name


def _namespace(namespace: str | None) -> str | None:
    """A Kubernetes namespace is a DNS-1123 label: <= 63 of a-z, 0-9 and '-', alphanumeric at both ends."""
    if namespace is not None and (len(namespace) > 63 or not _DNS1123.fullmatch(namespace)):
        raise SpecError(
            "namespace", namespace, "a DNS-1123 label of <= 63 characters: lower-case a-z, 0-9 and '-'"
        )
    return namespace


def _check_args(
    kind: str, mig_strategy: str, nodes: int, interval_s: int, image: str, profile_text: str
) -> None:
    """A SpecError naming the field for each argument out of range, before anything is built."""
    if kind not in KINDS:
        raise SpecError("kind", kind, ", ".join(KINDS))
    if mig_strategy not in MIG_STRATEGIES:
        raise SpecError("mig_strategy", mig_strategy, ", ".join(MIG_STRATEGIES))
    for field, v, lo in (("nodes", nodes, 1), ("interval_s", interval_s, 60)):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise SpecError(field, v, Msg("allowed.int_min", low=lo))
    if not image or any(c.isspace() for c in image):
        raise SpecError("image", image, Msg("allowed.k8s_image"))
    if len(profile_text.encode()) > CONFIGMAP_LIMIT - 4096:
        raise SpecError("profile", f"{len(profile_text.encode()):,} B", Msg("allowed.k8s_configmap"))


def _resource(
    profile: LockedProfile, gpus: int | None, product: str | None, mig_strategy: str
) -> tuple[str, int, str]:
    """The extended resource a pod requests, how many, and the node label value it selects."""
    gpu, count, mig = locked_gpu(profile)
    if not gpu and product is None:
        raise SpecError("profile", "locked without a GPU", Msg("allowed.k8s_gpu_profile"))
    if gpus is not None:
        if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
            raise SpecError("gpus", gpus, Msg("allowed.int_min", low=1))
        count = gpus
    if mig and mig_strategy == "mixed":
        resource, count = f"nvidia.com/mig-{mig}", 1
    else:
        resource, count = "nvidia.com/gpu", (1 if mig else max(1, count))
    label = product if product is not None else product_label(gpu or "", mig, mig_strategy)
    if not _LABEL_VALUE.fullmatch(label) or len(label) > 63:
        raise SpecError("product", label, Msg("allowed.k8s_label"))
    return resource, count, label


def _container(
    name: str,
    cm_name: str,
    image: str,
    kind: str,
    resource: str,
    count: int,
    textfile_dir: str | None,
    interval_s: int,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The check container (once, or in a re-check loop for a DaemonSet) and the pod's volumes."""
    check = ["aiworkbook", "check", f"{PROFILE_DIR}/{PROFILE_KEY}"]
    volumes: list[dict[str, Any]] = [{"name": "profile", "configMap": {"name": cm_name}}]
    mounts: list[dict[str, Any]] = [{"name": "profile", "mountPath": PROFILE_DIR, "readOnly": True}]
    if kind == "daemonset" and textfile_dir is None:
        textfile_dir = "/var/lib/node_exporter/textfile_collector"
    if textfile_dir is not None:
        if not textfile_dir.startswith("/") or any(c.isspace() for c in textfile_dir):
            raise SpecError("textfile_dir", textfile_dir, Msg("allowed.host_path"))
        volumes.append({"name": "textfile", "hostPath": {"path": textfile_dir, "type": "DirectoryOrCreate"}})
        mounts.append({"name": "textfile", "mountPath": "/textfile"})
        check += ["--textfile", f"/textfile/aiworkbook_check_{name.replace('-', '_')}.prom"]
    container: dict[str, Any] = {
        "name": "check",
        "image": image,
        "resources": {"requests": {resource: count}, "limits": {resource: count}},
        "volumeMounts": mounts,
    }
    if kind == "daemonset":
        # re-check every interval; the verdict lands in the textfile, so a regression does not
        # restart the pod (the loop goes on); the words are fixed here, the interval is an integer
        container["command"] = [
            "/bin/sh",
            "-c",
            'while true; do "$@"; sleep "$AIWB_INTERVAL_S"; done',
            "check",
            *check,
        ]
        container["env"] = [{"name": "AIWB_INTERVAL_S", "value": str(interval_s)}]
    else:
        container["command"] = check
    return container, volumes


def _workload(
    kind: str, meta: dict[str, Any], labels: dict[str, str], pod: dict[str, Any], nodes: int
) -> dict[str, Any]:
    """A DaemonSet, or a Job with one pod per node (anti-affinity on the hostname)."""
    template = {"metadata": {"labels": labels}, "spec": pod}
    if kind == "daemonset":
        workload = {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": meta,
            "spec": {"selector": {"matchLabels": labels}, "template": template},
        }
    else:
        pod["affinity"] = {  # one check per node
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}
                ]
            }
        }
        workload = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": meta,
            "spec": {
                "completions": nodes,
                "parallelism": nodes,
                "backoffLimit": 0,  # a regression is an answer, not a flake to retry
                "ttlSecondsAfterFinished": 7 * 86400,
                "template": template,
            },
        }
    return workload


def manifests(
    profile: LockedProfile,
    profile_text: str,
    *,
    name: str = "aiworkbook-check",
    image: str,
    kind: str = "job",
    namespace: str | None = None,
    nodes: int = 1,
    gpus: int | None = None,
    product: str | None = None,
    mig_strategy: str = "mixed",
    textfile_dir: str | None = None,
    interval_s: int = 86400,
) -> list[dict[str, Any]]:
    """[ConfigMap, Job] or [ConfigMap, DaemonSet] as plain dicts (JSON/YAML-ready)."""
    name = _name(name)
    namespace = _namespace(namespace)
    _check_args(kind, mig_strategy, nodes, interval_s, image, profile_text)
    resource, count, label = _resource(profile, gpus, product, mig_strategy)
    labels = {"app.kubernetes.io/name": "aiworkbook-check", "app.kubernetes.io/instance": name}
    meta = {"name": name, "labels": labels, **({"namespace": namespace} if namespace else {})}
    cm_name = f"{name}-profile"
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {**meta, "name": cm_name},
        "data": {PROFILE_KEY: profile_text},
    }
    container, volumes = _container(name, cm_name, image, kind, resource, count, textfile_dir, interval_s)
    pod: dict[str, Any] = {
        "restartPolicy": "Always" if kind == "daemonset" else "Never",
        "nodeSelector": {"nvidia.com/gpu.product": label},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [container],
        "volumes": volumes,
    }
    workload = _workload(kind, meta, labels, pod, nodes)
    return [configmap, workload]


def to_yaml(docs: list[dict[str, Any]]) -> str:
    """Documents as multi-document YAML (`kubectl apply -f`), written by PyYAML's safe dumper
    (profile/yaml_out.py): block style, the profile as a literal block."""
    from aiworkbook.profile.yaml_out import dump_all

    return dump_all(docs)
