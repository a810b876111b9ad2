"""Deployment snippets derived from the sizing: vLLM arguments whose --max-num-seqs is the KV
capacity that sizing.capacity estimates, and a Kubernetes resources block (a whole GPU count, or
the smallest MIG slice that holds the workload)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.sizing.placement import placement

if TYPE_CHECKING:
    from aiworkbook.specs.protocol import ModelSpecLike


@dataclass(frozen=True)
class VllmArgs:
    """`vllm serve` arguments for one inference workload on one GPU type."""

    model: str
    tensor_parallel_size: int
    gpu_memory_utilization: float
    max_model_len: int
    max_num_seqs: int
    kv_cache_dtype: str | None = None

    def args(self) -> list[str]:
        """The arguments after the model, as an argv (unquoted: command() quotes them for a shell)."""
        out = [
            f"--tensor-parallel-size={int(self.tensor_parallel_size)}",
            f"--gpu-memory-utilization={float(self.gpu_memory_utilization):g}",
            f"--max-model-len={int(self.max_model_len)}",
            f"--max-num-seqs={int(self.max_num_seqs)}",
        ]
        if self.kv_cache_dtype:
            out.append(f"--kv-cache-dtype={self.kv_cache_dtype}")
        return out

    def command(self) -> str:
        """The shell command, every value quoted (shlex.quote): a model folder named `x$(rm -rf ~)` stays
        one argument, never code."""
        words = [shlex.quote(a) for a in (self.model, *self.args())]
        return " \\\n  ".join([f"vllm serve {words[0]}", *words[1:]])

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "tensor_parallel_size": self.tensor_parallel_size,
            "gpu_memory_utilization": self.gpu_memory_utilization,
            "max_model_len": self.max_model_len,
            "max_num_seqs": self.max_num_seqs,
            "kv_cache_dtype": self.kv_cache_dtype,
        }


def vllm_args(
    spec: ModelSpecLike, w: Any, gpu: Any, *, mig: bool = True, model: str | None = None
) -> VllmArgs:
    """Arguments that match the KV capacity of the placement: --max-num-seqs is
    capacity.max_concurrency at --max-model-len = the workload's context (prompt + new tokens), on the
    GPU or MIG slice that k8s_resources asks for. `model`: what vLLM loads (a Hugging Face repository
    id or a folder; default the preset's repository id, else the spec's name)."""
    from aiworkbook.sizing import capacity

    if w.training:
        raise SpecError("mode", w.mode, Msg("allowed.vllm_infer"))
    pl = placement(spec, w, gpu, mig=mig)
    wv = pl.workload
    seqs = capacity.max_concurrency(spec, wv, pl.gpu, context=wv.context_len)
    if seqs < 1:
        raise SpecError("context", wv.context_len, Msg("allowed.context_fits_once", gpu=pl.gpu.name))
    if model is None:
        from aiworkbook.specs.catalog import hf_repo

        model = hf_repo(spec.name) or spec.name
    return VllmArgs(
        model=model,
        tensor_parallel_size=wv.tp,
        gpu_memory_utilization=wv.gpu_memory_utilization,
        max_model_len=wv.context_len,
        max_num_seqs=seqs,
        kv_cache_dtype="fp8" if wv.kv_dtype == "fp8" else None,
    )


def k8s_resources(spec: ModelSpecLike, w: Any, gpu: Any, *, mig: bool = True) -> dict[str, Any]:
    """A pod's resources block for the placement: `nvidia.com/mig-<profile>: 1` or `nvidia.com/gpu: n`."""
    pl = placement(spec, w, gpu, mig=mig)
    return {"limits": {pl.resource: pl.count}}


def k8s_yaml(resources: dict[str, Any]) -> str:
    """The resources block as YAML (two levels: limits, then resource names), written by PyYAML's safe
    dumper (profile/yaml_out.py): every string reads back as itself, counts are integers."""
    from aiworkbook.profile.yaml_out import dump

    block = {
        str(section): {str(name): _count(name, value) for name, value in items.items()}
        for section, items in resources.items()
    }
    return dump({"resources": block}).rstrip("\n")


def _count(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SpecError(f"resources.{name}", value, "a whole number of devices")
    return value


def snippets(entry: Any, est: dict[str, Any], *, mig: bool = True, answer: Any = None) -> dict[str, Any]:
    """Both snippets for a profile's workload entry and its estimate dict: `vllm` (VllmArgs, inference
    only), `k8s` (resources block) and `on` (the GPU or MIG slice); `note` says why one is missing.
    `answer` (aiworkbook.sizing.answer): deploy what it recommends (its GPUs, at its size), not the
    set-up as given when that does not fit."""
    out: dict[str, Any] = {"workload": entry.name}
    gpu = est.get("gpu")
    if not gpu:
        out["note"] = "no GPU sized for this workload"
        return out
    spec = entry.spec()
    w = entry.to_workload()
    if answer is not None and not answer.fits and answer.option is not None:
        gpu = answer.option.gpu
        w = w.replace(tp=max(1, answer.option.gpus // (w.dp if w.training else 1)))
    try:
        pl = placement(spec, w, gpu, mig=mig)
        out["on"] = pl.gpu.name if pl.count == 1 else f"{pl.count} × {pl.gpu.name}"
        out["k8s"] = {"limits": {pl.resource: pl.count}}
        if not w.training:
            out["vllm"] = vllm_args(spec, w, gpu, mig=mig, model=entry.served_model())
    except SpecError as exc:
        out["note"] = str(exc)
    return out
